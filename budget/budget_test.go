package budget

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHoldsNeverExceedTheBudget: 64 goroutines each drawing twice on a
// budget that fits 4 of them never hold more than the budget, and every
// byte comes back.
func TestHoldsNeverExceedTheBudget(t *testing.T) {
	b := New(4 * 300)
	var peak atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			h := b.Hold()
			defer h.Release()
			for _, n := range []int64{250, 50} {
				if err := h.Take(context.Background(), n); err != nil {
					t.Error(err)
					return
				}
				for {
					p, u := peak.Load(), b.InUse()
					if u <= p || peak.CompareAndSwap(p, u) {
						break
					}
				}
			}
			time.Sleep(time.Millisecond)
		})
	}
	wg.Wait()
	if peak.Load() > b.Size() {
		t.Errorf("peak %d over the budget %d", peak.Load(), b.Size())
	}
	if b.InUse() != 0 {
		t.Errorf("%d bytes not given back", b.InUse())
	}
}

// TestPartialHoldersDoNotHang: when every byte is held by calls that each
// wait for more, the first wait ends with its deadline (an OverError) and
// what it gives back lets the others finish; nothing hangs, and the budget
// is whole again.
func TestPartialHoldersDoNotHang(t *testing.T) {
	b := New(1000)
	var over, done atomic.Int64
	var wg sync.WaitGroup
	holds := make([]*Hold, 10)
	for i := range holds {
		holds[i] = b.Hold()
		if err := holds[i].Take(context.Background(), 100); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range holds {
		wg.Go(func() {
			defer h.Release()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			switch err := h.Take(ctx, 100); {
			case err == nil:
				done.Add(1)
			case errors.Is(err, ErrOver):
				over.Add(1)
			}
		})
	}
	wg.Wait()
	if over.Load() < 1 || over.Load()+done.Load() != 10 || b.InUse() != 0 {
		t.Errorf("%d waits over the budget, %d granted (want ≥ 1 and 10 in all), %d bytes still held", over.Load(), done.Load(), b.InUse())
	}
}

// TestHoldersGoFirst: a new call waiting for more than is free does not
// block a call that holds bytes and needs a few more.
func TestHoldersGoFirst(t *testing.T) {
	b := New(1000)
	h := b.Hold()
	h.Take(context.Background(), 600)
	big := make(chan error, 1)
	go func() { big <- b.Hold().Take(context.Background(), 900) }()
	for b.waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Take(ctx, 300); err != nil {
		t.Fatalf("the holder waited behind a new call: %v", err)
	}
	h.Release()
	if err := <-big; err != nil {
		t.Fatal(err)
	}
}

// TestTakeGivesUpWithTheContext: a draw the budget cannot grant in time is
// an *OverError that matches ErrOver; one larger than the budget fails at
// once.
func TestTakeGivesUpWithTheContext(t *testing.T) {
	b := New(100)
	h := b.Hold()
	if err := h.Take(context.Background(), 80); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := b.Hold().Take(ctx, 30)
	var oe *OverError
	if !errors.As(err, &oe) || !errors.Is(err, ErrOver) || oe.Cause == nil {
		t.Fatalf("want a waited OverError, got %v", err)
	}
	if err := b.Hold().Take(context.Background(), 101); !errors.Is(err, ErrOver) {
		t.Fatalf("want ErrOver for more than the budget, got %v", err)
	}
	h.Release()
	h.Release()
	if b.InUse() != 0 {
		t.Errorf("in use %d after release", b.InUse())
	}
	var nilHold *Hold
	if nilHold.Take(context.Background(), 1<<40) != nil || nilHold.Held() != 0 {
		t.Error("a nil hold must grant everything")
	}
	if DefaultSize() <= 0 {
		t.Error("no default size")
	}
}

// TestShareBoundsOneParty: one party's holds never draw past its share —
// the excess waits for the party's own calls — while another party still
// gets the rest at once.
func TestShareBoundsOneParty(t *testing.T) {
	b := New(1000)
	a, other := New(400), New(400)
	h1, h2 := b.HoldFor(a), b.HoldFor(a)
	if err := h1.Take(context.Background(), 300); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := h2.Take(ctx, 200)
	var oe *OverError
	if !errors.As(err, &oe) || !oe.Share {
		t.Fatalf("past the share: %v", err)
	}
	if err := b.HoldFor(other).Take(context.Background(), 400); err != nil {
		t.Fatalf("the other party: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- h2.Take(context.Background(), 200) }()
	time.Sleep(10 * time.Millisecond)
	h1.Release()
	if err := <-done; err != nil {
		t.Errorf("after the party's own release: %v", err)
	}
	h2.Release()
	if a.InUse() != 0 {
		t.Errorf("share still holds %d", a.InUse())
	}
}

// TestTakeWithinBoundsTheWait: TakeWithin waits at most its wait, across
// the share and the budget together, gives nothing away when it gives up,
// and grants at once (without waiting) what fits.
func TestTakeWithinBoundsTheWait(t *testing.T) {
	b := New(100)
	share := New(100)
	h := b.HoldFor(share)
	if err := h.TakeWithin(context.Background(), 80, time.Hour); err != nil {
		t.Fatal(err)
	}
	err := b.HoldFor(share).TakeWithin(context.Background(), 30, 20*time.Millisecond)
	var oe *OverError
	if !errors.As(err, &oe) || !errors.Is(oe.Cause, context.DeadlineExceeded) {
		t.Fatalf("want an OverError caused by the wait's deadline, got %v", err)
	}
	if b.InUse() != 80 || share.InUse() != 80 {
		t.Fatalf("in use %d and %d of the share after a refused draw, want 80 and 80", b.InUse(), share.InUse())
	}
	// A grant that comes within the wait is taken.
	done := make(chan error, 1)
	go func() { done <- b.HoldFor(share).TakeWithin(context.Background(), 30, time.Minute) }()
	for b.waiting()+share.waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	h.Release()
	if err := <-done; err != nil {
		t.Fatalf("a draw granted within its wait failed: %v", err)
	}
	if b.InUse() != 30 {
		t.Fatalf("in use %d, want 30", b.InUse())
	}
}
