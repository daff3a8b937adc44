package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callOAuthServer is an MCP server behind OAuth and its authorization server in
// one loopback test server, every request counted by path.
type callOAuthServer struct {
	srv       *httptest.Server
	mu        sync.Mutex
	hits      map[string]int
	challenge string     // the last code_challenge
	tokenAuth string     // the last token request's Authorization
	tokenForm url.Values // and form
}

func newCallOAuthServer(t *testing.T) *callOAuthServer {
	o := &callOAuthServer{hits: map[string]int{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "behind-oauth", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"ok": true}, Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.hits[r.URL.Path]++
		o.mu.Unlock()
		base := o.srv.URL
		doc := func(v any) { w.Header().Set("Content-Type", "application/json"); json.NewEncoder(w).Encode(v) }
		switch r.URL.Path {
		case "/mcp":
			if r.Header.Get("Authorization") != "Bearer the-token" {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp", scope="echo"`)
				http.Error(w, "authorize first", http.StatusUnauthorized)
				return
			}
			mcpHandler.ServeHTTP(w, r)
		case "/.well-known/oauth-protected-resource/mcp":
			doc(map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
		case "/.well-known/oauth-authorization-server":
			doc(map[string]any{"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
				"registration_endpoint": base + "/register", "code_challenge_methods_supported": []string{"S256"},
				"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "none"}})
		case "/register":
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			w.WriteHeader(http.StatusCreated)
			doc(map[string]any{"client_id": "dyn", "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": "none"})
		case "/authorize":
			q := r.URL.Query()
			o.mu.Lock()
			o.challenge = q.Get("code_challenge")
			o.mu.Unlock()
			http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {"c"}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
		case "/token":
			r.ParseForm()
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			o.mu.Lock()
			o.tokenAuth, o.tokenForm = r.Header.Get("Authorization"), r.PostForm
			ok := base64.RawURLEncoding.EncodeToString(sum[:]) == o.challenge
			o.mu.Unlock()
			if !ok {
				w.WriteHeader(http.StatusBadRequest)
				doc(map[string]any{"error": "invalid_grant"})
				return
			}
			doc(map[string]any{"access_token": "the-token", "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *callOAuthServer) count(path string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hits[path]
}

// manifest writes the echo tool's manifest at the server.
func (o *callOAuthServer) manifest(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "echo.json")
	m := fmt.Sprintf(`{"id":"behind.echo","description":"Echoes.","version":"1.0.0","mutating":false,"transport":"mcp",
		"mcpEndpoint":"mcp+http://%s/mcp#echo","input":{"type":"object"},"output":{}}`, strings.TrimPrefix(o.srv.URL, "http://"))
	if err := os.WriteFile(f, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCallAuthorizesARemoteMCPServer: httptools call on a tool whose server
// answers 401 discovers, registers, authorizes and calls: 1 registration,
// 1 authorization request, 1 token request, and the output.
func TestCallAuthorizesARemoteMCPServer(t *testing.T) {
	o := newCallOAuthServer(t)
	out, errOut, code := runCLI(t, "call", o.manifest(t), "--mcp-plain-http", "127.0.0.1", "--allow-cidr", "127.0.0.0/8")
	if code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if r, a, k := o.count("/register"), o.count("/authorize"), o.count("/token"); r != 1 || a != 1 || k != 1 {
		t.Fatalf("registrations %d, authorization requests %d, token requests %d; want 1 each", r, a, k)
	}
	if o.tokenForm.Get("resource") != o.srv.URL+"/mcp" {
		t.Fatalf("token request %v lacks the resource", o.tokenForm)
	}
}

// TestCallUsesTheAppsPreRegisteredClient: an app of --apps whose tokenURL
// is the server's is the client: registrations 0, its secret sent by Basic.
func TestCallUsesTheAppsPreRegisteredClient(t *testing.T) {
	o := newCallOAuthServer(t)
	apps := filepath.Join(t.TempDir(), "apps.json")
	os.WriteFile(apps, []byte(fmt.Sprintf(`{"apps":{"vendor":{"authURL":"%[1]s/authorize","tokenURL":"%[1]s/token","clientID":"app-client","clientSecretEnv":"HTTPTOOLS_TEST_APP_SECRET","authStyle":"header","permissions":{"all":["echo"]}}}}`, o.srv.URL)), 0o644)
	t.Setenv("HTTPTOOLS_TEST_APP_SECRET", "app-secret")
	out, errOut, code := runCLI(t, "call", o.manifest(t), "--apps", apps, "--mcp-plain-http", "127.0.0.1", "--allow-cidr", "127.0.0.0/8")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("app-client:app-secret"))
	if n := o.count("/register"); n != 0 || o.tokenAuth != want {
		t.Fatalf("registrations %d (want 0), token request Authorization %q (want the app's Basic)", n, o.tokenAuth)
	}
}
