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
func BenchmarkWaitingCalls(b *testing.B) {
	const n = 2000
	body := []byte(`{"input":{"id":"1"}}`)
	run := func(b *testing.B, h http.Handler, g *holdUp, path, key string) {
		for b.Loop() {
			var before, during runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
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
				}()
			}
			select {
			case <-g.all:
			case <-time.After(time.Minute):
				b.Fatalf("%d of %d calls reached the upstream", g.waiting.Load(), n)
			}
			runtime.GC()
			runtime.GC() // a second cycle shrinks the stacks the first found mostly unused
			runtime.ReadMemStats(&during)
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
	b.Run("floor", func(b *testing.B) {
		g := newHold()
		run(b, benchkit.Floor(&http.Client{Transport: g}, "http://api.example"), g, "/invoke", "")
	})
	b.Run("httptools", func(b *testing.B) {
		g := newHold()
		_, h, key := memServerOver(b, slog.New(jsonlog.New(io.Discard, nil)), g, func(c *Config) { c.TenantMaxInflight = -1 })
		run(b, h, g, "/v1/tools/bench.get-issue/invoke", key)
	})
}
