package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"testing"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/redact"
)

var (
	publicA = netip.MustParseAddr("93.184.216.34")
	publicB = netip.MustParseAddr("93.184.216.35")
)

// TestRedirectToDisallowedHostRefused: a hop to a host outside the allowlist
// is refused before that host is even looked up.
func TestRedirectToDisallowedHostRefused(t *testing.T) {
	evil := newCounter(t, status(200))
	api := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://evil.test:%d/steal", evil.port()), http.StatusFound)
	})
	h := newHarness(t, fetch.Config{})
	h.name("api.x.test", []netip.Addr{publicA})
	h.name("evil.test", []netip.Addr{publicB})
	h.route(publicA, api.port(), api.Server)
	h.route(publicB, evil.port(), evil.Server)
	resp, err := h.client.Do(context.Background(), &fetch.Request{Method: "GET", URL: fmt.Sprintf("http://api.x.test:%d/", api.port()),
		Header: http.Header{}, Restricted: true, Allowlist: []string{"api.x.test"}, SuccessMin: 200, SuccessMax: 299})
	var de *fetch.DeniedError
	if !errors.As(err, &de) || de.Host != "evil.test" {
		t.Fatalf("got %v", err)
	}
	if n, _ := evil.counts(); n != 0 || h.lookupsOf("evil.test") != 0 {
		t.Errorf("evil.test got %d requests and %d look-ups, want 0 and 0", n, h.lookupsOf("evil.test"))
	}
	if resp.Attempts != 1 {
		t.Errorf("%d attempts, want 1", resp.Attempts)
	}
	// The first request itself is checked too.
	_, err = h.client.Do(context.Background(), &fetch.Request{Method: "GET", URL: fmt.Sprintf("http://evil.test:%d/", evil.port()),
		Header: http.Header{}, Restricted: true, Allowlist: []string{"api.x.test"}})
	if !errors.As(err, &de) || len(h.dialed()) != 1 {
		t.Errorf("got %v after %d dials", err, len(h.dialed()))
	}
}

// TestCrossHostRedirectDropsCredentials: Go's client drops Authorization on
// a hop to another host but forwards X-Api-Key; ours drops every header that
// carries a credential, and keeps them on a same-host hop.
func TestCrossHostRedirectDropsCredentials(t *testing.T) {
	other := newCounter(t, status(200))
	api := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			http.Redirect(w, r, "/landed", http.StatusTemporaryRedirect)
			return
		}
		if r.URL.Path == "/cross" {
			http.Redirect(w, r, fmt.Sprintf("http://other.test:%d/landed", other.port()), http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(200)
	})
	h := newHarness(t, fetch.Config{})
	h.name("api.x.test", []netip.Addr{publicA})
	h.name("other.test", []netip.Addr{publicB})
	h.route(publicA, api.port(), api.Server)
	h.route(publicB, other.port(), other.Server)
	secrets := &redact.Set{}
	secrets.Add("tok-123", "key-456")
	req := func(path string) *fetch.Request {
		return &fetch.Request{Method: "POST", URL: fmt.Sprintf("http://api.x.test:%d%s", api.port(), path), Body: []byte(`{"a":1}`),
			Header: http.Header{
				"Authorization":   {"Bearer tok-123"},
				"X-Api-Key":       {"key-456"},
				"X-Signed":        {"v1=key-456-signed"},
				"X-Request-Trace": {"keep-me"},
			},
			AuthHeaders: []string{"X-Api-Key"}, Secrets: secrets, SuccessMin: 200, SuccessMax: 299}
	}
	if _, err := h.client.Do(context.Background(), req("/same")); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	last := api.seen[len(api.seen)-1]
	api.mu.Unlock()
	if last.URL.Path != "/landed" || last.Header.Get("Authorization") == "" || last.Header.Get("X-Api-Key") == "" {
		t.Errorf("same-host hop lost credentials: %v", last.Header)
	}
	if _, err := h.client.Do(context.Background(), req("/cross")); err != nil {
		t.Fatal(err)
	}
	other.mu.Lock()
	got := other.seen[0]
	body := other.bodies[0]
	other.mu.Unlock()
	for _, k := range []string{"Authorization", "X-Api-Key", "X-Signed"} {
		if v := got.Header.Get(k); v != "" {
			t.Errorf("other.test received %s: %q", k, v)
		}
	}
	if got.Header.Get("X-Request-Trace") != "keep-me" || body != `{"a":1}` {
		t.Errorf("other.test: trace %q body %q; want the rest of the request kept", got.Header.Get("X-Request-Trace"), body)
	}
}

// TestElevenRedirectsStop: ten hops are followed, the eleventh is refused,
// and the call is not retried.
func TestElevenRedirectsStop(t *testing.T) {
	loop := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/again", http.StatusFound)
	})
	h := newHarness(t, fetch.Config{AllowCIDRs: testkit.Loopback})
	resp, err := h.get(context.Background(), loop.URL)
	if !errors.Is(err, fetch.ErrTooManyRedirects) {
		t.Fatalf("got %v", err)
	}
	if n, _ := loop.counts(); n != 11 || resp.Attempts != 1 {
		t.Errorf("%d requests over %d attempts; want 11 (the first and 10 hops) in 1", n, resp.Attempts)
	}
}

// TestAllowlistMatching: only true matches pass.
func TestAllowlistMatching(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"api.x.com", "api.x.com", true},
		{"api.x.com", "API.X.COM.", true},
		{"api.x.com", "api.x.com.evil.com", false},
		{"api.x.com", "evilapi.x.com", false},
		{"api.x.com", "x.com", false},
		{"*.x.com", "x.com", false},
		{"*.x.com", "api.x.com", true},
		{"*.x.com", "deep.api.x.com", true},
		{"*.x.com", "evilx.com", false},
		{"x.com", "api.x.com", false},
		{"api.x.com", "\u0430pi.x.com", false}, // Cyrillic а
		{"*.x.com", "\u0430pi.x.com", true},    // a real subdomain, in punycode
		{"bücher.example", "xn--bcher-kva.example", true},
		{"xn--bcher-kva.example", "BÜCHER.example", true},
		{"api.x.com", "", false},
	} {
		if got := fetch.HostAllowed([]string{tc.pattern}, tc.host); got != tc.want {
			t.Errorf("%q vs %q: %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}
