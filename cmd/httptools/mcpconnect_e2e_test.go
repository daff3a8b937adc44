package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oauthMCP is a remote MCP server behind OAuth, as a SaaS vendor hosts
// one: its protected resource metadata names an authorization server that
// takes dynamic registration and answers with iss (RFC 9207); the server
// takes only the access tokens that server issued for it.
type oauthMCP struct {
	mcp, as          *httptest.Server
	registrations    atomic.Int64
	codes, refreshes atomic.Int64
	mu               sync.Mutex
	valid            map[string]string // access tokens the MCP server takes → their scopes
	scopeOf          map[string]string // state or refresh token → the scopes asked
	needWrite        atomic.Bool       // the MCP server wants tools.write too
	challenges       map[string]string
	asked            url.Values // the last authorization request
	tokenAsked       url.Values // the last token request
	bearersAtAS      atomic.Int64
	calls            atomic.Int64
	issued           int
}

func newOAuthMCP(t *testing.T) *oauthMCP {
	o := &oauthMCP{valid: map[string]string{}, challenges: map[string]string{}, scopeOf: map[string]string{}}
	gs := mcp.NewServer(&mcp.Implementation{Name: "vendor", Version: "1"}, nil)
	gs.AddTool(&mcp.Tool{Name: "sum", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			o.calls.Add(1)
			var in struct{ A, B float64 }
			json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": in.A + in.B}}, nil
		})
	gh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return gs }, nil)
	o.mcp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			writeJSONDoc(w, map[string]any{"resource": o.mcp.URL + "/mcp", "authorization_servers": []string{o.as.URL}, "scopes_supported": []string{"tools.read"}})
			return
		}
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		o.mu.Lock()
		scopes, ok := o.valid[tok]
		o.mu.Unlock()
		if ok && o.needWrite.Load() && !strings.Contains(scopes, "tools.write") {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="tools.read tools.write", resource_metadata="`+o.mcp.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+o.mcp.URL+`/.well-known/oauth-protected-resource/mcp", scope="tools.read"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		gh.ServeHTTP(w, r)
	}))
	t.Cleanup(o.mcp.Close)
	o.as = httptest.NewServer(http.HandlerFunc(o.serveAS))
	t.Cleanup(o.as.Close)
	return o
}

func writeJSONDoc(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (o *oauthMCP) serveAS(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		o.bearersAtAS.Add(1) // an access token sent where it is not for
	}
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeJSONDoc(w, map[string]any{"issuer": o.as.URL, "authorization_endpoint": o.as.URL + "/authorize", "token_endpoint": o.as.URL + "/token",
			"registration_endpoint": o.as.URL + "/register", "response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_post"}, "authorization_response_iss_parameter_supported": true})
	case "/register":
		o.registrations.Add(1)
		var req struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.WriteHeader(http.StatusCreated)
		writeJSONDoc(w, map[string]any{"client_id": "dyn-1", "client_secret": "dyn-secret", "token_endpoint_auth_method": "client_secret_post", "redirect_uris": req.RedirectURIs})
	case "/authorize":
		q := r.URL.Query()
		o.mu.Lock()
		o.asked = q
		o.challenges[q.Get("state")] = q.Get("code_challenge")
		o.scopeOf[q.Get("state")] = q.Get("scope")
		o.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {"code-" + q.Get("state")}, "state": {q.Get("state")}, "iss": {o.as.URL}}
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	case "/token":
		r.ParseForm()
		o.mu.Lock()
		defer o.mu.Unlock()
		o.tokenAsked = r.PostForm
		if r.PostForm.Get("client_id") != "dyn-1" || r.PostForm.Get("client_secret") != "dyn-secret" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		var scopes string
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			state := strings.TrimPrefix(r.PostForm.Get("code"), "code-")
			scopes = o.scopeOf[state]
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if o.challenges[state] == "" || base64.RawURLEncoding.EncodeToString(sum[:]) != o.challenges[state] {
				http.Error(w, `{"error":"invalid_grant"}`, 400)
				return
			}
			o.codes.Add(1)
		case "refresh_token":
			o.refreshes.Add(1)
			scopes = o.scopeOf[r.PostForm.Get("refresh_token")]
		default:
			http.Error(w, `{"error":"unsupported_grant_type"}`, 400)
			return
		}
		o.issued++
		at, rt := fmt.Sprintf("at-%d", o.issued), fmt.Sprintf("rt-%d", o.issued)
		o.valid[at], o.scopeOf[rt] = scopes, scopes
		writeJSONDoc(w, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt,
			"scope": scopes, "aud": o.mcp.URL + "/mcp"})
	default:
		http.NotFound(w, r)
	}
}

// revoke makes the MCP server refuse every token issued so far.
func (o *oauthMCP) revoke() {
	o.mu.Lock()
	o.valid = map[string]string{}
	o.mu.Unlock()
}

// TestRemoteMCPBehindOAuth: a tool of a remote MCP server whose connection
// is a discovered app (mcp: and the server's URL), with nothing in
// apps.json. A person's first call is refused with the way to connect;
// the connect flow serve starts discovers the server's authorization
// server, registers itself there once (dynamically: 1 registration for 2
// people), asks with PKCE S256 and the resource indicator, checks the
// answer's iss, and stores the connection; the call then runs with a
// token the server takes. When the server refuses the token, the
// connection is refreshed once and the call sent again. The token never
// reaches the authorization server's endpoints (0 bearers there). Over
// MCP, a third person's client that takes URL elicitation is handed the
// connect flow's URL at that authorization server and, once connected,
// the call runs (mcpConnect). When the
// server asks for a scope the connection lacks (403 insufficient_scope),
// the call fails once, connection-permission-missing, and the next
// connection asks the scopes held and the new one (a step-up remembered
// by the connection).
func TestRemoteMCPBehindOAuth(t *testing.T) {
	o := newOAuthMCP(t)
	host := strings.TrimPrefix(o.mcp.URL, "http://")
	app := "mcp:" + o.mcp.URL + "/mcp"
	tools := t.TempDir()
	os.WriteFile(filepath.Join(tools, "sum.json"), []byte(`{"id":"vendor.sum","description":"Adds, as the person.","version":"1.0.0","mutating":false,"transport":"mcp",
		"mcpEndpoint":"mcp+http://`+host+`/mcp#sum",
		"input":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}},"output":{"type":"object"},
		"needsSpec":{"connections":{"vendor":{"app":"`+app+`","permissions":["tools.read"],"as":"person"}}},
		"spec":{"kind":"mcp","authorization":{"kind":"connection","connection":"vendor"}}}`), 0o644)
	state := t.TempDir()
	p := startServe(t, e2eEnv, "--tools", tools, "--db", "sqlite:"+filepath.Join(state, "serve.db"), "--addr", "127.0.0.1:0",
		"--allow-cidr", "127.0.0.1/32", "--mcp-plain-http", "127.0.0.1")
	call := func(person string) (int, string) {
		return p.do(t, p.key, "POST", "/v1/tools/vendor.sum/invoke", `{"input":{"a":2,"b":3},"context":{"person":"`+person+`"}}`)
	}
	if st, body := call("u1"); st != 409 || !strings.Contains(body, "connection-unavailable") {
		t.Fatalf("before connecting: %d %s", st, body)
	}
	connect := func(person string) {
		st, body := p.do(t, p.key, "POST", "/v1/connections/"+url.PathEscape(app)+"/authorize", `{"as":"person","person":"`+person+`"}`)
		if st != 200 {
			t.Fatalf("authorize %s: %d %s", person, st, body)
		}
		var a struct{ URL string }
		json.Unmarshal([]byte(body), &a)
		resp, err := http.Get(a.URL) // the person's browser: the authorization server, then serve's callback
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("callback for %s: %d %s", person, resp.StatusCode, page)
		}
	}
	connect("u1")
	o.mu.Lock()
	asked, tokenAsked := o.asked, o.tokenAsked
	o.mu.Unlock()
	if asked.Get("resource") != o.mcp.URL+"/mcp" || asked.Get("code_challenge_method") != "S256" || asked.Get("client_id") != "dyn-1" ||
		asked.Get("scope") != "tools.read" || tokenAsked.Get("resource") != o.mcp.URL+"/mcp" {
		t.Errorf("authorization request %v; token request resource %q", asked, tokenAsked.Get("resource"))
	}
	if st, body := call("u1"); st != 200 || !strings.Contains(body, `"sum":5`) {
		t.Fatalf("connected: %d %s", st, body)
	}
	connect("u2")
	if st, body := call("u2"); st != 200 {
		t.Fatalf("u2 connected: %d %s", st, body)
	}
	// The server stops taking the tokens: one refresh, the call sent again.
	o.revoke()
	if st, body := call("u1"); st != 200 || !strings.Contains(body, `"sum":5`) {
		t.Fatalf("after the server refused the token: %d %s", st, body)
	}
	if o.registrations.Load() != 1 || o.codes.Load() != 2 || o.refreshes.Load() != 1 || o.bearersAtAS.Load() != 0 || o.calls.Load() != 3 {
		t.Errorf("registrations %d (want 1), codes %d (2), refreshes %d (1), bearer tokens at the authorization server %d (0), calls %d (3)",
			o.registrations.Load(), o.codes.Load(), o.refreshes.Load(), o.bearersAtAS.Load(), o.calls.Load())
	}
	// Over MCP, a person without the connection whose client takes URL
	// elicitation is handed the connect flow's URL, at the server's own
	// authorization server; once the person followed it, the call runs.
	mcpConnect(t, p, "u3", o.as.URL)
	// The server asks for more (403 insufficient_scope): the call fails
	// connection-permission-missing, nothing is retried, and connecting
	// again asks the scopes held and the new one.
	o.needWrite.Store(true)
	calls := o.calls.Load()
	if st, body := call("u1"); st != 409 && st != 403 || !strings.Contains(body, "connection-permission-missing") {
		t.Errorf("a step-up: %d %s", st, body)
	}
	connect("u1")
	o.mu.Lock()
	stepped := o.asked.Get("scope")
	o.mu.Unlock()
	if st, body := call("u1"); st != 200 || stepped != "tools.read tools.write" || o.calls.Load() != calls+1 {
		t.Errorf("after connecting with the scope asked: %d %s; asked %q; calls %d (want %d)", st, body, stepped, o.calls.Load(), calls+1)
	}
	// The connection is listed like any other, and the console offers
	// the server among the apps to connect.
	if st, body := p.do(t, p.key, "GET", "/v1/connections", ""); st != 200 || strings.Count(body, app) != 3 {
		t.Errorf("connections: %d %s", st, body)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	resp, err := hc.PostForm(p.url+"/ui/login", url.Values{"key": {p.key}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = hc.Get(p.url + "/ui/connections")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `<option value="`+app+`">`) {
		t.Errorf("the console's connections page does not offer %s", app)
	}
}

// mcpConnect calls vendor.sum over MCP as person, from a client that
// declares URL elicitation: the call is refused with the connect flow's
// URL (at authServer), which the test follows as the person's browser;
// the call then runs.
func mcpConnect(t *testing.T, p *proc, person, authServer string) {
	t.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "elicit", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp",
		HTTPClient: &http.Client{Transport: asPerson{key: p.key, person: person}}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"a": 2, "b": 3}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "vendor.sum", Arguments: args})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("MCP call before connecting: %v, want URLElicitationRequired", err)
	}
	var data struct{ Elicitations []mcp.ElicitParams }
	json.Unmarshal(rpcErr.Data, &data)
	if len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" || !strings.HasPrefix(data.Elicitations[0].URL, authServer) {
		t.Fatalf("elicitations %+v, want one URL at %s", data.Elicitations, authServer)
	}
	resp, err := http.Get(data.Elicitations[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "vendor.sum", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("the MCP call once connected: %+v %v", res, err)
	}
}

// asPerson adds an API key and a person to every request.
type asPerson struct{ key, person string }

func (a asPerson) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.key)
	r.Header.Set("X-Person-Id", a.person)
	return http.DefaultTransport.RoundTrip(r)
}

// TestImportMCPBehindOAuth: import mcp of a server behind OAuth is
// authorized as call does (discovered, registered once, the authorization
// URL followed headlessly), and writes manifests that send a connection of
// the server's own OAuth (app mcp:URL) with the scopes granted; serve then
// connects a person to it and the imported tool runs.
func TestImportMCPBehindOAuth(t *testing.T) {
	o := newOAuthMCP(t)
	host := strings.TrimPrefix(o.mcp.URL, "http://")
	dir := t.TempDir()
	_, stderr, rc := runCLI(t, append([]string{"import", "mcp", "mcp+http://" + host + "/mcp", "--prefix", "vendor", "--out", dir}, local...)...)
	ms := readManifests(t, dir)
	if rc != 0 || len(ms) != 1 || o.registrations.Load() != 1 || o.codes.Load() != 1 {
		t.Fatalf("import: rc %d, %d manifests, %d registrations, %d codes\n%s", rc, len(ms), o.registrations.Load(), o.codes.Load(), stderr)
	}
	app := "mcp:" + o.mcp.URL + "/mcp"
	need, _ := json.Marshal(ms["vendor.sum"]["needsSpec"])
	if string(need) != `{"connections":{"server":{"app":"`+app+`","as":"person","permissions":["tools.read"]}}}` {
		t.Errorf("needsSpec %s", need)
	}
	state := t.TempDir()
	p := startServe(t, e2eEnv, "--tools", dir, "--db", "sqlite:"+filepath.Join(state, "serve.db"), "--addr", "127.0.0.1:0",
		"--allow-cidr", "127.0.0.1/32", "--mcp-plain-http", "127.0.0.1")
	st, body := p.do(t, p.key, "POST", "/v1/connections/"+url.PathEscape(app)+"/authorize", `{"as":"person","person":"u1"}`)
	var a struct{ URL string }
	if json.Unmarshal([]byte(body), &a); st != 200 || a.URL == "" {
		t.Fatalf("authorize: %d %s", st, body)
	}
	resp, err := http.Get(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st, body := p.do(t, p.key, "POST", "/v1/tools/vendor.sum/invoke", `{"input":{"a":1,"b":2},"context":{"person":"u1"}}`); st != 200 || !strings.Contains(body, `"sum":3`) {
		t.Errorf("the imported tool through serve: %d %s", st, body)
	}
}
