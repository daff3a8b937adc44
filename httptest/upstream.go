package httptest

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"time"

	"github.com/httptools/httptools/fetch"
)

// Recorded is one request the fake upstream received.
type Recorded struct {
	Method string
	URL    string // full URL as the tool sent it: scheme, host, path and query
	Header http.Header
	Body   []byte
}

// Upstream is a recording fake API that answers every host: a Client from
// it sends each request, whatever its host or scheme, to this process (no
// network, no DNS), where it is recorded and answered with the next scripted
// Response. It is safe for concurrent use.
type Upstream struct {
	plain, tls *httptest.Server
	mu         sync.Mutex
	script     []Response
	recorded   []Recorded
}

// NewUpstream starts a fake upstream; Close stops it.
func NewUpstream() *Upstream {
	u := &Upstream{}
	h := http.HandlerFunc(u.serve)
	u.plain = httptest.NewServer(h)
	u.tls = httptest.NewTLSServer(h)
	return u
}

// Close stops the servers.
func (u *Upstream) Close() {
	u.plain.Close()
	u.tls.Close()
}

// Script sets the answers, in order; the last one repeats. With none, the
// upstream answers 200 {}.
func (u *Upstream) Script(rs ...Response) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.script = rs
	u.recorded = nil
}

// Requests returns what was received since the last Script.
func (u *Upstream) Requests() []Recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Recorded(nil), u.recorded...)
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	u.mu.Lock()
	u.recorded = append(u.recorded, Recorded{Method: r.Method, URL: scheme + "://" + r.Host + r.RequestURI, Header: r.Header.Clone(), Body: body})
	resp := Response{Status: 200, JSON: []byte(`{}`)}
	if n := len(u.script); n > 0 {
		resp = u.script[min(len(u.recorded)-1, n-1)]
	}
	u.mu.Unlock()
	if resp.DelayMs > 0 {
		select {
		case <-time.After(time.Duration(resp.DelayMs) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	if resp.JSON != nil && w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	status := resp.Status
	if status == 0 {
		status = 200
	}
	w.WriteHeader(status)
	switch {
	case resp.JSON != nil:
		w.Write(resp.JSON)
	case resp.Body != nil:
		io.WriteString(w, *resp.Body)
	}
}

// apiAddr is what every name resolves to in the client: a public address the
// SSRF guard allows. Nothing is ever sent to it; the dialer connects to the
// fake upstream instead.
var apiAddr = netip.MustParseAddr("192.0.43.10")

type resolveAll struct{}

func (resolveAll) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{apiAddr}, nil
}

// everyRange opens every address range of the SSRF guard.
var everyRange = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}

// Client returns a fetch client that sends every request to the upstream:
// https (port 443) to its TLS server, anything else to its plain one.
// Nothing reaches the address a tool names, so the SSRF guard's ranges are
// open: a tool of a loopback or private API (http://127.0.0.1:8081/…) is
// tested like any other. The manifest's own network allowlist still
// applies. Retries wait 1 ms so that cases run fast.
func (u *Upstream) Client() *fetch.Client {
	return fetch.NewClient(fetch.Config{
		AllowCIDRs: everyRange,
		Resolver:   resolveAll{},
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(address)
			to := u.plain.Listener.Addr().String()
			if port == "443" {
				to = u.tls.Listener.Addr().String()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, to)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the fake upstream's own certificate, for any host name
		RetryWaitMin:    time.Millisecond,
		RetryWaitMax:    time.Millisecond,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}
