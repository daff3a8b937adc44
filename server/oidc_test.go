package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	toolstest "github.com/httptools/httptools/httptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPAuthorization: with an OIDC issuer configured, /mcp takes its
// access tokens beside API keys: the audience must be the MCP resource, the
// token unexpired and granted the scope; sub is the person, the issuer's
// tenant the tenant. A 401 names the resource metadata, which names the
// issuer.
func TestMCPAuthorization(t *testing.T) {
	r := newRig(t)
	idp := toolstest.NewOIDCProvider()
	defer idp.Close()
	hs := httptest.NewUnstartedServer(nil)
	resource := "http://" + hs.Listener.Addr().String() + "/mcp"
	r.srv.cfg.OIDC = &OIDC{Resource: resource, Issuers: []Issuer{{URL: idp.Issuer(), Tenant: "tenant-a", Scopes: []string{"mcp"}}}}
	hs.Config.Handler = r.srv.Handler()
	hs.Start()
	defer hs.Close()

	// No credential: 401 with the metadata's URL.
	resp, _ := http.Post(hs.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	resp.Body.Close()
	wantMeta := hs.URL + "/.well-known/oauth-protected-resource/mcp"
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+wantMeta+`"`) {
		t.Fatalf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	resp, err := http.Get(wantMeta)
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if md.Resource != resource || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != idp.Issuer() || md.ScopesSupported[0] != "mcp" {
		t.Fatalf("metadata %+v", md)
	}

	good, _ := idp.Token("u1", resource, "mcp")
	cs := mcpSession(t, hs.URL, good)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) == 0 {
		t.Fatalf("list with a token: %v %v", list, err)
	}
	// The person is the token's subject: the mail tool reaches for u1's
	// connection, which does not exist.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.mail", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `person u1`) {
		t.Fatalf("call as the subject: %+v %v", res, err)
	}

	other := toolstest.NewOIDCProvider()
	defer other.Close()
	expired, _ := idp.TokenExpiring("u1", resource, time.Now().Add(-time.Minute), "mcp")
	wrongAud, _ := idp.Token("u1", "https://elsewhere.example/mcp", "mcp")
	noScope, _ := idp.Token("u1", resource, "read")
	foreign, _ := other.Token("u1", resource, "mcp")
	for name, tok := range map[string]string{"expired": expired, "another audience": wrongAud, "no scope": noScope, "another issuer": foreign, "garbage": "x.y.z"} {
		req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s: %d %q %s", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b)
		}
	}
	// API keys keep working beside tokens.
	if rp := r.doMCP(t, r.keyA, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, ""); rp.status != 200 {
		t.Errorf("API key on the rig's server: %d", rp.status)
	}
}
