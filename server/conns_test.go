package server

import (
	"io"
	"net"
	"net/http"
	"net/netip"
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
	release, release2 := make(chan struct{}), make(chan struct{})
	var entered, entered2 atomic.Int64
	slow := func(c chan struct{}) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered2.Add(1)
			<-c
		})
	}
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
		// Connections from other addresses while all 4 are taken by the
		// busy one's handler or its address: refused or making room, they
		// leave no client entry behind once closed.
		full, fullAddr := serveLimited(t, slow(release2), ConnLimits{MaxConns: 1, HeaderTimeout: time.Minute})
		hold, err := net.Dial("tcp", fullAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Close()
		io.WriteString(hold, "GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
		testkit.WaitFor(t, "the only connection in its handler", func() bool { return entered2.Load() == 1 })
		for i := 2; i <= 6; i++ {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(i))}}
			if c, err := d.Dial("tcp", fullAddr); err == nil {
				closedByServer(c)
				c.Close()
			}
		}
		testkit.WaitFor(t, "refused connections gone", func() bool { return full.Open() == 1 })
		full.conns.mu.Lock()
		clients := len(full.conns.clients)
		full.conns.mu.Unlock()
		if clients != 1 {
			t.Errorf("%d client entries after 5 refused connections from 5 addresses; want 1 (the busy one's)", clients)
		}
		close(release2)
		b := make([]byte, 200)
		n, _ := io.ReadAtLeast(busy, b, 20)
		if !strings.HasPrefix(string(b[:n]), "HTTP/1.1 200") {
			t.Errorf("the busy connection got %q; want its 200", b[:n])
		}
	})
}

// TestClientKey: one client is one address, an IPv4-mapped address its
// IPv4, and an IPv6 address its /64, for the connection bound and the
// throttle alike.
func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"2001:db8:1:2::1":      "2001:db8:1:2::",
		"2001:db8:1:2:ffff::9": "2001:db8:1:2::",
	} {
		if got := clientKey(netip.MustParseAddr(in)); got != netip.MustParseAddr(want) {
			t.Errorf("clientKey(%s) = %s; want %s", in, got, want)
		}
	}
	r := &http.Request{RemoteAddr: "[2001:db8:1:2::5]:443"}
	if got := clientOf(r); got != netip.MustParseAddr("2001:db8:1:2::") {
		t.Errorf("clientOf(%s) = %s", r.RemoteAddr, got)
	}
}
