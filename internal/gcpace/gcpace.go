// Package gcpace sets the garbage collector's percent (GOGC) after every
// cycle so that a cycle may allocate Headroom past the live heap, or as
// much as the percent's floor allows — and no more.
//
// Why: serve's calls are of two kinds. Fast ones (an upstream answering in
// milliseconds) keep the live heap at a few MiB, where a fixed GOGC of 100
// collects every few MiB allocated and spends CPU for nothing: there a
// large percent is right (400 at a 16 MiB live heap). Slow ones (an
// upstream answering in seconds) pile up: thousands of calls in flight
// make the live heap hundreds of MiB, where a percent of 400 lets five
// times that be allocated before a cycle, and memory per waiting call
// doubles.
//
// Go's goal for the next cycle is live + (live + stacks + globals) ×
// percent/100: the percent applies to the goroutines' stacks too, and
// thousands of goroutines waiting on slow calls hold as much stack as
// heap. So the percent that lets a cycle allocate Headroom is
// Headroom/(live + stacks + globals), clamped to [Min, Max]; serve's are
// 400 for a small process, 100 (Go's default) at Headroom and 50 from
// 2·Headroom up, where a heap of waiting calls peaks at 1.5× what they
// hold instead of 2×. A percent from
// the live heap alone let a burst of 4,000 slow calls, arriving after a
// cycle that saw 25 MiB live and few stacks, grow the heap to 384 MB
// before the next (160 MB more than the goal Headroom meant).
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Pacer adjusts GOGC after each garbage collection.
type Pacer struct {
	// Headroom is the heap a cycle may allocate beyond the live heap when
	// the live heap is smaller than it.
	Headroom uint64
	// Min and Max bound the percent.
	Min, Max int

	stopped atomic.Bool
	percent atomic.Int64
	sample  []metrics.Sample
}

// Start sets the percent for the live heap now and after every cycle,
// until Stop.
func Start(headroom uint64, lo, hi int) *Pacer {
	p := &Pacer{Headroom: headroom, Min: lo, Max: hi, sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
	}}
	p.adjust()
	p.arm()
	return p
}

// Percent is the GOGC the pacer set last.
func (p *Pacer) Percent() int { return int(p.percent.Load()) }

// Stop ends the adjustments; GOGC keeps its last value.
func (p *Pacer) Stop() { p.stopped.Store(true) }

// sentinel is garbage as soon as it is made; its finalizer runs after
// the cycle that found it so, and arms the next.
type sentinel struct{ p *Pacer }

func (p *Pacer) arm() {
	s := &sentinel{p}
	runtime.SetFinalizer(s, func(s *sentinel) {
		if s.p.stopped.Load() {
			return
		}
		s.p.adjust()
		s.p.arm()
	})
}

// For reports the percent for roots bytes the percent applies to: the
// live heap, the stacks and the globals of the last cycle.
func (p *Pacer) For(roots uint64) int {
	if roots == 0 {
		return p.Max
	}
	pct := p.Headroom * 100 / roots
	return int(max(uint64(p.Min), min(uint64(p.Max), pct)))
}

// adjust runs on the finalizer goroutine, one at a time.
func (p *Pacer) adjust() {
	metrics.Read(p.sample)
	var roots uint64
	for _, s := range p.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			roots += s.Value.Uint64()
		}
	}
	pct := p.For(roots)
	if int64(pct) != p.percent.Load() {
		debug.SetGCPercent(pct)
		p.percent.Store(int64(pct))
	}
}
