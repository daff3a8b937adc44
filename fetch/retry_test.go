package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
)

var loopback = testkit.Loopback

// sequence answers with the given statuses in turn, the last one repeating.
func sequence(statuses ...int) http.HandlerFunc {
	var mu sync.Mutex
	n := 0
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		s := statuses[min(n, len(statuses)-1)]
		n++
		mu.Unlock()
		w.WriteHeader(s)
		fmt.Fprint(w, `{"n":1}`)
	}
}

func do(h *harness, ctx context.Context, method, url string, header http.Header, body []byte) (*fetch.Response, error) {
	if header == nil {
		header = http.Header{}
	}
	return h.client.Do(ctx, &fetch.Request{Method: method, URL: url, Header: header, Body: body, SuccessMin: 200, SuccessMax: 299})
}

func TestRetriesByMethodClass(t *testing.T) {
	for _, tc := range []struct {
		name     string
		method   string
		key      bool
		statuses []int
		attempts int
		status   int
	}{
		{"POST 503 is not repeated", "POST", false, []int{503}, 1, 503},
		{"PATCH 502 is not repeated", "PATCH", false, []int{502}, 1, 502},
		{"POST with Idempotency-Key is repeated", "POST", true, []int{503}, 3, 503},
		{"POST 429 is repeated", "POST", false, []int{429, 429, 201}, 3, 201},
		{"GET 503, 503, 200", "GET", false, []int{503, 503, 200}, 3, 200},
		{"PUT 504 three times", "PUT", false, []int{504}, 3, 504},
		{"DELETE 502 then 204", "DELETE", false, []int{502, 204}, 2, 204},
		{"GET 500 is not retried", "GET", false, []int{500}, 1, 500},
		{"GET 404 is not retried", "GET", false, []int{404}, 1, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCounter(t, sequence(tc.statuses...))
			h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
			hdr := http.Header{}
			if tc.key {
				hdr.Set("Idempotency-Key", "key-1")
			}
			resp, err := do(h, context.Background(), tc.method, srv.URL, hdr, []byte(`{"amount":9007199254740993}`))
			if err != nil {
				t.Fatal(err)
			}
			n, _ := srv.counts()
			if resp.Attempts != tc.attempts || n != tc.attempts || resp.Status != tc.status {
				t.Fatalf("attempts %d, upstream saw %d, status %d; want %d, %d, %d", resp.Attempts, n, resp.Status, tc.attempts, tc.attempts, tc.status)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			for i, r := range srv.seen {
				if tc.key && r.Header.Get("Idempotency-Key") != "key-1" {
					t.Errorf("attempt %d: key %q", i+1, r.Header.Get("Idempotency-Key"))
				}
				if tc.method != "GET" && srv.bodies[i] != `{"amount":9007199254740993}` {
					t.Errorf("attempt %d: body %q", i+1, srv.bodies[i])
				}
			}
		})
	}
}

// TestSuccessStatusNeverRetried: a status inside the tool's success range is
// a success even when it would otherwise be retried.
func TestSuccessStatusNeverRetried(t *testing.T) {
	srv := newCounter(t, sequence(503))
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	resp, err := h.client.Do(context.Background(), &fetch.Request{Method: "GET", URL: srv.URL, Header: http.Header{}, SuccessMin: 200, SuccessMax: 599})
	if n, _ := srv.counts(); err != nil || resp.Attempts != 1 || n != 1 {
		t.Fatalf("attempts %d, upstream %d, %v", resp.Attempts, n, err)
	}
}

// TestPOSTRetriedWhenDialFails: a POST whose connection was never made is
// certainly not sent, so it is retried.
func TestPOSTRetriedWhenDialFails(t *testing.T) {
	srv := newCounter(t, status(201))
	h := newHarness(t, fetch.Config{})
	h.name("flaky.test", []netip.Addr{publicA})
	var mu sync.Mutex
	refused := 0
	// Replace the route with a dialer that refuses twice.
	h.client = fetch.NewClient(fetch.Config{Resolver: h, RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond, Logger: quietLogger(),
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			mu.Lock()
			defer mu.Unlock()
			if refused < 2 {
				refused++
				return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
			}
			return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		}})
	resp, err := do(h, context.Background(), "POST", "http://flaky.test/", nil, []byte(`{}`))
	if err != nil || resp.Attempts != 3 || resp.Status != 201 {
		t.Fatalf("attempts %d status %d: %v", resp.Attempts, resp.Status, err)
	}
	if n, _ := srv.counts(); n != 1 {
		t.Errorf("upstream saw %d requests, want 1", n)
	}
	// A name that does not resolve: retried too, then the DNS error.
	resp, err = do(h, context.Background(), "POST", "http://nowhere.test/", nil, []byte(`{}`))
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || resp.Attempts != 3 {
		t.Errorf("attempts %d: %v", resp.Attempts, err)
	}
}

// TestPOSTNotRetriedAfterConnectionReset: once the connection was made, a
// reset may have come after the upstream acted: no retry without a key.
func TestPOSTNotRetriedAfterConnectionReset(t *testing.T) {
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	})
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	resp, err := do(h, context.Background(), "POST", srv.URL, nil, []byte(`{}`))
	if n, _ := srv.counts(); err == nil || resp.Attempts != 1 || n != 1 {
		t.Fatalf("attempts %d, upstream %d: %v", resp.Attempts, n, err)
	}
	resp, err = do(h, context.Background(), "GET", srv.URL, nil, nil)
	if err == nil || resp.Attempts != 3 {
		t.Fatalf("GET: attempts %d: %v", resp.Attempts, err)
	}
}

// TestRetryAfterWithoutDeadline: a call with no deadline does not wait out
// a Retry-After longer than MaxRetryAfterWithoutDeadline.
func TestRetryAfterWithoutDeadline(t *testing.T) {
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(503)
	})
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	done := make(chan *fetch.Response, 1)
	go func() {
		resp, _ := do(h, context.Background(), "GET", srv.URL, nil, nil)
		done <- resp
	}()
	select {
	case resp := <-done:
		if resp.Status != 503 || resp.Attempts != 1 {
			t.Fatalf("status %d attempts %d, want 503 after 1", resp.Status, resp.Attempts)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting out a Retry-After of an hour")
	}
	if n, _ := srv.counts(); n != 1 {
		t.Errorf("%d requests", n)
	}
}

// TestRetryAfter: a Retry-After that does not fit in the deadline fails at
// once with the status; a malformed or negative one gets the bounded backoff.
func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		value    string
		attempts int
	}{
		{"3600", 1},
		{"Fri, 31 Dec 2099 23:59:59 GMT", 1},
		{"Friday, 31-Dec-99 23:59:59 GMT", 3}, // RFC 850: 1999, in the past, which means now
		{"Thu Dec 31 23:59:59 2099", 1},       // ANSI C asctime
		{"1", 2},                              // fits once; the second wait would pass the deadline
		{"soon", 3},
		{"-5", 3},
		{"", 3},
	} {
		t.Run(tc.value, func(t *testing.T) {
			srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.value != "" {
					w.Header().Set("Retry-After", tc.value)
				}
				w.WriteHeader(503)
			})
			h := newHarness(t, fetch.Config{AllowCIDRs: loopback, RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 50 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			resp, err := do(h, ctx, "GET", srv.URL, nil, nil)
			took := time.Since(start)
			want := tc.attempts
			if err != nil || resp.Status != 503 || resp.Attempts != want {
				t.Fatalf("status %d attempts %d (want %d): %v", resp.Status, resp.Attempts, want, err)
			}
			if took > 1500*time.Millisecond || (want == 1 && took > 500*time.Millisecond) {
				t.Errorf("took %v with a 2 s deadline", took)
			}
		})
	}
}

// TestRetryPolicyAndBackoffAreTheConfigs: a Config's own policy and
// backoff are what decide, and each sees the attempt as it was: its
// number, the answer, whether the request left. The attempts stay bounded
// by MaxAttempts and one connection serves them all.
func TestRetryPolicyAndBackoffAreTheConfigs(t *testing.T) {
	srv := newCounter(t, sequence(500, 500, 500, 500))
	var mu sync.Mutex
	var seen []string
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback, MaxAttempts: 3,
		Retry: func(a *fetch.Attempt) bool {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("retry n=%d status=%d sent=%v repeatable=%v", a.N, a.Response.StatusCode, a.Sent, a.Repeatable()))
			return a.Response.StatusCode == 500 // the default would not: a 500 is final
		},
		Backoff: func(min, max time.Duration, a *fetch.Attempt) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("wait n=%d", a.N))
			return time.Millisecond
		}})
	resp, err := do(h, context.Background(), "POST", srv.URL, http.Header{"Idempotency-Key": {"k"}}, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	n, conns := srv.counts()
	want := []string{
		"retry n=1 status=500 sent=true repeatable=true", "wait n=1",
		"retry n=2 status=500 sent=true repeatable=true", "wait n=2",
	}
	if resp.Attempts != 3 || n != 3 || conns != 1 || resp.Status != 500 || fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("attempts %d, upstream saw %d on %d connections, status %d; policy saw %q", resp.Attempts, n, conns, resp.Status, seen)
	}
}

// TestBackoffWaitEndsWithTheCall: a wait between attempts ends when the
// call's context does, with the context's error, and nothing more is sent.
func TestBackoffWaitEndsWithTheCall(t *testing.T) {
	srv := newCounter(t, sequence(503))
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback,
		Backoff: func(time.Duration, time.Duration, *fetch.Attempt) time.Duration { return time.Hour }})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	resp, err := do(h, ctx, "GET", srv.URL, nil, nil)
	n, _ := srv.counts()
	if !errors.Is(err, context.DeadlineExceeded) || n != 1 || resp.Attempts != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v, upstream saw %d, attempts %d, after %v", err, n, resp.Attempts, time.Since(start))
	}
}
