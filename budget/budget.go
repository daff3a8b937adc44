// Package budget bounds the bytes that calls in flight hold at once.
//
// One Budget is shared by a process. Each call takes a Hold and draws on it
// before it allocates a body (a request body read, an upstream answer, a
// response built from it); everything a hold took goes back when the call
// has written its answer and releases it. A draw waits, in arrival order,
// while the budget is spent, and gives up when the call's context ends: the
// call then fails with an *OverError (503 overloaded), never with an
// allocation the machine cannot afford.
//
// A hold is handed down a call explicitly (synth.InvokeOptions.Hold,
// fetch.Request.Hold), so that the fetch client deep in a call draws on the
// hold of the request that serves it.
package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Budget is a number of bytes shared by every call of a process.
//
// Waiters are served in arrival order, with one exception that keeps the
// budget from locking up: a call that already holds bytes and needs more
// (an answer growing, a response built from it) goes before calls that hold
// nothing yet. A strict FIFO (golang.org/x/sync/semaphore) deadlocks there:
// a new call waiting at the head for more than is free blocks the holders
// whose release it waits for.
type Budget struct {
	size  int64
	inUse atomic.Int64

	mu      sync.Mutex
	free    int64
	growing waitQueue // holders that need more
	fresh   waitQueue // calls that hold nothing yet
}

type waiter struct {
	n     int64
	ready chan struct{} // closed when granted
}

type waitQueue struct{ list []*waiter }

func (q *waitQueue) push(w *waiter) { q.list = append(q.list, w) }

func (q *waitQueue) remove(w *waiter) bool {
	for i, x := range q.list {
		if x == w {
			q.list = append(q.list[:i], q.list[i+1:]...)
			return true
		}
	}
	return false
}

// New returns a budget of size bytes (at least 1).
func New(size int64) *Budget {
	size = max(size, 1)
	return &Budget{size: size, free: size}
}

// acquire takes n bytes, waiting until ctx ends or wb's bound passes;
// growing says the caller already holds bytes.
func (b *Budget) acquire(ctx context.Context, wb *waitBound, n int64, growing bool) error {
	b.mu.Lock()
	if n <= b.free && len(b.growing.list) == 0 && (growing || len(b.fresh.list) == 0) {
		b.free -= n
		b.mu.Unlock()
		return nil
	}
	ctx, cancel := wb.bound(ctx)
	defer cancel()
	w := &waiter{n: n, ready: make(chan struct{})}
	q := &b.fresh
	if growing {
		q = &b.growing
	}
	q.push(w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.free += n
			b.grantLocked()
		default:
			q.remove(w)
			b.grantLocked() // a large waiter leaving may unblock smaller ones
		}
		return ctx.Err()
	}
}

// waiting counts the calls waiting (tests).
func (b *Budget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.growing.list) + len(b.fresh.list)
}

func (b *Budget) release(n int64) {
	b.mu.Lock()
	b.free += n
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked serves the waiters that fit: holders first, each queue in
// order, a queue stopping at its first waiter that does not fit.
func (b *Budget) grantLocked() {
	for _, q := range []*waitQueue{&b.growing, &b.fresh} {
		for len(q.list) > 0 && q.list[0].n <= b.free {
			w := q.list[0]
			q.list = q.list[1:]
			b.free -= w.n
			close(w.ready)
		}
		if len(q.list) > 0 {
			return // holders waiting: nothing for new calls yet
		}
	}
}

// Size is the budget in bytes.
func (b *Budget) Size() int64 { return b.size }

// InUse is the number of bytes held now.
func (b *Budget) InUse() int64 { return b.inUse.Load() }

// ErrOver is what every *OverError matches with errors.Is.
var ErrOver = errors.New("over the memory budget")

// OverError is a draw the budget could not grant.
type OverError struct {
	Need  int64 // bytes asked for
	Size  int64 // the whole budget, or the party's share (Share)
	Cause error // the context's error when the wait ended, nil when Need exceeds Size
	Share bool  // the draw would pass the party's share
}

func (e *OverError) Error() string {
	if e.Share {
		if e.Cause == nil {
			return fmt.Sprintf("%d bytes would not fit in this tenant's whole %d-byte share of the memory budget", e.Need, e.Size)
		}
		return fmt.Sprintf("this tenant's %d-byte share of the memory budget had no room for %d more bytes before the call's deadline", e.Size, e.Need)
	}
	if e.Cause == nil {
		return fmt.Sprintf("%d bytes would not fit in the whole %d-byte memory budget", e.Need, e.Size)
	}
	return fmt.Sprintf("the %d-byte memory budget had no room for %d more bytes before the call's deadline", e.Size, e.Need)
}

// Is makes errors.Is(err, ErrOver) hold.
func (e *OverError) Is(target error) bool { return target == ErrOver }

// Hold is what one call has drawn. It is safe for concurrent use.
type Hold struct {
	b     *Budget
	share *Budget
	mu    sync.Mutex
	n     int64
}

// Hold starts a call's account. A nil Budget gives a nil Hold, on which
// every method is a no-op that grants everything.
func (b *Budget) Hold() *Hold { return b.HoldFor(nil) }

// HoldFor starts a call's account that also draws on share: a Budget of
// its own bounding what one party (a tenant) holds together, so that one
// party cannot take the whole budget. A draw waits for room in both, the
// share first. A nil share is none.
func (b *Budget) HoldFor(share *Budget) *Hold {
	if b == nil {
		return nil
	}
	return &Hold{b: b, share: share}
}

// waitBound bounds the waits of one draw by wait, when that is positive,
// counted from the draw's first wait: a draw that need not wait (most)
// makes no timer, and one that waits at two budgets (its share, then the
// whole) waits wait in all.
type waitBound struct {
	wait  time.Duration
	until time.Time // set at the first wait
}

// bound is ctx bounded by wb; cancel it when the wait ends.
func (wb *waitBound) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if wb.wait <= 0 {
		return ctx, func() {}
	}
	if wb.until.IsZero() {
		wb.until = time.Now().Add(wb.wait)
	}
	return context.WithDeadline(ctx, wb.until)
}

// Take draws n more bytes, waiting while the budget is spent until ctx ends.
func (h *Hold) Take(ctx context.Context, n int64) error {
	return h.TakeWithin(ctx, n, 0)
}

// TakeWithin is Take that waits at most wait (0: until ctx ends). It costs
// a call that need not wait no timer, as a context.WithTimeout around Take
// would.
func (h *Hold) TakeWithin(ctx context.Context, n int64, wait time.Duration) error {
	if h == nil || n <= 0 {
		return nil
	}
	return h.take(ctx, &waitBound{wait: wait}, n)
}

func (h *Hold) take(ctx context.Context, wb *waitBound, n int64) error {
	if n > h.b.size {
		return &OverError{Need: n, Size: h.b.size}
	}
	h.mu.Lock()
	growing := h.n > 0
	h.mu.Unlock()
	if s := h.share; s != nil {
		if n > s.size {
			return &OverError{Need: n, Size: s.size, Share: true}
		}
		if err := s.acquire(ctx, wb, n, growing); err != nil {
			return &OverError{Need: n, Size: s.size, Cause: err, Share: true}
		}
		s.inUse.Add(n)
	}
	if err := h.b.acquire(ctx, wb, n, growing); err != nil {
		if s := h.share; s != nil {
			s.inUse.Add(-n)
			s.release(n)
		}
		return &OverError{Need: n, Size: h.b.size, Cause: err}
	}
	h.b.inUse.Add(n)
	h.mu.Lock()
	h.n += n
	h.mu.Unlock()
	return nil
}

// Held is what the hold has drawn.
func (h *Hold) Held() int64 {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// Return gives back n of the bytes drawn (a reservation larger than what
// was used), at most all of them.
func (h *Hold) Return(n int64) {
	if h == nil || n <= 0 {
		return
	}
	h.mu.Lock()
	n = min(n, h.n)
	h.n -= n
	h.mu.Unlock()
	h.giveBack(n)
}

// Release gives back everything drawn. It may be called more than once.
func (h *Hold) Release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	n := h.n
	h.n = 0
	h.mu.Unlock()
	h.giveBack(n)
}

func (h *Hold) giveBack(n int64) {
	if n <= 0 {
		return
	}
	if s := h.share; s != nil {
		s.inUse.Add(-n)
		s.release(n)
	}
	h.b.inUse.Add(-n)
	h.b.release(n)
}
