package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
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

func (l ConnLimits) withDefaults() ConnLimits {
	if l.MaxConns <= 0 {
		l.MaxConns = max(64, fdLimit()/2)
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

// Limits returns the limits in force, defaults filled in.
func (s *HTTPServer) Limits() ConnLimits { return s.limits }

// Open returns the number of open connections.
func (s *HTTPServer) Open() int {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	return s.conns.open
}

// idleGrace is how long a connection of a client over its bound is kept
// before it may be closed to make room for that client's next one.
var idleGrace = 2 * time.Second

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

// connTable counts the open connections and keeps those with no request in
// a handler in the order they became so, over all and per client address,
// in lists threaded through the connections themselves (no allocation per
// request).
type connTable struct {
	mu        sync.Mutex
	max       int
	perClient int
	grace     time.Duration // idleGrace when the table was made
	stall     time.Duration // ConnLimits.WriteStall
	open      int
	idle      connList
	clients   map[netip.Addr]*clientConns
	log       *slog.Logger
	lastWarn  time.Time
}

type clientConns struct {
	idle connList
	open int
}

// connList is an intrusive doubly linked list of connections; all is
// whether it threads the table's list or a client's.
type connList struct {
	head, tail *trackedConn
	n          int
	all        bool
}

func (l *connList) links(c *trackedConn) *connLinks {
	if l.all {
		return &c.allLinks
	}
	return &c.clientLinks
}

func (l *connList) push(c *trackedConn) {
	k := l.links(c)
	k.prev, k.next, k.in = l.tail, nil, true
	if l.tail != nil {
		l.links(l.tail).next = c
	} else {
		l.head = c
	}
	l.tail = c
	l.n++
}

func (l *connList) remove(c *trackedConn) {
	k := l.links(c)
	if !k.in {
		return
	}
	if k.prev != nil {
		l.links(k.prev).next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		l.links(k.next).prev = k.prev
	} else {
		l.tail = k.prev
	}
	k.prev, k.next, k.in = nil, nil, false
	l.n--
}

type connLinks struct {
	prev, next *trackedConn
	in         bool
}

// trackedConn is an accepted connection in the table.
type trackedConn struct {
	net.Conn
	t           *connTable
	client      netip.Addr
	busy        int       // requests of it in a handler
	since       time.Time // when it was accepted, or last left a handler
	closed      bool
	allLinks    connLinks
	clientLinks connLinks
	closeOnce   sync.Once
}

// Write gives each write WriteStall to go out: a client that stops reading
// an answer loses its connection, while one that keeps reading never does.
func (c *trackedConn) Write(p []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.t.stall))
	return c.Conn.Write(p)
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { c.t.closed(c) })
	return err
}

// add registers a new connection, first closing the oldest idle ones it
// must make room for. ok is false when there is no room: every connection
// is in a handler.
func (t *connTable) add(c *trackedConn) (ok bool) {
	var evict []*trackedConn
	t.mu.Lock()
	cc := t.clients[c.client]
	if cc == nil {
		cc = &clientConns{}
		t.clients[c.client] = cc
	}
	if t.open >= t.max {
		if old := t.idle.head; old != nil {
			evict = append(evict, t.unlinkLocked(old))
		} else {
			t.mu.Unlock()
			t.warn("refusing a connection: every one of the %d allowed is in a handler", t.max)
			return false
		}
	}
	now := time.Now()
	if cc.idle.n >= t.perClient {
		// One client's connections make room only after idleGrace: a
		// burst of real requests (a proxy's, a busy client's) has sent its
		// headers by then; a stalled one has not.
		if old := cc.idle.head; old != nil && now.Sub(old.since) >= t.grace {
			evict = append(evict, t.unlinkLocked(old))
		}
	}
	t.open++
	cc.open++
	c.since = now
	t.idle.push(c)
	cc.idle.push(c)
	t.mu.Unlock()
	for _, old := range evict {
		old.Conn.Close() // net/http then closes it: c.Close finds it gone
	}
	return true
}

// unlinkLocked takes an idle connection out of the lists to close it; it
// still counts as open until it is closed.
func (t *connTable) unlinkLocked(c *trackedConn) *trackedConn {
	t.idle.remove(c)
	if cc := t.clients[c.client]; cc != nil {
		cc.idle.remove(c)
	}
	return c
}

func (t *connTable) enter(c *trackedConn) {
	t.mu.Lock()
	c.busy++
	if c.busy == 1 {
		t.unlinkLocked(c)
	}
	t.mu.Unlock()
}

func (t *connTable) leave(c *trackedConn) {
	t.mu.Lock()
	c.busy--
	if c.busy == 0 && !c.closed {
		c.since = time.Now()
		t.idle.push(c)
		if cc := t.clients[c.client]; cc != nil {
			cc.idle.push(c)
		}
	}
	t.mu.Unlock()
}

func (t *connTable) closed(c *trackedConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.closed = true
	t.unlinkLocked(c)
	t.open--
	if cc := t.clients[c.client]; cc != nil {
		if cc.open--; cc.open == 0 {
			delete(t.clients, c.client)
		}
	}
}

// evictOldest closes the oldest idle connection, for a descriptor.
func (t *connTable) evictOldest() bool {
	t.mu.Lock()
	old := t.idle.head
	if old != nil {
		t.unlinkLocked(old)
	}
	t.mu.Unlock()
	if old == nil {
		return false
	}
	old.Conn.Close()
	return true
}

// warn logs a refusal at most once a second.
func (t *connTable) warn(format string, arg int) {
	t.mu.Lock()
	now := time.Now()
	if now.Sub(t.lastWarn) < time.Second {
		t.mu.Unlock()
		return
	}
	t.lastWarn = now
	t.mu.Unlock()
	t.log.Warn("connections", "event", fmt.Sprintf(format, arg))
}

// limitListener registers every accepted connection in the table.
type limitListener struct {
	net.Listener
	t         *connTable
	closeOnce sync.Once
	closeErr  error
}

// Close closes the listener once; again (Shutdown after Drain) is no error.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.Listener.Close() })
	return l.closeErr
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors: the oldest idle connection gives
				// its own up, and the accept is tried again.
				if l.t.evictOldest() {
					l.t.warn("out of file descriptors: closed the oldest idle connection (%d allowed)", l.t.max)
					time.Sleep(time.Millisecond) // its descriptor is freed by the closing goroutine
					continue
				}
			}
			return nil, err
		}
		tc := &trackedConn{Conn: c, t: l.t, client: clientAddr(c)}
		if !l.t.add(tc) {
			c.Close()
			continue
		}
		return tc, nil
	}
}

// clientAddr is a connection's remote address, the zero Addr when it has
// none (a Unix socket).
func clientAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
