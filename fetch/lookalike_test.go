package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"testing"

	"github.com/httptools/httptools/fetch"
)

// TestLookAlikeHostsAreRefused: with an allowlist of api.test, and with no
// allowlist at all, a redirect to a look-alike of the allowed host
// (full-width letters, a full-width, ideographic or half-width full stop, a
// soft hyphen, a zero-width space or joiner) is refused (and a homograph
// by the allowlist) before any look-up
// or dial: the first host's 1 request, 0 look-ups of any other name, 0
// dials but the first. A real international name in the allowlist in
// punycode is reached as that one name (1 look-up of its punycode, 1 dial).
func TestLookAlikeHostsAreRefused(t *testing.T) {
	lookalikes := []string{
		"ａｐｉ.test", "api．test", "api。test", "api｡test", "a\u00adpi.test", "a\u200bpi.test", "a\u200dpi.test", "API.test\u200b",
	}
	for _, restricted := range []bool{true, false} {
		for _, host := range lookalikes {
			t.Run(fmt.Sprintf("%s/restricted=%v", host, restricted), func(t *testing.T) {
				target := newCounter(t, status(200))
				api := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Location", (&url.URL{Scheme: "http", Host: fmt.Sprintf("%s:%d", host, target.port()), Path: "/x"}).String())
					w.WriteHeader(http.StatusFound)
				})
				h := newHarness(t, fetch.Config{})
				h.name("api.test", []netip.Addr{publicA})
				h.route(publicA, api.port(), api.Server)
				h.route(publicB, target.port(), target.Server)
				_, err := h.client.Do(context.Background(), &fetch.Request{Method: "GET", URL: fmt.Sprintf("http://api.test:%d/", api.port()),
					Header: http.Header{}, Restricted: restricted, Allowlist: []string{"api.test"}, SuccessMin: 200, SuccessMax: 299})
				var de *fetch.DeniedError
				if !errors.As(err, &de) {
					t.Fatalf("got %v; want a refusal", err)
				}
				if n, _ := api.counts(); n != 1 {
					t.Errorf("api.test got %d requests; want 1", n)
				}
				if n, _ := target.counts(); n != 0 {
					t.Errorf("the look-alike got %d requests", n)
				}
				if d := h.dialed(); len(d) != 1 {
					t.Errorf("dials %v; want the first only", d)
				}
				h.mu.Lock()
				for name, n := range h.lookups {
					if name != "api.test" && n > 0 {
						t.Errorf("%d look-ups of %q", n, name)
					}
				}
				h.mu.Unlock()
			})
		}
	}
	t.Run("a homograph", func(t *testing.T) {
		// Cyrillic "а": a real name of its own (xn--pi-6kc.test), which
		// the allowlist refuses before any look-up.
		h := newHarness(t, fetch.Config{})
		_, err := h.client.Do(context.Background(), &fetch.Request{Method: "GET", URL: "http://аpi.test/", Header: http.Header{}, Restricted: true, Allowlist: []string{"api.test"}})
		var de *fetch.DeniedError
		if !errors.As(err, &de) || len(h.dialed()) != 0 || h.lookupsOf("xn--pi-6kc.test") != 0 {
			t.Errorf("got %v after %d dials", err, len(h.dialed()))
		}
	})
	t.Run("a real international name", func(t *testing.T) {
		target := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Host != "xn--bcher-kva.test:"+portOf(r) {
				w.WriteHeader(400)
			}
		})
		h := newHarness(t, fetch.Config{})
		h.name("xn--bcher-kva.test", []netip.Addr{publicB})
		h.route(publicB, target.port(), target.Server)
		resp, err := h.client.Do(context.Background(), &fetch.Request{Method: "GET", URL: fmt.Sprintf("http://bücher.test:%d/", target.port()),
			Header: http.Header{}, Restricted: true, Allowlist: []string{"xn--bcher-kva.test"}, SuccessMin: 200, SuccessMax: 299})
		if err != nil || resp.Status != 200 {
			t.Fatalf("got %v %v", resp, err)
		}
		if n := h.lookupsOf("xn--bcher-kva.test"); n != 1 || len(h.dialed()) != 1 {
			t.Errorf("%d look-ups of the punycode name, %d dials; want 1 and 1", n, len(h.dialed()))
		}
	})
}

func portOf(r *http.Request) string {
	_, p, _ := netSplit(r.Host)
	return p
}
