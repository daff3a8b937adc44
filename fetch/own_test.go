package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/httptools/httptools/fetch"
)

// TestOwnRequestsAreGuarded: the client httptools uses for its own requests
// (token, discovery, keys) refuses a redirect hop to an address the guard
// refuses (0 requests there), follows none at all when asked not to (the
// 307 is the answer; 0 requests at its target), refuses a 101, and fails a
// read past MaxOwnBody.
func TestOwnRequestsAreGuarded(t *testing.T) {
	inside := newCounter(t, status(200))
	big := strings.Repeat("x", fetch.MaxOwnBody+1)
	api := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/inside":
			http.Redirect(w, r, inside.URL+"/x", http.StatusTemporaryRedirect)
		case "/big":
			io.WriteString(w, big)
		default:
			io.WriteString(w, "ok")
		}
	})
	h := newHarness(t, fetch.Config{})
	h.name("idp.test", []netip.Addr{publicA})
	h.route(publicA, api.port(), api.Server)
	base := fmt.Sprintf("http://idp.test:%d", api.port())
	follow, noFollow := h.client.HTTPClient(true), h.client.HTTPClient(false)
	ctx := context.Background()
	get := func(c *http.Client, path string) (*http.Response, []byte, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader("client_secret=s"))
		resp, err := c.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	_, _, err := get(follow, "/inside")
	var de *fetch.DeniedError
	if !errors.As(err, &de) {
		t.Errorf("a hop to loopback: %v; want a refusal", err)
	}
	resp, _, err := get(noFollow, "/inside")
	if err != nil || resp.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("no redirects: %v %v; want the 307 itself", resp, err)
	}
	if n, _ := inside.counts(); n != 0 {
		t.Errorf("the refused address got %d requests", n)
	}
	if _, _, err := get(noFollow, "/big"); !errors.Is(err, fetch.ErrTooLarge) {
		t.Errorf("a body past the cap: %v", err)
	}
	if _, b, err := get(noFollow, "/"); err != nil || string(b) != "ok" {
		t.Errorf("a plain answer: %q %v", b, err)
	}
}
