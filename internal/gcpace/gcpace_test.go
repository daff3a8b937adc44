package gcpace

import (
	"runtime"
	"runtime/debug"
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
