package fetch_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/fetch"
)

// TestHugeBodyIsCappedWhileReading: a 1 GiB chunked body fails with
// ErrTooLarge after the cap, and the client allocates and holds no more than
// the cap (plus transport buffers), whatever the body's size.
func TestHugeBodyIsCappedWhileReading(t *testing.T) {
	const gib = 1 << 30
	var written atomic.Int64
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		for written.Load() < gib {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	for _, limit := range []int64{1 << 20, fetch.DefaultMaxBodyBytes} {
		written.Store(0)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		peak := heapPeak()
		_, err := h.client.Do(context.Background(), &fetch.Request{Method: "GET", URL: srv.URL, Header: http.Header{}, MaxBody: limit})
		held := peak() - int64(before.HeapAlloc)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, fetch.ErrTooLarge) {
			t.Fatalf("cap %d: got %v", limit, err)
		}
		alloc := int64(after.TotalAlloc - before.TotalAlloc)
		t.Logf("cap %d MiB: the server wrote %.1f MiB before the client hung up; the client allocated %.1f MiB in all, the heap grew by %.1f MiB at most",
			limit>>20, float64(written.Load())/(1<<20), float64(alloc)/(1<<20), float64(held)/(1<<20))
		if alloc > limit+(2<<20) || held > limit+(1<<20) {
			t.Errorf("cap %d: allocated %d bytes, held %d; want no more than the cap and a little", limit, alloc, held)
		}
		if written.Load() >= gib {
			t.Errorf("the client read the whole body")
		}
	}
}

func TestDeclaredLengthOverCapRefusedUnread(t *testing.T) {
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<30))
		w.WriteHeader(200)
		w.Write([]byte("x"))
	})
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	_, err := h.client.Do(context.Background(), &fetch.Request{Method: "GET", URL: srv.URL, Header: http.Header{}})
	if !errors.Is(err, fetch.ErrTooLarge) || !strings.Contains(err.Error(), "Content-Length 1073741824") {
		t.Fatalf("got %v", err)
	}
}

// TestGzipCappedAfterDecompression: 64 MiB of zeros gzip to 64 KiB; the cap
// applies to what comes out.
func TestGzipCappedAfterDecompression(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(z.Bytes())
	})
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	_, err := h.client.Do(context.Background(), &fetch.Request{Method: "GET", URL: srv.URL, Header: http.Header{}, MaxBody: 1 << 20})
	if !errors.Is(err, fetch.ErrTooLarge) {
		t.Fatalf("a %d-byte gzip of 64 MiB: got %v", z.Len(), err)
	}
}

func TestResponseHeadersCapped(t *testing.T) {
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 20; i++ {
			w.Header().Set("X-Big-"+strconv.Itoa(i), strings.Repeat("h", 64<<10))
		}
		w.WriteHeader(200)
	})
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	_, err := h.get(context.Background(), srv.URL)
	if err == nil || !strings.Contains(err.Error(), "exceeded 1048576 bytes") {
		t.Fatalf("1.25 MiB of headers: got %v", err)
	}
}

// TestSlowUpstreamsCutAtDeadline: headers then a byte every 100 ms, and
// headers that never come, both end at the deadline.
func TestSlowUpstreamsCutAtDeadline(t *testing.T) {
	trickle := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			go io.Copy(io.Discard, c)
		}
	}()
	h := newHarness(t, fetch.Config{AllowCIDRs: loopback})
	for _, url := range []string{trickle.URL, "http://" + ln.Addr().String() + "/"} {
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		start := time.Now()
		_, err := h.get(ctx, url)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: got %v, want the deadline", url, err)
		}
		if took < 350*time.Millisecond || took > 1500*time.Millisecond {
			t.Errorf("%s: ended after %v, want about 400ms", url, took)
		}
	}
}

// heapPeak samples the live heap every millisecond until the returned
// function is called, which stops it and returns the highest sample.
func heapPeak() func() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := int64(s[0].Value.Uint64()); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		return peak.Load()
	}
}
