package gcpace

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	p := &Pacer{Headroom: 64 << 20, Min: 100, Max: 400}
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 400}, {1 << 20, 400}, {16 << 20, 400}, {32 << 20, 200}, {64 << 20, 100}, {1 << 30, 100},
	} {
		if got := p.For(c.live); got != c.want {
			t.Errorf("For(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// TestPacerFollowsTheLiveHeap: a live heap past the headroom brings the
// percent down after a cycle; once it is garbage, the next cycles bring
// it back up.
func TestPacerFollowsTheLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	p := Start(8<<20, 100, 400)
	defer p.Stop()
	waitFor := func(want func(int) bool, what string) {
		t.Helper()
		for range 200 {
			runtime.GC()
			time.Sleep(5 * time.Millisecond) // the finalizer goroutine's turn
			if want(p.Percent()) {
				return
			}
		}
		t.Fatalf("percent %d: not %s", p.Percent(), what)
	}
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20) // 64 MiB live: eight times the headroom
	}
	waitFor(func(n int) bool { return n == 100 }, "100 under a live heap of 64 MiB")
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC is %d, the pacer said 100", got)
	}
	runtime.KeepAlive(live)
	live = nil
	waitFor(func(n int) bool { return n == 400 }, "back at 400 once the heap is garbage")
}

// deep holds about n KiB of stack until release closes.
//
//go:noinline
func deep(n int, release chan struct{}) byte {
	var pad [1024]byte
	pad[n%1024] = byte(n)
	if n == 0 {
		<-release
		return pad[0]
	}
	return deep(n-1, release) + pad[n%1024]
}

// TestPacerCountsStacks: goroutines waiting deep in their stacks (as
// thousands of slow calls do) count as the live heap does, since Go's goal
// multiplies them by the percent too: 32 MiB of stacks over a heap of a
// few MiB is 100, not the 400 of a small heap.
func TestPacerCountsStacks(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	release := make(chan struct{})
	var started sync.WaitGroup
	for range 1000 {
		started.Add(1)
		go func() { started.Done(); deep(28, release) }()
	}
	started.Wait()
	p := Start(8<<20, 100, 400)
	defer p.Stop()
	for range 200 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		if p.Percent() == 100 {
			break
		}
	}
	close(release)
	if p.Percent() != 100 {
		t.Fatalf("percent %d with 1,000 goroutines 28 KiB deep, want 100", p.Percent())
	}
}
