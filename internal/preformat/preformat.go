// Package preformat keeps slog handlers whose fixed attributes are already
// formatted (slog.Handler.WithAttrs), by key: a record that repeats the
// same attributes on every call (a tool's name, a route) then formats only
// what changes. The set is bounded: past Max it starts again, so keys that
// keep changing (tools reloaded many times over) cannot make it grow.
package preformat

import (
	"log/slog"
	"sync"
	"sync/atomic"
)

// Max is the most handlers a Handlers keeps.
const Max = 4096

// Handlers is a bounded set of handlers by key; the zero value is empty
// and ready, and safe for concurrent use.
type Handlers[K comparable] struct {
	m sync.Map // K → slog.Handler
	n atomic.Int64
}

// Get returns the handler kept for k.
func (s *Handlers[K]) Get(k K) (slog.Handler, bool) {
	h, ok := s.m.Load(k)
	if !ok {
		return nil, false
	}
	return h.(slog.Handler), true
}

// Put keeps h for k, starting the set again first when it is full.
func (s *Handlers[K]) Put(k K, h slog.Handler) {
	if s.n.Add(1) > Max {
		s.m.Clear()
		s.n.Store(1)
	}
	s.m.Store(k, h)
}

// Len is how many handlers have been put since the set last started
// again: at most Max.
func (s *Handlers[K]) Len() int64 { return s.n.Load() }
