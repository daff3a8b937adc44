package fetch_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
)

// TestSwitchingProtocolsIsRefused: an upstream (or a redirect hop) that
// answers 101 and then floods the connection, or holds it silent, is
// refused at once: one request, no retry, the connection closed by the
// client, and neither the call nor the bytes outlive the deadline. Before
// the fix the 101's body (the raw connection, Content-Length 0) was read
// with zero-length reads, appended for ever: memory without bound and a
// core busy until the upstream closed.
func TestSwitchingProtocolsIsRefused(t *testing.T) {
	const switching = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
	heads := map[string]string{
		"101":                 switching,
		"101 with a length":   "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nContent-Length: 5\r\n\r\n",
		"103 then 101":        "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + switching,
		"101 without upgrade": "HTTP/1.1 101 Switching Protocols\r\n\r\n",
	}
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	for name, head := range heads {
		for _, flood := range []bool{true, false} {
			for _, method := range []string{"GET", "POST"} {
				t.Run(name+"/"+method+map[bool]string{true: "/flood", false: "/silent"}[flood], func(t *testing.T) {
					up := testkit.NewHostileUpstream(t, head, flood, 20*time.Second)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					var before runtime.MemStats
					runtime.ReadMemStats(&before)
					resp, err := h.client.Do(ctx, &fetch.Request{Method: method, URL: up.URL, Header: http.Header{}, Body: []byte(`{}`), SuccessMin: 200, SuccessMax: 299})
					var after runtime.MemStats
					runtime.ReadMemStats(&after)
					var pe *fetch.ProtocolError
					if !errors.As(err, &pe) || pe.Status != 101 {
						t.Fatalf("got %v, %v; want a *ProtocolError for 101", resp, err)
					}
					if ctx.Err() != nil {
						t.Fatalf("the call ran to its deadline")
					}
					if n := up.Requests.Load(); n != 1 {
						t.Errorf("%d requests; want 1 (never retried)", n)
					}
					if resp.Attempts != 1 {
						t.Errorf("attempts %d; want 1", resp.Attempts)
					}
					testkit.WaitFor(t, "the client to hang up", func() bool { return up.HungUp.Load() == 1 })
					if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
						t.Errorf("the call allocated %d bytes; want under 4 MiB", alloc)
					}
					t.Logf("requests %d, bytes the upstream got out before the hang-up %d", up.Requests.Load(), up.Sent.Load())
				})
			}
		}
	}
}

// TestRedirectToSwitchingProtocols: an allowed redirect hop that answers
// 101 is refused like a first answer.
func TestRedirectToSwitchingProtocols(t *testing.T) {
	up := testkit.NewHostileUpstream(t, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n", true, 20*time.Second)
	first := newCounter(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, up.URL, http.StatusFound) })
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := h.get(ctx, first.URL)
	var pe *fetch.ProtocolError
	if !errors.As(err, &pe) || ctx.Err() != nil {
		t.Fatalf("got %v; want a *ProtocolError before the deadline", err)
	}
	if r, _ := first.counts(); r != 1 || up.Requests.Load() != 1 {
		t.Errorf("requests: first %d, hop %d; want 1 and 1", r, up.Requests.Load())
	}
	testkit.WaitFor(t, "the client to hang up", func() bool { return up.HungUp.Load() == 1 })
}

// TestBodyPastItsLength: a reader that hands over more than the
// Content-Length it announced, or nothing at all for ever, fails the read
// instead of looping.
func TestBodyPastItsLength(t *testing.T) {
	for name, rt := range map[string]http.RoundTripper{
		"longer":   fixedAnswer{length: 3, body: func() *endless { return &endless{b: 'x'} }},
		"no bytes": fixedAnswer{length: -1, body: func() *endless { return &endless{} }},
		"zero":     fixedAnswer{length: 0, body: func() *endless { return &endless{b: 'x'} }},
	} {
		t.Run(name, func(t *testing.T) {
			c := fetch.NewClient(fetch.Config{AllowCIDRs: loopback, WrapTransport: func(http.RoundTripper) http.RoundTripper { return rt }})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.Do(ctx, &fetch.Request{Method: "GET", URL: "http://127.0.0.1:1/", SuccessMin: 200, SuccessMax: 299})
			if err == nil || ctx.Err() != nil {
				t.Fatalf("got %v (context %v); want an error before the deadline", err, ctx.Err())
			}
			t.Log(err)
		})
	}
}

// endless reads b for ever, or nothing (0, nil) for ever when b is 0.
type endless struct {
	b     byte
	reads atomic.Int64
}

func (e *endless) Read(p []byte) (int, error) {
	e.reads.Add(1)
	if e.b == 0 {
		return 0, nil
	}
	for i := range p {
		p[i] = e.b
	}
	return len(p), nil
}

func (e *endless) Close() error { return nil }

// fixedAnswer is a transport that answers 200 with an endless body and the
// given Content-Length, as a wrapper could.
type fixedAnswer struct {
	length int64
	body   func() *endless
}

func (f fixedAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: f.length, Body: f.body(), Request: r}, nil
}

// TestWrappedBodyEndsWithTheCall: a body a WrapTransport hands up that
// blocks on every read is closed when the call's deadline passes: Do
// returns (1 of 1), its body closed.
func TestWrappedBodyEndsWithTheCall(t *testing.T) {
	b := &blocking{closed: make(chan struct{})}
	c := fetch.NewClient(fetch.Config{AllowCIDRs: loopback, WrapTransport: func(http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: -1, Body: b, Request: r}, nil
		})
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, &fetch.Request{Method: "GET", URL: "http://127.0.0.1:1/", SuccessMin: 200, SuccessMax: 299})
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("Do returned: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Do outlived its deadline by 10 s: the body was never closed")
	}
}

// blocking is a body whose reads wait until it is closed.
type blocking struct {
	closed chan struct{}
	once   sync.Once
}

func (b *blocking) Read([]byte) (int, error) { <-b.closed; return 0, io.ErrClosedPipe }
func (b *blocking) Close() error             { b.once.Do(func() { close(b.closed) }); return nil }

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
