package mcpremote

import (
	"testing"
	"time"

	"github.com/httptools/httptools/internal/testkit"
)

// openSession puts an open session of key in p, last used now by p's
// clock; stopped is closed when the pool shuts it.
func openSession(p *pool, key string) (s *session, stopped chan struct{}) {
	s = &session{key: key, ready: make(chan struct{})}
	close(s.ready)
	stopped = make(chan struct{})
	s.stop = func() { close(stopped) }
	p.used(s)
	p.mu.Lock()
	p.sessions[key] = s
	p.mu.Unlock()
	return s, stopped
}

func (p *pool) has(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[key] != nil
}

// TestReapIdleReadsTheClock: the reaper shuts a session once Config.Now
// has moved past the idle time since its last use, not before, and never
// one a call is using.
func TestReapIdleReadsTheClock(t *testing.T) {
	clock := testkit.NewClock()
	syn := NewSynthesizer(Config{IdleTimeout: time.Minute, Now: clock.Now})
	defer syn.Close()
	p := syn.pool
	_, stopped := openSession(p, "idle")
	busy, _ := openSession(p, "busy")
	busy.inflight.Add(1)

	clock.Advance(59 * time.Second)
	p.reapIdle()
	if !p.has("idle") || !p.has("busy") {
		t.Fatal("a session was shut before the idle time passed on the clock")
	}

	clock.Advance(2 * time.Second)
	p.reapIdle()
	if p.has("idle") {
		t.Error("the session idle past the idle time is still in the pool")
	}
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Error("the idle session was not shut")
	}
	if !p.has("busy") {
		t.Error("the session a call uses was shut")
	}

	// A use moves the session's last use to the clock's now.
	p.done(busy)
	clock.Advance(30 * time.Second)
	p.reapIdle()
	if !p.has("busy") {
		t.Error("a session used 30 s ago on the clock was shut")
	}
}
