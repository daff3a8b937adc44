package fetch_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/httptools/httptools/fetch"
)

// public is an address the guard allows. Tests never send a packet to it:
// the harness's dialer connects every dial of it to a loopback test server.
var public = netip.MustParseAddr("93.184.216.34")

// harness is a client whose resolver and dialer the test controls, with
// counts of every look-up and every dial.
type harness struct {
	mu      sync.Mutex
	names   map[string][][]netip.Addr // host → answers, one per look-up (the last repeats)
	lookups map[string]int
	dials   []string          // every "ip:port" the client dialled
	routes  map[string]string // "ip:port" dialled → loopback address really connected
	client  *fetch.Client
	logs    *logBuffer
}

func newHarness(t *testing.T, cfg fetch.Config) *harness {
	h := &harness{names: map[string][][]netip.Addr{}, lookups: map[string]int{}, routes: map[string]string{}, logs: &logBuffer{}}
	cfg.Resolver = h
	guard := &fetch.Guard{Allow: cfg.AllowCIDRs}
	cfg.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		h.mu.Lock()
		h.dials = append(h.dials, address)
		to, routed := h.routes[address]
		h.mu.Unlock()
		if routed {
			return (&net.Dialer{}).DialContext(ctx, network, to)
		}
		// Anything else really dials, with the guard's Control as the
		// last line: only loopback ever gets this far in tests.
		return (&net.Dialer{Control: guard.Control}).DialContext(ctx, network, address)
	}
	if cfg.RetryWaitMin == 0 {
		cfg.RetryWaitMin, cfg.RetryWaitMax = time.Millisecond, 5*time.Millisecond
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(h.logs, nil))
	h.client = fetch.NewClient(cfg)
	t.Cleanup(h.client.CloseIdleConnections)
	return h
}

// name makes host resolve to the given answers, one per look-up.
func (h *harness) name(host string, answers ...[]netip.Addr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.names[host] = answers
}

// route sends dials of ip:port to srv.
func (h *harness) route(ip netip.Addr, port int, srv *httptest.Server) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.routes[netip.AddrPortFrom(ip, uint16(port)).String()] = srv.Listener.Addr().String()
}

func (h *harness) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.lookups[host]
	h.lookups[host]++
	answers, ok := h.names[host]
	if !ok || len(answers) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return answers[min(n, len(answers)-1)], nil
}

func (h *harness) dialed() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.dials...)
}

func (h *harness) lookupsOf(host string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lookups[host]
}

func (h *harness) get(ctx context.Context, url string) (*fetch.Response, error) {
	return h.client.Do(ctx, &fetch.Request{Method: "GET", URL: url, Header: http.Header{}, SuccessMin: 200, SuccessMax: 299})
}

// counter is an upstream that counts requests and new connections.
type counter struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	conns    int
	seen     []*http.Request
	bodies   []string
}

func newCounter(t *testing.T, h http.HandlerFunc) *counter {
	c := &counter{}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.requests++
		c.seen = append(c.seen, r.Clone(context.Background()))
		c.bodies = append(c.bodies, string(b))
		c.mu.Unlock()
		h(w, r)
	}))
	c.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.mu.Lock()
			c.conns++
			c.mu.Unlock()
		}
	}
	c.Start()
	t.Cleanup(c.Close)
	return c
}

func (c *counter) counts() (requests, conns int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests, c.conns
}

func (c *counter) port() int { return c.Listener.Addr().(*net.TCPAddr).Port }

type logBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code); fmt.Fprint(w, "{}") }
}

type urlURL = url.URL

type netipAddr = netip.Addr

var netSplit = net.SplitHostPort

func parseURL(s string) (*url.URL, error) { return url.Parse(s) }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
