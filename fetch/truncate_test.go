package fetch_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/httptools/httptools/fetch"
	toolstest "github.com/httptools/httptools/httptest"
)

// rawServer answers every request with head and body, written as they are,
// then closes the connection: a server that lies.
func rawServer(t *testing.T, head string, body []byte) (url string, requests *atomic.Int64) {
	return toolstest.RawUpstream(t, append([]byte(head), body...))
}

// TestTruncatedBodyIsAnError: a body shorter than its Content-Length, a
// chunked body cut before its last chunk and a gzip stream cut short are
// TruncatedErrors, never a short answer passed as whole. 300 calls, 300
// errors.
func TestTruncatedBodyIsAnError(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte(`{"a":1}`), 1000))
	zw.Close()
	cut := gz.Bytes()[:gz.Len()/2]
	for _, tc := range []struct {
		name, head string
		body       []byte
	}{
		{"short of Content-Length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n", []byte(`{"ok":true,"n":1}`)},
		{"chunked cut", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", []byte("11\r\n{\"ok\":true,\"n\":1}\r\n")},
		{"gzip cut", fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n", len(cut)), cut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, requests := rawServer(t, tc.head, tc.body)
			c := fetch.NewClient(fetch.Config{AllowCIDRs: loopback, Logger: quietLogger()})
			defer c.CloseIdleConnections()
			truncated := 0
			const calls = 100
			for range calls {
				_, err := c.Do(context.Background(), &fetch.Request{Method: "GET", URL: url, Header: http.Header{}, SuccessMin: 200, SuccessMax: 299})
				var te *fetch.TruncatedError
				if errors.As(err, &te) {
					truncated++
				} else {
					t.Fatalf("got %v, want a TruncatedError", err)
				}
			}
			if truncated != calls || requests.Load() != calls {
				t.Errorf("%d calls: %d truncated, %d requests; want %d and %d", calls, truncated, requests.Load(), calls, calls)
			}
		})
	}
}

// TestAnnouncedLengthIsNoAllocation: a server announcing 10 MB and sending
// 7 bytes costs the client the bytes it sent, not the ones it announced:
// 128 such calls allocate under 16 MiB in all (it was 10 MiB each).
func TestAnnouncedLengthIsNoAllocation(t *testing.T) {
	url, _ := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10485000\r\n\r\n", []byte(`{"a":1}`))
	c := fetch.NewClient(fetch.Config{AllowCIDRs: loopback, Logger: quietLogger()})
	defer c.CloseIdleConnections()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const calls = 128
	for range calls {
		_, err := c.Do(context.Background(), &fetch.Request{Method: "GET", URL: url, Header: http.Header{}})
		var te *fetch.TruncatedError
		if !errors.As(err, &te) || te.Got != 7 || te.Want != 10485000 || !strings.Contains(err.Error(), "7 of the 10485000 bytes") {
			t.Fatalf("got %v, want a TruncatedError after 7 of 10485000 bytes", err)
		}
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("%d calls allocated %.1f MiB; want under 16 MiB", calls, float64(alloc)/(1<<20))
	}
}
