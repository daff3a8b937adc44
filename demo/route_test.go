package demo_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/httptools/httptools/demo"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// counting is a Sender that counts what reaches it, then sends it on.
type counting struct {
	n    atomic.Int64
	next httpspec.Sender
}

func (c *counting) Do(ctx context.Context, req *fetch.Request) (*fetch.Response, error) {
	c.n.Add(1)
	return c.next.Do(ctx, req)
}

// TestRouteReachesOnlyTheDemo (issue 45 point 1): a request for the demo
// host is answered by the demo API in memory, never by the guarded
// client; a request for a loopback server still goes to the guarded
// client, which refuses it, and the server sees nothing.
func TestRouteReachesOnlyTheDemo(t *testing.T) {
	var hits atomic.Int64
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer local.Close()
	guarded := &counting{next: fetch.NewClient(fetch.Config{Logger: quiet})} // the default guard: loopback refused
	api := demo.NewAPI()
	s := demo.Route(guarded, api, quiet)
	ctx := context.Background()

	resp, err := s.Do(ctx, &fetch.Request{Method: "GET", URL: "http://" + demo.Host + "/hello?name=Ada", Tool: "demo.hello"})
	if err != nil || resp.Status != 200 || string(resp.Body) == "" {
		t.Fatalf("demo: %v %+v", err, resp)
	}
	resp, err = s.Do(ctx, &fetch.Request{Method: "POST", URL: "http://" + demo.Host + "/notes", Body: []byte(`{"text":"x"}`),
		Header: http.Header{"Content-Type": {"application/json"}}, Tool: "demo.add-note", SuccessMin: 201, SuccessMax: 201})
	if err != nil || resp.Status != 201 {
		t.Fatalf("demo note: %v %+v", err, resp)
	}
	if n := api.Requests(); n != 2 {
		t.Errorf("the demo API answered %d requests, want 2", n)
	}
	if n := guarded.n.Load(); n != 0 {
		t.Errorf("%d demo requests reached the guarded client, want 0", n)
	}

	_, err = s.Do(ctx, &fetch.Request{Method: "GET", URL: local.URL + "/x", Tool: "local.ping"})
	var fe *fetch.DeniedError
	if !errors.As(err, &fe) {
		t.Errorf("loopback through the route: %v, want the guard's refusal", err)
	}
	if guarded.n.Load() != 1 || hits.Load() != 0 || api.Requests() != 2 {
		t.Errorf("guarded client %d requests (want 1), loopback server %d (want 0), demo %d (want 2)", guarded.n.Load(), hits.Load(), api.Requests())
	}
}

// TestIsDemo: only http://demo.httptools.test on port 80 is the demo's.
func TestIsDemo(t *testing.T) {
	for u, want := range map[string]bool{
		"http://demo.httptools.test/hello":        true,
		"http://DEMO.httptools.test:80/notes":     true,
		"https://demo.httptools.test/hello":       false,
		"http://demo.httptools.test:8080/hello":   false,
		"http://demo.httptools.test.evil.com/":    false,
		"http://127.0.0.1/hello":                  false,
		"http://user@demo.httptools.test@x.com/":  false,
		"http://demo.httptools.test%2F@127.0.0.1": false,
	} {
		if got := demo.IsDemo(u); got != want {
			t.Errorf("IsDemo(%q) = %v, want %v", u, got, want)
		}
	}
}
