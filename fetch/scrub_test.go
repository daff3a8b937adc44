package fetch_test

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/httptools/httptools/fetch"
	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer is a resolver on 127.0.0.1 (UDP) that answers every question
// with rcode and no answer.
func dnsServer(t *testing.T, rcode dnsmessage.RCode) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if m.Unpack(buf[:n]) != nil {
				continue
			}
			m.Header.Response, m.Header.RCode, m.Header.RecursionAvailable = true, rcode, true
			m.Answers, m.Authorities, m.Additionals = nil, nil, nil
			if out, err := m.Pack(); err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

// TestErrorsNameNoResolver: a failed look-up's error, its description and
// the call's audit record name the host and what went wrong, never the
// resolver's address nor the local end of its socket (Go's resolver puts
// both in the *net.DNSError: "lookup api.x.com on 10.255.255.53:53: …",
// "read udp 127.0.0.1:41234->10.255.255.53:53: …"). 0 occurrences of each.
func TestErrorsNameNoResolver(t *testing.T) {
	const host = "api.example.test"
	closed := func() string { // a UDP port nobody listens on
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		a := pc.LocalAddr().String()
		pc.Close()
		return a
	}
	for _, tc := range []struct {
		name string
		// dial is the resolver's socket: where its questions really go.
		dial     func(t *testing.T) (func(ctx context.Context, network, address string) (net.Conn, error), []string)
		notFound bool
	}{
		{"NXDOMAIN", func(t *testing.T) (func(context.Context, string, string) (net.Conn, error), []string) {
			srv := dnsServer(t, dnsmessage.RCodeNameError)
			return toServer(srv), []string{srv}
		}, true},
		{"SERVFAIL", func(t *testing.T) (func(context.Context, string, string) (net.Conn, error), []string) {
			srv := dnsServer(t, dnsmessage.RCodeServerFailure)
			return toServer(srv), []string{srv}
		}, false},
		{"resolver unreachable", func(t *testing.T) (func(context.Context, string, string) (net.Conn, error), []string) {
			return func(context.Context, string, string) (net.Conn, error) {
				return nil, &net.OpError{Op: "dial", Net: "udp", Addr: &net.UDPAddr{IP: net.IPv4(10, 255, 255, 53), Port: 53}, Err: errors.New("connect: network is unreachable")}
			}, []string{"10.255.255.53"}
		}, false},
		{"resolver refuses (read error)", func(t *testing.T) (func(context.Context, string, string) (net.Conn, error), []string) {
			to := closed()
			var mu sync.Mutex
			var locals []string
			dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, "udp", to)
				if err == nil {
					mu.Lock()
					locals = append(locals, c.LocalAddr().String())
					mu.Unlock()
				}
				return c, err
			}
			t.Cleanup(func() {
				mu.Lock()
				defer mu.Unlock()
				if len(locals) == 0 {
					t.Error("the resolver never dialled")
				}
			})
			return dial, []string{to}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dial, hidden := tc.dial(t)
			res := &net.Resolver{PreferGo: true, Dial: dial}
			// What Go's resolver says itself: the address it names.
			_, raw := res.LookupNetIP(context.Background(), "ip", host)
			var de *net.DNSError
			if !errors.As(raw, &de) || de.Server == "" {
				t.Fatalf("the resolver's own error %#v names no server: the test shows nothing", raw)
			}
			hidden = append(hidden, de.Server)
			if h, _, err := net.SplitHostPort(de.Server); err == nil {
				hidden = append(hidden, h)
			}
			var logs logBuffer
			c := fetch.NewClient(fetch.Config{Resolver: res, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			_, err := c.Do(context.Background(), &fetch.Request{Method: "GET", URL: "https://" + host + "/v1", Header: http.Header{}, SuccessMin: 200, SuccessMax: 299})
			if err == nil {
				t.Fatal("the call succeeded")
			}
			texts := map[string]string{"error": err.Error(), "description": fetch.Describe(err, nil), "audit record": logs.String()}
			for where, text := range texts {
				for _, h := range hidden {
					if n := strings.Count(text, h); n != 0 {
						t.Errorf("the %s names %q %d times: %s", where, h, n, text)
					}
				}
				if strings.Contains(text, "->") {
					t.Errorf("the %s names a socket's local end: %s", where, text)
				}
				if !strings.Contains(text, "lookup "+host) {
					t.Errorf("the %s does not say the look-up of %s failed: %s", where, host, text)
				}
			}
			var got *net.DNSError
			if !errors.As(err, &got) || got.Server != "" || got.Name != host || got.IsNotFound != tc.notFound {
				t.Errorf("the error's *net.DNSError is %#v; want %s, no server, IsNotFound %v", got, host, tc.notFound)
			}
		})
	}
}

// toServer is a resolver's Dial that sends every question to srv.
func toServer(srv string) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", srv)
	}
}

// TestErrorsNameNoLocalAddress: a connection reset under a request fails
// the call with an error, a description and an audit record that name the
// upstream but not the local end of the connection ("read tcp
// 127.0.0.1:41234->…"); a proxy that cannot be reached is not named by
// its address. 0 occurrences of each.
func TestErrorsNameNoLocalAddress(t *testing.T) {
	t.Run("connection reset", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var mu sync.Mutex
		var clients []string // the client's local ends, as the server sees them
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				clients = append(clients, c.RemoteAddr().String())
				mu.Unlock()
				http.ReadRequest(bufio.NewReader(c))
				c.(*net.TCPConn).SetLinger(0) // a reset, not a close
				c.Close()
			}
		}()
		var logs logBuffer
		c := fetch.NewClient(fetch.Config{AllowCIDRs: loopback, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		defer c.CloseIdleConnections()
		_, err = c.Do(context.Background(), &fetch.Request{Method: "GET", URL: "http://" + ln.Addr().String() + "/", Header: http.Header{}, SuccessMin: 200, SuccessMax: 299})
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Source == nil {
			t.Fatalf("error %v holds no *net.OpError with a local end: the test shows nothing", err)
		}
		mu.Lock()
		hidden := append([]string{oe.Source.String()}, clients...)
		mu.Unlock()
		assertNotNamed(t, map[string]string{"error": err.Error(), "description": fetch.Describe(err, nil), "audit record": logs.String()}, hidden)
	})
	t.Run("proxy unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		proxyAddr := ln.Addr().String()
		ln.Close() // nobody listens there now
		pu := &url.URL{Scheme: "http", Host: proxyAddr}
		var logs logBuffer
		h := newHarness(t, fetch.Config{Proxy: http.ProxyURL(pu)})
		h.name("api.example.test", []netipAddr{public})
		c := fetch.NewClient(fetch.Config{Proxy: http.ProxyURL(pu), Resolver: h, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		_, err = c.Do(context.Background(), &fetch.Request{Method: "GET", URL: "http://api.example.test/", Header: http.Header{}, SuccessMin: 200, SuccessMax: 299})
		if err == nil || !strings.Contains(err.Error(), "proxy") {
			t.Fatalf("error %v; want the proxy's failure", err)
		}
		assertNotNamed(t, map[string]string{"error": err.Error(), "description": fetch.Describe(err, nil), "audit record": logs.String()}, []string{proxyAddr})
	})
}

func assertNotNamed(t *testing.T, texts map[string]string, hidden []string) {
	t.Helper()
	for where, text := range texts {
		for _, h := range hidden {
			if n := strings.Count(text, h); n != 0 {
				t.Errorf("the %s names %q %d times: %s", where, h, n, text)
			}
		}
	}
}
