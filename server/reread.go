package server

import (
	"context"
	"sync"
	"time"
)

// Re-reads of what a replica keeps from the store (API keys, policies),
// stale while refreshing. A value due to be read again is read in the
// background, once at a time however many calls want it, and a call waits
// for that read only briefly: at most rereadWait, and never past its own
// deadline. A store that answers in time gives the call what it says now
// (a revoked key, a changed policy apply at once); one that does not — cut
// off, frozen, slow — leaves the call the value read last, while the read
// goes on and its answer serves the calls after it.

// rereadWait bounds how long a call waits for a re-read before it uses
// the value read last: long enough for a store that answers (milliseconds),
// short against any call's deadline.
const rereadWait = 250 * time.Millisecond

// rereadTimeout bounds a re-read, which runs on a context of its own (a
// call's ends with the call, and the read's answer serves the next one): a
// store that never answers holds it no longer than this.
const rereadTimeout = 5 * time.Second

// rereads are the re-reads in flight of one kind of value, by key.
type rereads[V any] struct {
	mu sync.Mutex
	m  map[string]*reread[V]
}

// reread is one read in flight: done is closed once v and err are set.
type reread[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// get starts read for key, unless one is in flight, and waits for its
// outcome until ctx ends or rereadWait passes: finished says whether it
// came in time. read runs on a context of its own bounded by
// rereadTimeout, and ends by itself within it: it is the one owner of the
// goroutine that runs it.
func (rs *rereads[V]) get(ctx context.Context, key string, read func(context.Context) (V, error)) (v V, err error, finished bool) {
	rs.mu.Lock()
	rr, ok := rs.m[key]
	if !ok {
		rr = &reread[V]{done: make(chan struct{})}
		if rs.m == nil {
			rs.m = map[string]*reread[V]{}
		}
		rs.m[key] = rr
		go rs.run(key, rr, read)
	}
	rs.mu.Unlock()
	wait := time.NewTimer(rereadWait)
	defer wait.Stop()
	select {
	case <-rr.done:
		return rr.v, rr.err, true
	case <-ctx.Done():
	case <-wait.C:
	}
	return v, nil, false
}

// run reads, then lets the next caller start a read of its own.
func (rs *rereads[V]) run(key string, rr *reread[V], read func(context.Context) (V, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), rereadTimeout)
	defer cancel()
	rr.v, rr.err = read(ctx)
	rs.mu.Lock()
	delete(rs.m, key)
	rs.mu.Unlock()
	close(rr.done)
}
