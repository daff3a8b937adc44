package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/internal/benchkit"
	"github.com/httptools/httptools/internal/jsonlog"
)

// holdUp is an upstream that holds every request until released: calls
// waiting on a slow API.
type holdUp struct {
	waiting atomic.Int64
	all     chan struct{} // closed when want requests wait
	want    int64
	release chan struct{}
}

func (g *holdUp) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/free") { // answered at once
		return benchkit.Memory{}.RoundTrip(r)
	}
	if g.waiting.Add(1) == g.want {
		close(g.all)
	}
	select {
	case <-g.release:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return benchkit.Memory{}.RoundTrip(r)
}

// BenchmarkWaitingCalls: the memory one REST invoke holds while its
// upstream has not answered, in process (the sockets, which the floor and
// serve pay alike, taken out): 2,000 calls are made to wait at once, then
// the heap still in use after a collection and the goroutine stacks are
// divided by the calls. The floor's handler waits the same way beside
// it. bench/slow.sh measures the whole process under load.
//
// grown-stack-B/call is the stacks before any collection shrinks them.
// The "-keepalive-at-server-depth" rows are a server's connection: each
// goroutine makes one whole call first (answered at once), then the call
// that waits, both under 1,280 bytes of frames, what net/http's server
// puts above a handler (conn.serve 1,104, serverHandler.ServeHTTP 48,
// HTTPServer.guard 192 in serve). A goroutine whose handling went deeper
// than about 7 KiB has grown to 16 KiB, and keeps it while it waits as
// long as it uses 4 KiB or more: serve's waiting call does (6.6 KiB, net/
// http's frames included), the floor's does not (3.9 KiB).
func BenchmarkWaitingCalls(b *testing.B) {
	const n = 2000
	body, free := []byte(`{"input":{"id":"1"}}`), []byte(`{"input":{"id":"free"}}`)
	run := func(b *testing.B, h http.Handler, g *holdUp, path, key string, depth, calls int) {
		one := func(body []byte) {
			r := httptest.NewRequest("POST", path, bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			if key != "" {
				r.Header.Set("Authorization", "Bearer "+key)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != 200 {
				b.Errorf("status %d: %s", w.Code, w.Body)
			}
		}
		for b.Loop() {
			var before, during runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					under(depth, func() {
						for range calls - 1 {
							one(free)
						}
						one(body)
					})
				}()
			}
			select {
			case <-g.all:
			case <-time.After(time.Minute):
				b.Fatalf("%d of %d calls reached the upstream", g.waiting.Load(), n)
			}
			var grown runtime.MemStats
			runtime.ReadMemStats(&grown) // before a cycle shrinks them
			runtime.GC()
			runtime.GC() // a second cycle shrinks the stacks the first found mostly unused
			runtime.ReadMemStats(&during)
			b.ReportMetric(float64(int64(grown.StackInuse)-int64(before.StackInuse))/n, "grown-stack-B/call")
			if f := os.Getenv("WAITING_HEAP_PROFILE"); f != "" {
				out, _ := os.Create(f + "." + b.Name()[strings.LastIndex(b.Name(), "/")+1:])
				pprof.WriteHeapProfile(out)
				out.Close()
			}
			b.ReportMetric(float64(int64(during.HeapInuse)-int64(before.HeapInuse))/n, "heap-B/call")
			b.ReportMetric(float64(int64(during.StackInuse)-int64(before.StackInuse))/n, "stack-B/call")
			close(g.release)
			wg.Wait()
			g.waiting.Store(0)
			g.all, g.release = make(chan struct{}), make(chan struct{})
		}
	}
	newHold := func() *holdUp { return &holdUp{want: n, all: make(chan struct{}), release: make(chan struct{})} }
	for _, row := range []struct {
		name         string
		depth, calls int
	}{{"", 0, 1}, {"-keepalive-at-server-depth", 1280, 2}} {
		b.Run("floor"+row.name, func(b *testing.B) {
			g := newHold()
			run(b, benchkit.Floor(&http.Client{Transport: g}, "http://api.example"), g, "/invoke", "", row.depth, row.calls)
		})
		b.Run("httptools"+row.name, func(b *testing.B) {
			g := newHold()
			_, h, key := memServerOver(b, slog.New(jsonlog.New(io.Discard, nil)), g, func(c *Config) { c.TenantMaxInflight = -1 })
			run(b, h, g, "/v1/tools/bench.get-issue/invoke", key, row.depth, row.calls)
		})
	}
}

// under calls f below about n bytes of frames.
//
//go:noinline
func under(n int, f func()) {
	var pad [256]byte
	pad[n%256] = 1
	if n >= 256 {
		under(n-256, f)
	} else {
		f()
	}
	runtime.KeepAlive(&pad)
}
