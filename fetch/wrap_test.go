package fetch_test

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"testing"

	"github.com/httptools/httptools/fetch"
)

// recorder is a WrapTransport that sees every request handed to it and may
// change it first.
type recorder struct {
	mu     sync.Mutex
	seen   []string // method URL of each request
	errs   int
	change func(*http.Request)
}

func (rec *recorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if rec.change != nil {
			r = r.Clone(r.Context())
			rec.change(r)
		}
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Method+" "+r.URL.String())
		rec.mu.Unlock()
		resp, err := next.RoundTrip(r)
		if err != nil {
			rec.mu.Lock()
			rec.errs++
			rec.mu.Unlock()
		}
		return resp, err
	})
}

func (rec *recorder) count() (seen, errs int) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.seen), rec.errs
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestWrapTransportSeesEveryAttempt: retries and redirect hops each pass
// through the wrapper, and what it adds reaches the upstream.
func TestWrapTransportSeesEveryAttempt(t *testing.T) {
	var n int
	var mu sync.Mutex
	up := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		switch {
		case r.URL.Path == "/hop":
			http.Redirect(w, r, "/end", http.StatusFound)
		case r.URL.Path == "/end":
			w.Write([]byte(`{}`))
		case k < 3: // /flaky: 503 twice, then 200
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.Write([]byte(`{}`))
		}
	})
	rec := &recorder{change: func(r *http.Request) {
		r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	}}
	h := newHarness(t, fetch.Config{WrapTransport: rec.wrap})
	h.name("api.example.com", []netip.Addr{public})
	h.route(public, 80, up.Server)

	resp, err := h.get(context.Background(), "http://api.example.com/flaky")
	if err != nil || resp.Status != 200 || resp.Attempts != 3 {
		t.Fatalf("flaky: %v %+v", err, resp)
	}
	if seen, _ := rec.count(); seen != 3 {
		t.Errorf("the wrapper saw %d requests for 3 attempts", seen)
	}
	if _, err := h.get(context.Background(), "http://api.example.com/hop"); err != nil {
		t.Fatal(err)
	}
	if seen, _ := rec.count(); seen != 5 {
		t.Errorf("the wrapper saw %d requests, want 5 (3 attempts + 2 hops): %v", seen, rec.seen)
	}
	requests, _ := up.counts()
	if requests != 5 {
		t.Errorf("upstream got %d requests", requests)
	}
	for i, r := range up.seen {
		if r.Header.Get("Traceparent") == "" {
			t.Errorf("request %d reached the upstream without the wrapper's header", i)
		}
	}
}

// TestWrapTransportCannotEscapeTheGuard: a wrapper that points a request
// at a refused address or at a host outside the allowlist is refused
// underneath it, without a connection.
func TestWrapTransportCannotEscapeTheGuard(t *testing.T) {
	up := newCounter(t, status(200))
	for _, target := range []string{"169.254.169.254", "10.0.0.7:8080", "127.0.0.1:" + strconv.Itoa(up.port()), "[::1]:80", "metadata.internal"} {
		t.Run(target, func(t *testing.T) {
			rec := &recorder{change: func(r *http.Request) { r.URL.Host = target; r.Host = target }}
			h := newHarness(t, fetch.Config{WrapTransport: rec.wrap})
			h.name("api.example.com", []netip.Addr{public})
			h.name("metadata.internal", []netip.Addr{netip.MustParseAddr("169.254.169.254")})
			h.route(public, 80, up.Server)
			_, err := h.get(context.Background(), "http://api.example.com/x")
			var de *fetch.DeniedError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want a *fetch.DeniedError", err)
			}
			if d := h.dialed(); len(d) != 0 {
				t.Errorf("dialled %v", d)
			}
			if seen, errs := rec.count(); seen != 1 || errs != 1 {
				t.Errorf("wrapper saw %d requests, %d errors; want 1 refused attempt (no retry of a refusal)", seen, errs)
			}
		})
	}
	if requests, conns := up.counts(); requests != 0 || conns != 0 {
		t.Errorf("upstream got %d requests on %d connections", requests, conns)
	}

	// The allowlist holds under the wrapper too.
	rec := &recorder{change: func(r *http.Request) { r.URL.Host = "evil.example.net"; r.Host = "evil.example.net" }}
	h := newHarness(t, fetch.Config{WrapTransport: rec.wrap})
	h.name("api.example.com", []netip.Addr{public})
	h.name("evil.example.net", []netip.Addr{public})
	h.route(public, 80, up.Server)
	_, err := h.client.Do(context.Background(), &fetch.Request{Method: "GET", URL: "http://api.example.com/x", Header: http.Header{},
		Allowlist: []string{"api.example.com"}, Restricted: true, SuccessMin: 200, SuccessMax: 299})
	var de *fetch.DeniedError
	if !errors.As(err, &de) || de.Host != "evil.example.net" {
		t.Fatalf("got %v, want the allowlist to refuse evil.example.net", err)
	}
	if d := h.dialed(); len(d) != 0 {
		t.Errorf("dialled %v", d)
	}
	if requests, _ := up.counts(); requests != 0 {
		t.Errorf("upstream got %d requests", requests)
	}
}
