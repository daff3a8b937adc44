package connections_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
)

// TestTokenRequestsAreGuarded: with serve's token client (fetch's guarded
// client, no redirects), a token endpoint that answers 307 to another
// server gets the exchange refused, and the other server receives 0
// requests and 0 bytes of client_secret, code or code_verifier; a proxy in
// HTTPS_PROXY/HTTP_PROXY receives 0 requests; a token of type mac is
// refused, never stored as a bearer token (0 connections saved).
func TestTokenRequestsAreGuarded(t *testing.T) {
	var elsewhere, elsewhereSecrets, proxied atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		b, _ := io.ReadAll(r.Body)
		for _, s := range []string{"secret-1", "code=", "code_verifier"} {
			if strings.Contains(string(b), s) {
				elsewhereSecrets.Add(1)
			}
		}
		io.WriteString(w, `{"access_token":"stolen","token_type":"Bearer"}`)
	}))
	defer other.Close()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proxied.Add(1); w.WriteHeader(502) }))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	var tokenType string
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/token" && tokenType == "":
			http.Redirect(w, r, other.URL+"/token", http.StatusTemporaryRedirect)
		case r.URL.Path == "/token":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"at-1","refresh_token":"rt-1","token_type":%q,"expires_in":3600}`, tokenType)
		}
	}))
	defer provider.Close()
	apps, err := ParseApps([]byte(fmt.Sprintf(`{"apps":{"p":{"authURL":%q,"tokenURL":%q,"clientID":"client-1","clientSecretEnv":"S","authStyle":"params","permissions":{"x":["x"]}}}}`,
		provider.URL+"/authorize", provider.URL+"/token")), func(string) string { return "secret-1" })
	if err != nil {
		t.Fatal(err)
	}
	client := testkit.LoopbackClient(fetch.Config{})
	s := openSQLite(t, "")
	m := &Manager{Connections: s, States: s, Apps: apps, RedirectURL: "http://127.0.0.1:8080/v1/oauth/callback", HTTPClient: client.HTTPClient(false)}
	ctx := context.Background()
	connect := func() error {
		authURL, err := m.Authorize(ctx, "t1", "p", OwnerCompany)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(authURL)
		_, err = m.Callback(ctx, u.Query().Get("state"), "the-code")
		return err
	}
	if err := connect(); err == nil || !strings.Contains(err.Error(), "answered 307") {
		t.Errorf("a 307 from the token endpoint: %v; want the exchange refused with the status", err)
	}
	if n, k := elsewhere.Load(), elsewhereSecrets.Load(); n != 0 || k != 0 {
		t.Errorf("the redirect's target got %d requests, %d with a secret; want 0 and 0", n, k)
	}
	for _, typ := range []string{"mac", "MAC", "pop"} {
		tokenType = typ
		if err := connect(); err == nil || !strings.Contains(err.Error(), "bearer tokens only") {
			t.Errorf("token type %s: %v; want it refused", typ, err)
		}
	}
	if recs, err := s.Connections(ctx, "t1"); err != nil || len(recs) != 0 {
		t.Errorf("%d connections stored, %v; want 0", len(recs), err)
	}
	tokenType = "bearer"
	if err := connect(); err != nil {
		t.Errorf("a bearer token: %v", err)
	}
	if n := proxied.Load(); n != 0 {
		t.Errorf("the environment's proxy got %d requests; want 0", n)
	}
	// Without --allow-cidr the provider on loopback is refused before any
	// byte is sent.
	m.HTTPClient = fetch.NewClient(fetch.Config{}).HTTPClient(false)
	if err := connect(); err == nil || !strings.Contains(err.Error(), "egress denied") {
		t.Errorf("a token endpoint outside the allowed ranges: %v", err)
	}
}
