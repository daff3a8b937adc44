package server

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/internal/testkit"
)

// serveLimited runs h under limits on a loopback listener.
func serveLimited(t *testing.T, h http.Handler, limits ConnLimits) (*HTTPServer, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(h, limits, nil)
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return hs, ln.Addr().String()
}

// closedByServer reports whether the server has closed c (a read ends with
// EOF or a reset, not a timeout).
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// TestOldestIdleConnectionsMakeRoom: with 3 idle connections allowed per
// client (and no grace), opening 5 stalled ones closes the 2 oldest (and only those); with
// 4 connections allowed in all, one busy in a handler is never closed to
// make room, and its answer arrives.
func TestOldestIdleConnectionsMakeRoom(t *testing.T) {
	release := make(chan struct{})
	var entered atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			entered.Add(1)
			<-release
		}
		io.WriteString(w, "ok")
	})
	t.Run("per client", func(t *testing.T) {
		defer func(g time.Duration) { idleGrace = g }(idleGrace)
		idleGrace = 0
		hs, addr := serveLimited(t, h, ConnLimits{MaxConns: 100, MaxIdlePerClient: 3, HeaderTimeout: time.Minute})
		var cs []net.Conn
		for range 5 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
			cs = append(cs, c)
			testkit.WaitFor(t, "the connection to be accepted", func() bool { return hs.Open() >= min(len(cs), 3) })
		}
		testkit.WaitFor(t, "3 connections open", func() bool { return hs.Open() == 3 })
		for i, c := range cs {
			if got, want := closedByServer(c), i < 2; got != want {
				t.Errorf("connection %d: closed %v; want %v", i, got, want)
			}
		}
	})
	t.Run("busy is kept", func(t *testing.T) {
		hs, addr := serveLimited(t, h, ConnLimits{MaxConns: 4, MaxIdlePerClient: 100, HeaderTimeout: time.Minute})
		busy, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		io.WriteString(busy, "GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
		testkit.WaitFor(t, "the busy request in its handler", func() bool { return entered.Load() == 1 })
		for range 10 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
		}
		testkit.WaitFor(t, "at most 4 open", func() bool { return hs.Open() <= 4 })
		close(release)
		busy.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, 200)
		n, _ := io.ReadAtLeast(busy, b, 20)
		if !strings.HasPrefix(string(b[:n]), "HTTP/1.1 200") {
			t.Errorf("the busy connection got %q; want its 200", b[:n])
		}
	})
}
