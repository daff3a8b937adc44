package fetch_test

import (
	"context"
	"encoding/json"
	"github.com/httptools/httptools/internal/testkit"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httptools/httptools/fetch"
)

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd on this system")
	}
	return len(ents)
}

// settle waits until f reports at most want, or gives up after
// testkit.WaitLimit, and
// returns the last value.
func settle(want int, f func() int) int {
	deadline := time.Now().Add(testkit.WaitLimit)
	for {
		got := f()
		if got <= want || time.Now().After(deadline) {
			return got
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// stable returns f's value once two readings 20 ms apart agree.
func stable(f func() int) int {
	prev := f()
	for i := 0; i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
		cur := f()
		if cur == prev {
			return cur
		}
		prev = cur
	}
	return prev
}

// TestNoLeaksAfterFailingCalls: after 1000 failing calls (5xx, resets,
// timeouts) the goroutine count and the open file descriptors return to
// their baseline: every body is closed, every connection released.
func TestNoLeaksAfterFailingCalls(t *testing.T) {
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/5xx":
			w.WriteHeader(503)
			w.Write([]byte(strings.Repeat("e", 8<<10))) // a body to drain or close
		case "/reset":
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
	})
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	// Warm up once so that lazily started runtime goroutines are counted in
	// the baseline.
	do(h, context.Background(), "GET", srv.URL+"/ok", nil, nil)
	h.client.CloseIdleConnections()
	baseG := stable(runtime.NumGoroutine)
	baseFD := openFDs(t)

	paths := []string{"/5xx", "/reset", "/slow"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := 0
	work := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				// Only the timeouts get a context that ends: a cancelled
				// context would release a leaked body by itself and hide
				// the leak this test looks for.
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if paths[i%3] == "/slow" {
					ctx, cancel = context.WithTimeout(ctx, 30*time.Millisecond)
				}
				resp, err := do(h, ctx, "GET", srv.URL+paths[i%3], nil, nil)
				cancel()
				if err != nil || resp.Status >= 500 {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < 1000; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if failures != 1000 {
		t.Fatalf("%d of 1000 calls failed, want all", failures)
	}
	// Only idle connections are closed here: a connection still held by an
	// unclosed body stays open, with its goroutines, and fails the test.
	h.client.CloseIdleConnections()
	g := settle(baseG, runtime.NumGoroutine)
	fd := settle(baseFD, func() int { return openFDs(t) })
	t.Logf("goroutines %d → %d, file descriptors %d → %d", baseG, g, baseFD, fd)
	if g > baseG || fd > baseFD {
		t.Errorf("leak: goroutines %d (baseline %d), fds %d (baseline %d)", g, baseG, fd, baseFD)
	}
}

// TestAuditRecord: one structured record per call with the fields an
// operator needs, and never a secret, a query string or a header.
func TestAuditRecord(t *testing.T) {
	srv := newCounter(t, status(503))
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	do(h, context.Background(), "GET", srv.URL+"/x?api_key=k-SECRET-1", http.Header{"Authorization": {"Bearer t-SECRET-2"}}, nil)
	h.client.Do(context.Background(), &fetch.Request{Method: "POST", URL: "http://10.1.2.3/?token=k-SECRET-3", Header: http.Header{}, Tool: "acme.t", Tenant: "t1"})
	logs := strings.TrimSpace(h.logs.String())
	if strings.Contains(logs, "SECRET") {
		t.Fatalf("a secret reached the log:\n%s", logs)
	}
	lines := strings.Split(logs, "\n")
	if len(lines) != 2 {
		t.Fatalf("%d records for 2 calls:\n%s", len(lines), logs)
	}
	var allowed, denied map[string]any
	json.Unmarshal([]byte(lines[0]), &allowed)
	json.Unmarshal([]byte(lines[1]), &denied)
	for k, want := range map[string]any{"decision": "allowed", "method": "GET", "host": "127.0.0.1", "status": 503.0, "attempts": 3.0} {
		if allowed[k] != want {
			t.Errorf("allowed record %s = %v, want %v (%s)", k, allowed[k], want, lines[0])
		}
	}
	if ip, _ := allowed["ip"].(string); !strings.HasPrefix(ip, "127.0.0.1:") {
		t.Errorf("allowed record ip %q", ip)
	}
	for k, want := range map[string]any{"decision": "denied", "tool": "acme.t", "tenant": "t1", "host": "10.1.2.3", "denied_ip": "10.1.2.3", "attempts": 1.0} {
		if denied[k] != want {
			t.Errorf("denied record %s = %v, want %v (%s)", k, denied[k], want, lines[1])
		}
	}
	if _, ok := allowed["duration_ms"]; !ok {
		t.Error("no duration_ms")
	}
}
