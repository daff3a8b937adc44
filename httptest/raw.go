package httptest

import (
	"bufio"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// RawUpstream is a server on 127.0.0.1 that answers every request with
// response, written byte for byte, and then closes the connection: an
// upstream that lies (a Content-Length it does not keep, a chunked or gzip
// stream cut short), which net/http's own server will not be. It returns
// the base URL (ending in "/") and the count of requests it has read; it
// stops with the test.
func RawUpstream(t testing.TB, response []byte) (url string, requests *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	requests = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				requests.Add(1)
				c.Write(response)
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/", requests
}
