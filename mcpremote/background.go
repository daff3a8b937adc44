package mcpremote

import (
	"context"
	"sync"
	"time"
)

// background runs f on a goroutine the pool owns: stop is closed when
// closeAll stops the pool's work, and closeAll waits for f to return.
func (p *pool) background(f func(stop <-chan struct{})) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backgroundLocked(f)
}

// backgroundLocked is background with p.mu held.
func (p *pool) backgroundLocked(f func(stop <-chan struct{})) {
	stop, work := p.stop, p.work
	work.Add(1)
	go func() {
		defer work.Done()
		f(stop)
	}()
}

// waitWork waits for the background work work counts to end, or for
// timeout (its waiter then ends with the work).
func waitWork(work *sync.WaitGroup, timeout <-chan time.Time) {
	ended := make(chan struct{})
	go func() {
		work.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-timeout:
	}
}

// stopContext is a context cancelled when stop is closed, or by cancel.
// Its watcher ends with it.
func stopContext(stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
