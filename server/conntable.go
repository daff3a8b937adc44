package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// The table of the service's open connections: counted, and those not in a
// handler kept oldest first, over all and per client address, so that the
// oldest can be closed to make room (conns.go says when).

// idleGrace is how long a connection of a client over its bound is kept
// before it may be closed to make room for that client's next one.
var idleGrace = 2 * time.Second

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
	if t.open >= t.max {
		if old := t.idle.head; old != nil {
			evict = append(evict, t.unlinkLocked(old))
		} else {
			t.mu.Unlock()
			t.warn("refusing a connection: every one of the %d allowed is in a handler", t.max)
			return false
		}
	}
	// The client's entry only once the connection is taken: a refused one
	// is never closed through the table, and would leave it behind.
	cc := t.clients[c.client]
	if cc == nil {
		cc = &clientConns{}
		t.clients[c.client] = cc
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

// clientAddr is the client a connection counts against (clientKey of its
// remote address), the zero Addr when it has none (a Unix socket).
func clientAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return clientKey(ta.AddrPort().Addr())
	}
	return netip.Addr{}
}

// clientKey is the one identity of a client address, for the bound on its
// connections and for the throttle of its failed authentications alike: the
// address itself, IPv4-mapped addresses as IPv4, and an IPv6 address as its
// /64 (one host's whole allocation, which it may spread itself over).
func clientKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
