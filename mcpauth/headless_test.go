package mcpauth_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/mcpauth"
)

// TestHeadlessLeavesALoginPageToThePerson: an authorization URL that shows
// a page instead of redirecting is printed once; the person's browser
// then brings the answer to the callback, and the flow completes.
func TestHeadlessLeavesALoginPageToThePerson(t *testing.T) {
	f := newFakeAS(t)
	cfg := testConfig()
	prompt := &testkit.Buffer{}
	h, err := mcpauth.ListenHeadless(cfg, prompt)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// The authorization endpoint answers with a login page.
	login := newFakeAS(t)
	f.asm = f.defaultASM()
	f.asm["authorization_endpoint"] = login.srv.URL + "/login"
	flow := &mcpauth.Flow{Config: cfg, Registrar: &mcpauth.Registrar{Config: cfg, Store: &mcpauth.MemoryStore{}}, Opener: h}
	done := make(chan error, 1)
	go func() {
		_, err := flow.Authorize(context.Background(), f.challenge401(""))
		done <- err
	}()
	printed := regexp.MustCompile(`authorize httptools, then come back: (\S+)`)
	testkit.WaitFor(t, "the authorization URL printed", func() bool { return printed.MatchString(prompt.String()) })
	u, err := url.Parse(printed.FindStringSubmatch(prompt.String())[1])
	if err != nil {
		t.Fatal(err)
	}
	// The person logs in; the server sends their browser to the callback.
	q := u.Query()
	f.mu.Lock()
	f.authz = q // the fake's token endpoint checks PKCE against it
	f.mu.Unlock()
	back := url.Values{"code": {"c"}, "state": {q.Get("state")}}
	resp, err := http.Get(q.Get("redirect_uri") + "?" + back.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(prompt.String(), "Open this URL"); n != 1 {
		t.Fatalf("the URL was printed %d times, want 1", n)
	}
	if n := login.count("/login"); n != 1 {
		t.Fatalf("the login page was asked %d times, want 1", n)
	}
	if n := f.count("/token"); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}
}

// TestFlowRefreshesAnExpiredToken: an expired held token is refreshed (one
// refresh_token grant, no new authorization); a 401 with a refresh token
// refreshes before authorizing again.
func TestFlowRefreshesAnExpiredToken(t *testing.T) {
	f := newFakeAS(t)
	f.tokenReply = map[string]any{"expires_in": 1} // within x/oauth2's 10 s margin: expired at once
	flow, _ := testFlow(t, testConfig())
	ctx := context.Background()
	if _, err := flow.Authorize(ctx, f.challenge401("")); err != nil {
		t.Fatal(err)
	}
	tok, err := flow.Token(ctx, &mcpauth.Request{Endpoint: f.endpoint()})
	if err != nil || tok != "tok-refresh_token" {
		t.Fatalf("token %q, %v; want the refreshed one", tok, err)
	}
	if got := f.token; got.Get("grant_type") != "refresh_token" || got.Get("resource") != f.endpoint() || got.Get("client_id") != "dyn-client" {
		t.Fatalf("the refresh request %v lacks the resource or the client", got)
	}
	if _, err := flow.Authorize(ctx, f.challenge401("")); err != nil {
		t.Fatal(err)
	}
	if a, k := f.count("/authorize"), f.count("/token"); a != 1 || k != 3 {
		t.Fatalf("%d authorization requests (want 1), %d token requests (want 3: the code, two refreshes)", a, k)
	}
}
