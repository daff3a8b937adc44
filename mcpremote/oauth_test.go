package mcpremote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/mcpauth"
	"github.com/httptools/httptools/mcpremote"
	"github.com/httptools/httptools/synth"
)

// stubAuthorizer hands out tok-1, tok-2… and records what it was asked.
type stubAuthorizer struct {
	mu        sync.Mutex
	statuses  []int
	held      string
	deadlines int // Authorize calls whose context had a deadline
}

func (a *stubAuthorizer) Token(context.Context, *mcpauth.Request) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held, nil
}

func (a *stubAuthorizer) Authorize(ctx context.Context, r *mcpauth.Request) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := ctx.Deadline(); ok {
		a.deadlines++
	}
	a.statuses = append(a.statuses, r.Status)
	a.held = fmt.Sprintf("tok-%d", len(a.statuses))
	return a.held, nil
}

func (a *stubAuthorizer) asked() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.statuses...)
}

// rpcMethod reads the JSON-RPC method of a request and puts the body back.
func rpcMethod(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	var m struct{ Method string }
	json.Unmarshal(b, &m)
	return m.Method
}

// oauthEnv is a synthesizer whose Authorizer is a; the server of r asks
// for OAuth as gate says (nil: it lets the request through).
func oauthEnv(t *testing.T, r *remote, a mcpauth.Authorizer, gate func(w http.ResponseWriter, method, auth string) bool) *synth.Tool {
	return oauthTool(t, r, a, gate, "")
}

// oauthTool is oauthEnv's tool with extra manifest members.
func oauthTool(t *testing.T, r *remote, a mcpauth.Authorizer, gate func(w http.ResponseWriter, method, auth string) bool, extra string) *synth.Tool {
	syn := mcpremote.NewSynthesizer(mcpremote.Config{Client: testkit.LoopbackClient(fetch.Config{}), PlainHTTP: []string{"127.0.0.1"}, Authorizer: a})
	t.Cleanup(func() { syn.Close() })
	reg := &synth.Registry{}
	reg.MustRegister(synth.KindMCP, syn)
	r.before = func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodPost {
			return false
		}
		return gate(w, rpcMethod(req), req.Header.Get("Authorization"))
	}
	tool, err := (&synth.Loader{Registry: reg}).Load(manifest("acme.echo", r.endpoint("mcp+http", "echo"), `,"mutating":false`+extra))
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

const prm = `resource_metadata="https://as.example/.well-known/oauth-protected-resource/mcp"`

// TestRemoteOAuthAuthorizesThenStepsUpOnce: a 401 is answered by one
// authorization, a 403 insufficient_scope by one step-up, and the call then
// goes through: 2 authorizations, 1 call reaching the tool.
func TestRemoteOAuthAuthorizesThenStepsUpOnce(t *testing.T) {
	r := startRemote(t, "http")
	a := &stubAuthorizer{}
	tool := oauthEnv(t, r, a, func(w http.ResponseWriter, method, auth string) bool {
		switch {
		case auth == "":
			w.Header().Set("WWW-Authenticate", `Bearer scope="read", `+prm)
			http.Error(w, "no token", http.StatusUnauthorized)
		case method == "tools/call" && auth != "Bearer tok-2":
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="read write", `+prm)
			http.Error(w, "more scopes", http.StatusForbidden)
		default:
			return false
		}
		return true
	})
	res, ferr := call(t, tool, `{"text":"hi"}`)
	if ferr != nil || string(res.Output) != `{"echo":"hi"}` {
		t.Fatalf("%v %v", res, ferr)
	}
	if got := a.asked(); len(got) != 2 || got[0] != 401 || got[1] != 403 {
		t.Fatalf("authorizations asked for statuses %v, want [401 403]", got)
	}
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("%d calls reached the tool, want 1", n)
	}
	// The next call uses the held token: no authorization.
	if _, ferr := call(t, tool, `{"text":"again"}`); ferr != nil {
		t.Fatal(ferr)
	}
	if got := a.asked(); len(got) != 2 {
		t.Fatalf("%d authorizations after a second call, want 2", len(got))
	}
}

// TestRemoteOAuthStepUpLimit: a server that always wants more scopes gets
// one authorization and one step-up per call, then the call fails.
func TestRemoteOAuthStepUpLimit(t *testing.T) {
	r := startRemote(t, "http")
	a := &stubAuthorizer{}
	tool := oauthEnv(t, r, a, func(w http.ResponseWriter, method, auth string) bool {
		if method == "initialize" || strings.HasPrefix(method, "notifications/") {
			return false
		}
		if auth == "" {
			w.Header().Set("WWW-Authenticate", `Bearer scope="admin", `+prm)
			http.Error(w, "no token", http.StatusUnauthorized)
			return true
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="admin", `+prm)
		http.Error(w, "never enough", http.StatusForbidden)
		return true
	})
	_, ferr := call(t, tool, `{"text":"hi"}`)
	if ferr == nil || ferr.Reason != mcpremote.ReasonRemoteUnauthorized || !strings.Contains(ferr.Message, "after a step-up") {
		t.Fatalf("got %v, want remote-unauthorized after a step-up", ferr)
	}
	if got := a.asked(); len(got) != 2 {
		t.Fatalf("%d authorizations in one call (%v), want 2: one for the 401, one step-up", len(got), got)
	}
	if n := r.calls.Load(); n != 0 {
		t.Fatalf("%d calls reached the tool, want 0", n)
	}
}

// TestRemoteOAuthTokenStaysOnItsHost: the server redirects the call to
// another host once it has the token; Authorization headers that reach the
// other host: 0.
func TestRemoteOAuthTokenStaysOnItsHost(t *testing.T) {
	var leaked, seen atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		http.Error(w, "elsewhere", http.StatusNotFound)
	}))
	defer other.Close()
	r := startRemote(t, "http")
	a := &stubAuthorizer{}
	tool := oauthEnv(t, r, a, func(w http.ResponseWriter, method, auth string) bool {
		switch {
		case auth == "":
			w.Header().Set("WWW-Authenticate", `Bearer `+prm)
			http.Error(w, "no token", http.StatusUnauthorized)
		case method == "tools/call":
			w.Header().Set("Location", strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/mcp")
			w.WriteHeader(http.StatusTemporaryRedirect)
		default:
			return false
		}
		return true
	})
	if _, ferr := call(t, tool, `{"text":"hi"}`); ferr == nil {
		t.Fatal("a call redirected elsewhere succeeded")
	}
	if n := leaked.Load(); n != 0 {
		t.Fatalf("tokens sent to another host: %d (of %d requests there), want 0", n, seen.Load())
	}
}

// TestRemoteOAuthAuthorizationIsNotTheCallsTime: the Authorizer is asked
// outside the tool's timeout (a person may be at the authorization page),
// whose clock starts again for the call: Authorize calls with a deadline
// from the tool: 0, and the call then succeeds.
func TestRemoteOAuthAuthorizationIsNotTheCallsTime(t *testing.T) {
	r := startRemote(t, "http")
	a := &stubAuthorizer{}
	tool := oauthTool(t, r, a, func(w http.ResponseWriter, method, auth string) bool {
		if auth == "" {
			w.Header().Set("WWW-Authenticate", `Bearer `+prm)
			http.Error(w, "no token", http.StatusUnauthorized)
			return true
		}
		return false
	}, `,"spec":{"kind":"mcp","timeoutMs":5000}`)
	if _, ferr := call(t, tool, `{"text":"hi"}`); ferr != nil {
		t.Fatal(ferr)
	}
	if got := a.asked(); len(got) != 1 || a.deadlines != 0 {
		t.Fatalf("%d authorizations, %d of them under the tool's deadline; want 1 and 0", len(got), a.deadlines)
	}
}
