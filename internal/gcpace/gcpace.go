// Package gcpace sets the garbage collector's percent (GOGC) after every
// cycle from the live heap: a heap may grow past its live part by
// Headroom or by the live part itself, whichever is more — and no more.
//
// Why: serve's calls are of two kinds. Fast ones (an upstream answering in
// milliseconds) keep the live heap at a few MiB, where a fixed GOGC of 100
// collects every few MiB allocated and spends CPU for nothing: there a
// large percent is right (400 at a 16 MiB live heap). Slow ones (an
// upstream answering in seconds) pile up: thousands of calls in flight
// make the live heap hundreds of MiB, where a percent of 400 lets five
// times that be allocated before a cycle, and memory per waiting call
// doubles. The percent that keeps the heap at live + max(live, Headroom)
// is Headroom/live (clamped to [Min, Max]): 400 for a small heap, 100 —
// Go's default, a heap of twice the live part — from Headroom/1 up.
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
	p := &Pacer{Headroom: headroom, Min: lo, Max: hi, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
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

// For reports the percent for a live heap of live bytes.
func (p *Pacer) For(live uint64) int {
	if live == 0 {
		return p.Max
	}
	pct := p.Headroom * 100 / live
	return int(max(uint64(p.Min), min(uint64(p.Max), pct)))
}

// adjust runs on the finalizer goroutine, one at a time.
func (p *Pacer) adjust() {
	metrics.Read(p.sample)
	var live uint64
	if p.sample[0].Value.Kind() == metrics.KindUint64 {
		live = p.sample[0].Value.Uint64()
	}
	pct := p.For(live)
	if int64(pct) != p.percent.Load() {
		debug.SetGCPercent(pct)
		p.percent.Store(int64(pct))
	}
}
