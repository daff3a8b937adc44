package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// The service's own connections. net/http alone frees none of them: with
// only a header timeout, an idle keep-alive, a stalled body and a stalled
// keyless POST (whose 401 waits for net/http to drain the body) each hold
// a descriptor and their buffers for ever. HTTPServer bounds them:
//
//   - headers within HeaderTimeout (10 s) and MaxHeaderBytes (64 KiB);
//   - a request body within BodyTimeout (30 s) of its handler's start;
//   - a kept-alive connection with no request is closed after IdleTimeout
//     (30 s), and one whose client reads nothing of an answer for
//     WriteStall (30 s) too;
//   - an answer written before its request's body was read whole closes the
//     connection at once instead of draining the body first;
//   - a request with Transfer-Encoding, and any HTTP/1.0 request, is
//     answered and its connection closed: net/http drops a Content-Length
//     sent beside Transfer-Encoding (and the Transfer-Encoding of HTTP/1.0)
//     without a word, so whatever a proxy in front read differently is never
//     served as a next request;
//   - at most MaxConns connections are open: past it the oldest one not
//     inside a handler (waiting for its headers, or kept alive) is closed to
//     make room, so a flood of stalled connections cannot keep /healthz or a
//     real client out; and one client address keeps at most
//     MaxIdlePerClient such connections older than 2 s (a burst of real
//     requests has sent its headers by then). A connection whose request is
//     in a handler is never closed this way.

// ConnLimits bounds the service's connections. The zero value means the
// defaults.
type ConnLimits struct {
	// MaxConns bounds open connections; 0 means half the process's
	// descriptor limit (the other half is for upstream calls and the
	// store), at least 64.
	MaxConns int
	// MaxIdlePerClient bounds the connections of one client address that
	// have no request in a handler; 0 means 1024.
	MaxIdlePerClient int
	// HeaderTimeout bounds the reading of a request's headers; 0 means 10 s.
	HeaderTimeout time.Duration
	// BodyTimeout bounds the reading of a request's body, from its
	// handler's start; 0 means 30 s.
	BodyTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no request;
	// 0 means 30 s.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers; 0 means 64 KiB.
	MaxHeaderBytes int
	// WriteStall bounds each write to a client: one that reads nothing
	// of an answer for this long loses its connection (an answer that
	// keeps moving, however long, never does); 0 means 30 s.
	WriteStall time.Duration
}

// Defaults of ConnLimits.
const (
	DefaultMaxIdlePerClient = 1024
	DefaultHeaderTimeout    = 10 * time.Second
	DefaultBodyTimeout      = 30 * time.Second
	DefaultIdleTimeout      = 30 * time.Second
	DefaultMaxHeaderBytes   = 64 << 10
	DefaultWriteStall       = 30 * time.Second
)

// defaultMaxConns is the client connections a process takes by default:
// half its descriptors (the other half is for upstream connections).
func defaultMaxConns() int { return max(64, fdLimit()/2) }

func (l ConnLimits) withDefaults() ConnLimits {
	if l.MaxConns <= 0 {
		l.MaxConns = defaultMaxConns()
	}
	if l.MaxIdlePerClient <= 0 {
		l.MaxIdlePerClient = DefaultMaxIdlePerClient
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = DefaultHeaderTimeout
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.WriteStall <= 0 {
		l.WriteStall = DefaultWriteStall
	}
	return l
}

// HTTPServer serves a handler under ConnLimits: what httptools serve runs.
type HTTPServer struct {
	srv      *http.Server
	conns    *connTable
	limits   ConnLimits
	draining atomic.Bool
	ln       atomic.Pointer[limitListener]
}

// NewHTTPServer returns a server of h under limits; log (nil: slog's
// default) takes net/http's own error lines (an accept failure, a TLS
// handshake error) in the service's format, and the connection table's.
func NewHTTPServer(h http.Handler, limits ConnLimits, log *slog.Logger) *HTTPServer {
	if log == nil {
		log = slog.Default()
	}
	limits = limits.withDefaults()
	t := &connTable{max: limits.MaxConns, perClient: limits.MaxIdlePerClient, grace: idleGrace, stall: limits.WriteStall, clients: map[netip.Addr]*clientConns{}, log: log}
	t.idle.all = true
	s := &HTTPServer{conns: t, limits: limits}
	s.srv = &http.Server{
		Handler:           s.guard(h),
		ReadHeaderTimeout: limits.HeaderTimeout,
		IdleTimeout:       limits.IdleTimeout,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*trackedConn); ok {
				return context.WithValue(ctx, connKey{}, tc)
			}
			return ctx
		},
	}
	return s
}

// Serve accepts connections on ln until Shutdown or Close.
func (s *HTTPServer) Serve(ln net.Listener) error {
	l := &limitListener{Listener: ln, t: s.conns}
	s.ln.Store(l)
	err := s.srv.Serve(l)
	if s.draining.Load() && errors.Is(err, net.ErrClosed) {
		return http.ErrServerClosed
	}
	return err
}

// Shutdown stops accepting, closes idle connections and waits for the
// others until ctx ends (http.Server.Shutdown).
func (s *HTTPServer) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Close closes every connection at once.
func (s *HTTPServer) Close() error { return s.srv.Close() }

// Drain closes the port (a proxy's next connection is refused, so it sends
// that request to another server, nothing having been sent) and makes every
// answer on the connections still open close its own (Connection: close):
// a proxy in front stops using its connections to this server one answer
// at a time, and never finds one closed under a request it sent, which it
// may not send again. Shutdown follows once the proxy's idle connections
// have timed out on its side. The port is closed first, while a proxy
// mostly reuses its connections and seldom opens one: a connection the
// kernel has taken but the server not yet accepted is reset by the close.
func (s *HTTPServer) Drain() {
	s.draining.Store(true)
	if ln := s.ln.Load(); ln != nil {
		ln.Close()
	}
}

// Open returns the number of open connections.
func (s *HTTPServer) Open() int {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	return s.conns.open
}

type connKey struct{}

// guard marks the request's connection busy while its handler runs, bounds
// the reading of its body, and closes the connection after an answer that
// leaves the body unread or whose framing net/http may have read otherwise
// than a proxy in front.
func (s *HTTPServer) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*trackedConn); ok {
			s.conns.enter(c)
			defer s.conns.leave(c)
		}
		if len(r.TransferEncoding) > 0 || !r.ProtoAtLeast(1, 1) || s.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		g := &bodyGuard{rc: http.NewResponseController(w)}
		g.body.rc, g.body.g = r.Body, g
		g.w.ResponseWriter, g.w.g = w, g
		_ = g.rc.SetReadDeadline(time.Now().Add(s.limits.BodyTimeout))
		r.Body = &g.body
		defer g.answered(w) // a handler that wrote nothing: net/http answers 200 after it
		next.ServeHTTP(&g.w, r)
	})
}

// bodyGuard is a request body's state, its reader and its writer in one
// allocation.
type bodyGuard struct {
	rc     *http.ResponseController
	mu     sync.Mutex
	sawEOF bool
	done   bool // the answer has begun
	body   guardedBody
	w      guardedWriter
}

// read notes the end of the body: the read deadline is lifted, so that a
// long call after it is not cut by it.
func (g *bodyGuard) read(err error) {
	if err == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == io.EOF && !g.sawEOF {
		g.sawEOF = true
		_ = g.rc.SetReadDeadline(time.Time{})
	}
}

// answered is called before the answer's first byte: with the body unread,
// the connection closes after the answer, and the read that net/http would
// make to drain the body first ends at once.
func (g *bodyGuard) answered(w http.ResponseWriter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return
	}
	g.done = true
	if !g.sawEOF {
		w.Header().Set("Connection", "close")
		_ = g.rc.SetReadDeadline(time.Now())
	}
}

type guardedBody struct {
	rc io.ReadCloser
	g  *bodyGuard
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.g.read(err)
	return n, err
}

func (b *guardedBody) Close() error { return b.rc.Close() }

type guardedWriter struct {
	http.ResponseWriter
	g *bodyGuard
}

func (w *guardedWriter) WriteHeader(code int) {
	if code >= 200 {
		w.g.answered(w.ResponseWriter)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *guardedWriter) Write(b []byte) (int, error) {
	w.g.answered(w.ResponseWriter)
	return w.ResponseWriter.Write(b)
}

// Flush passes a flush on (event streams, a streamed output).
func (w *guardedWriter) Flush() {
	w.g.answered(w.ResponseWriter)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
