package mcpremote

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pool holds the open sessions, one per key (tenant, endpoint, credential,
// allowlist). Opening one is done once however many calls wait for it.
//
// Every goroutine the pool starts is its background work (background.go):
// closeAll stops it and waits for it.
type pool struct {
	idle time.Duration
	now  func() time.Time // the clock of lastUsed and the idle cut
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	reaping  bool
	// stop is closed by closeAll: the background work started before
	// ends; a new channel serves the work started after.
	stop chan struct{}
	// work counts the background work started on stop: a new one comes
	// with each new stop, so that a closeAll still waiting on the work
	// before it never sees the Add of work started after (a WaitGroup's
	// Add must not race its Wait from zero).
	work *sync.WaitGroup
}

func newPool(idle time.Duration, now func() time.Time, log *slog.Logger) *pool {
	return &pool{idle: idle, now: now, log: log, sessions: map[string]*session{}, stop: make(chan struct{}), work: &sync.WaitGroup{}}
}

// session is one client session, or one being opened.
type session struct {
	key   string
	ready chan struct{} // closed when opening has ended; then cs or err is set
	cs    *mcp.ClientSession
	err   error
	// stop ends what the session runs on: its context (the SSE stream),
	// the stdio process.
	stop func()
	// unauthorized is set when the server answered 401 to a request of
	// the session.
	unauthorized atomic.Bool
	// challenge is the server's last OAuth challenge on the session: a
	// 401, or a 403 asking for more scopes.
	challenge atomic.Pointer[challenge]
	// tooLarge is set when an answer was cut at the cap.
	tooLarge atomic.Bool
	// listing is the server's tools as last listed on the session (set
	// before it is ready; a reload's next call lists them again).
	listing  atomic.Pointer[listing]
	lastUsed atomic.Int64 // unix nanoseconds
	inflight atomic.Int32
	dropped  atomic.Bool
}

// get returns the session of key, opening it with open when there is none;
// it waits for a session being opened until ctx ends.
func (p *pool) get(ctx context.Context, key string, open func(*session) error) (*session, error) {
	p.mu.Lock()
	s := p.sessions[key]
	if s == nil {
		s = &session{key: key, ready: make(chan struct{})}
		p.sessions[key] = s
		if !p.reaping {
			p.reaping = true
			p.backgroundLocked(p.reap)
		}
		p.mu.Unlock()
		p.background(func(<-chan struct{}) { p.open(s, open) })
	} else {
		p.mu.Unlock()
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if s.err != nil {
		return nil, s.err
	}
	s.inflight.Add(1)
	return s, nil
}

// open opens s with open, then watches it: a session the server ends, or
// whose process dies, is dropped, and the next call opens another.
func (p *pool) open(s *session, open func(*session) error) {
	err := open(s)
	if err != nil {
		s.err = err
		p.drop(s)
	} else {
		p.background(func(<-chan struct{}) {
			s.cs.Wait() // ends when the session is closed: drop, closeAll
			p.drop(s)
		})
	}
	close(s.ready)
}

// used notes that s was used now, by the pool's clock.
func (p *pool) used(s *session) {
	s.lastUsed.Store(p.now().UnixNano())
}

// done ends a call's use of s.
func (p *pool) done(s *session) {
	p.used(s)
	s.inflight.Add(-1)
}

// drop removes s from the pool and shuts it in the background (the SDK's
// Close may wait seconds for a stream a server holds open); calls on it
// fail, later ones open another. The returned channel is closed once it
// is shut.
func (p *pool) drop(s *session) <-chan struct{} {
	done := make(chan struct{})
	if s.dropped.Swap(true) {
		close(done)
		return done
	}
	p.mu.Lock()
	if p.sessions[s.key] == s {
		delete(p.sessions, s.key)
	}
	p.mu.Unlock()
	p.background(func(<-chan struct{}) {
		defer close(done)
		if s.cs != nil {
			s.cs.Close()
		}
		if s.stop != nil {
			s.stop()
		}
	})
	return done
}

// reap shuts the sessions unused for the idle time until stop is closed.
// The ticker's cadence is real time; whether a session is idle is read
// from the pool's clock (reapIdle).
func (p *pool) reap(stop <-chan struct{}) {
	tick := time.NewTicker(max(p.idle/4, 50*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		p.reapIdle()
	}
}

// reapIdle shuts the open sessions no call uses that were last used
// longer than the idle time ago by the pool's clock.
func (p *pool) reapIdle() {
	cut := p.now().Add(-p.idle).UnixNano()
	var idle []*session
	p.mu.Lock()
	for _, s := range p.sessions {
		select {
		case <-s.ready:
		default:
			continue
		}
		if s.inflight.Load() == 0 && s.lastUsed.Load() < cut {
			idle = append(idle, s)
		}
	}
	p.mu.Unlock()
	for _, s := range idle {
		p.drop(s)
	}
}

// closeAll stops the background work (the reaper, the pings of
// checkAlive) and shuts every session, waiting at most shutWait for them
// and for the work to end (a stdio process is killed after its own 2 s).
func (p *pool) closeAll() {
	p.mu.Lock()
	close(p.stop) // the work started so far stops; later work gets a new channel
	work := p.work
	p.stop, p.work, p.reaping = make(chan struct{}), &sync.WaitGroup{}, false
	all := make([]*session, 0, len(p.sessions))
	for _, s := range p.sessions {
		all = append(all, s)
	}
	p.mu.Unlock()
	timeout := time.After(shutWait)
	for _, s := range all {
		select {
		case <-s.ready:
		case <-timeout:
			// Still in its handshake (bounded by its first caller's
			// deadline): shut once it ends, without holding Close.
			go func() { <-s.ready; p.drop(s) }()
			continue
		}
		select {
		case <-p.drop(s):
		case <-timeout:
		}
	}
	waitWork(work, timeout)
}

// shutWait bounds how long Close waits for the sessions to shut.
const shutWait = 3 * time.Second
