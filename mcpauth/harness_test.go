package mcpauth_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/mcpauth"
)

// fakeAS is an authorization server and a protected resource in one test
// server, each answer adjustable, every request counted by path.
type fakeAS struct {
	srv *httptest.Server

	mu       sync.Mutex
	hits     map[string]int
	authz    url.Values // the last authorization request
	token    url.Values // the last token request's form
	tokenHdr string     // its Authorization header
	regBody  map[string]any
	bytesOut int64 // bytes the metadata handlers wrote

	// Adjustments, set before the first request.
	prm          map[string]any // the protected resource metadata; nil: the default
	asm          map[string]any // the authorization server metadata; nil: the default
	asmPath      string         // where asm is served; "" the root oauth-authorization-server
	prmPath      string         // where prm is served; "" the path-based one
	register     func(body map[string]any) (int, any)
	tokenReply   map[string]any // members added to the token answer
	authzReply   func(q url.Values) url.Values
	metadataHook http.HandlerFunc     // when set, serves every metadata URL
	knownClient  func(id string) bool // when set, a token request of another client_id is invalid_client
}

func newFakeAS(t testing.TB) *fakeAS {
	f := &fakeAS{hits: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAS) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

// endpoint is the MCP endpoint the fake protects.
func (f *fakeAS) endpoint() string { return f.srv.URL + "/mcp" }

func (f *fakeAS) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits[r.URL.Path]++
	f.mu.Unlock()
	prmPath, asmPath := f.prmPath, f.asmPath
	if prmPath == "" {
		prmPath = "/.well-known/oauth-protected-resource/mcp"
	}
	if asmPath == "" {
		asmPath = "/.well-known/oauth-authorization-server"
	}
	switch {
	case f.metadataHook != nil && strings.HasPrefix(r.URL.Path, "/.well-known/"):
		f.metadataHook(w, r)
	case r.URL.Path == prmPath:
		doc := f.prm
		if doc == nil {
			doc = map[string]any{"resource": f.endpoint(), "authorization_servers": []string{f.srv.URL}}
		}
		f.json(w, 200, doc)
	case r.URL.Path == asmPath:
		doc := f.asm
		if doc == nil {
			doc = f.defaultASM()
		}
		f.json(w, 200, doc)
	case r.URL.Path == "/authorize":
		f.authorize(w, r)
	case r.URL.Path == "/token":
		f.tokenEndpoint(w, r)
	case r.URL.Path == "/register":
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.regBody = body
		f.mu.Unlock()
		status, reply := 201, any(map[string]any{"client_id": "dyn-client", "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": "none"})
		if f.register != nil {
			status, reply = f.register(body)
		}
		f.json(w, status, reply)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAS) defaultASM() map[string]any {
	u := f.srv.URL
	return map[string]any{
		"issuer": u, "authorization_endpoint": u + "/authorize", "token_endpoint": u + "/token",
		"registration_endpoint": u + "/register", "response_types_supported": []string{"code"},
		"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
	}
}

func (f *fakeAS) json(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	n, _ := w.Write(b)
	f.mu.Lock()
	f.bytesOut += int64(n)
	f.mu.Unlock()
}

// authorize answers at once with a redirect to the callback, as the
// conformance suite's server does.
func (f *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	f.authz = q
	f.mu.Unlock()
	back := url.Values{"code": {"the-code"}, "state": {q.Get("state")}}
	if f.authzReply != nil {
		back = f.authzReply(q)
	}
	to, _ := url.Parse(q.Get("redirect_uri"))
	to.RawQuery = back.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// tokenEndpoint checks PKCE against the last authorization request.
func (f *fakeAS) tokenEndpoint(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	f.mu.Lock()
	f.token, f.tokenHdr = r.PostForm, r.Header.Get("Authorization")
	challenge := f.authz.Get("code_challenge")
	f.mu.Unlock()
	if f.knownClient != nil && !f.knownClient(r.PostForm.Get("client_id")) {
		f.json(w, 401, map[string]any{"error": "invalid_client"})
		return
	}
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if r.PostForm.Get("grant_type") == "authorization_code" && base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
		f.json(w, 400, map[string]any{"error": "invalid_grant"})
		return
	}
	reply := map[string]any{"access_token": "tok-" + r.PostForm.Get("grant_type"), "token_type": "Bearer", "expires_in": 3600, "refresh_token": "refresh-1"}
	for k, v := range f.tokenReply {
		reply[k] = v
	}
	f.json(w, 200, reply)
}

// testConfig is a Config whose guard lets it reach the fakes on 127.0.0.1
// over plain http.
func testConfig() *mcpauth.Config {
	return &mcpauth.Config{Client: testkit.LoopbackClient(fetch.Config{}), PlainHTTP: []string{"127.0.0.1"}}
}

// testFlow is a Flow with the headless opener, dynamic registration in
// memory and no pre-registered client.
func testFlow(t *testing.T, cfg *mcpauth.Config) (*mcpauth.Flow, *mcpauth.MemoryStore) {
	h, err := mcpauth.ListenHeadless(cfg, &testkit.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	store := &mcpauth.MemoryStore{}
	return &mcpauth.Flow{Config: cfg, Registrar: &mcpauth.Registrar{Config: cfg, Store: store}, Opener: h}, store
}

// challenge401 is the fake's 401 challenge.
func (f *fakeAS) challenge401(scope string) *mcpauth.Request {
	v := `Bearer resource_metadata="` + f.srv.URL + `/.well-known/oauth-protected-resource/mcp"`
	if scope != "" {
		v += `, scope="` + scope + `"`
	}
	return &mcpauth.Request{Endpoint: f.endpoint(), Status: 401, WWWAuthenticate: []string{v}}
}
