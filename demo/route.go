package demo

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
)

// Host is the demo API's host name. It is reached only through Route, in
// memory: it is under .test (RFC 6761), which resolves nowhere, so without
// Route a demo tool's call fails and never reaches another machine.
const Host = "demo.httptools.test"

// Route returns a Sender that sends every request for Host to the demo
// API in memory and every other request to next. The SSRF guard of next
// is untouched: a tool naming a loopback or private address still goes
// through next and is refused there; a tool naming Host reaches the demo
// API and nothing else, since the demo client's only connection is a pipe
// to it.
func Route(next httpspec.Sender, api *API, log *slog.Logger) httpspec.Sender {
	l := newPipeListener()
	srv := &http.Server{Handler: api, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	var once sync.Once
	start := func() { go srv.Serve(l) } // until the process ends, as the service
	return &router{next: next, start: func() { once.Do(start) }, demo: fetch.NewClient(fetch.Config{
		// The guard sees the loopback address the resolver gives and
		// allows exactly it; the dial never uses it, it returns the pipe.
		AllowCIDRs:  []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Resolver:    demoResolver{},
		Dial:        l.dial,
		UserAgent:   httpspec.UserAgent,
		Logger:      log,
		MaxAttempts: 1,
	})}
}

type router struct {
	next  httpspec.Sender
	demo  *fetch.Client
	start func()
}

// Do sends req to the demo API when it names Host, else to next.
func (r *router) Do(ctx context.Context, req *fetch.Request) (*fetch.Response, error) {
	if !IsDemo(req.URL) {
		return r.next.Do(ctx, req)
	}
	r.start()
	return r.demo.Do(ctx, req)
}

// IsDemo reports whether rawURL is the demo API's: http://Host/… (port 80
// or none).
func IsDemo(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && u.Scheme == "http" && strings.EqualFold(u.Hostname(), Host) && (u.Port() == "" || u.Port() == "80")
}

// demoResolver resolves Host to 127.0.0.1 and nothing else.
type demoResolver struct{}

func (demoResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if !strings.EqualFold(strings.TrimSuffix(host, "."), Host) {
		return nil, &net.DNSError{Err: "not the demo API's host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// pipeListener is a net.Listener whose connections are in-memory pipes
// made by dial.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial hands the server one end of a new pipe and returns the other.
func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.closed:
		return nil, errors.New("the demo API is closed")
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return Host }
