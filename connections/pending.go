package connections

// Records the store failed to take (refresh.go): a refreshed token or a
// failed refresh's record, held in memory and written again in the
// background until the store takes it, or Flush does.

import (
	"context"
	"errors"
	"time"
)

// failedRefresh is the record of a failed token request the store did not
// take: recordFailure's arguments.
type failedRefresh struct {
	cur, next *Record
	invalid   bool
}

// retryRecordFailure holds a failed refresh's record and writes it in the
// background until the store takes it (or Flush does), for at most
// InterruptedWait of real time (past it the others stop waiting anyway).
// One writer runs per connection; it writes the newest failure.
func (m *Manager) retryRecordFailure(key string, f *failedRefresh) {
	if _, loaded := m.failures.Swap(key, f); loaded {
		return // a writer is running
	}
	start := time.Now() // real time: an injected clock may stand still
	m.writers.Add(1)
	go func() {
		defer m.writers.Done()
		for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			if !m.pause(wait) {
				return // closed
			}
			v, ok := m.failures.Load(key)
			if !ok {
				return // written by Flush
			}
			f := v.(*failedRefresh)
			if time.Since(start) > m.interruptedWait() {
				m.failures.CompareAndDelete(key, f)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), m.refreshTimeout())
			err := m.flushFailure(ctx, key, f)
			cancel()
			if err == nil {
				m.logger().Info("a failed token refresh is recorded", "app", f.cur.App, "tenant", f.cur.Tenant)
				return
			}
		}
	}()
}

// flushFailure writes a held failure; it is forgotten once written.
func (m *Manager) flushFailure(ctx context.Context, key string, f *failedRefresh) error {
	if _, _, err := m.recordFailure(ctx, f.cur, f.next, f.invalid); err != nil {
		return err
	}
	m.failures.CompareAndDelete(key, f)
	return nil
}

// keep holds a record the store failed to take and writes it again in the
// background until it does (or a later refresh is stored).
func (m *Manager) keep(key string, rec *Record, cause error) {
	if _, loaded := m.pending.Swap(key, rec); loaded {
		return // a retrier is running; it writes the newest
	}
	m.logger().Warn("a refreshed token could not be stored; it is served from memory and its write retried",
		"app", rec.App, "tenant", rec.Tenant, "error", words(cause))
	m.writers.Add(1)
	go func() {
		defer m.writers.Done()
		wait := 50 * time.Millisecond
		for {
			if !m.pause(wait) {
				return // closed
			}
			p := m.pendingOf(key)
			if p == nil {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), m.refreshTimeout())
			err := m.flush(ctx, key, p)
			cancel()
			if err == nil {
				m.logger().Info("a refreshed token held in memory is stored", "app", p.App, "tenant", p.Tenant)
				return
			}
			wait = min(2*wait, time.Second)
		}
	}()
}

// flush writes a pending record; it is forgotten once the store holds it or
// a later refresh.
func (m *Manager) flush(ctx context.Context, key string, p *Record) error {
	stored, err := m.complete(ctx, p)
	switch {
	case err == nil, errors.Is(err, errSuperseded), errors.Is(err, ErrNotFound):
		m.pending.CompareAndDelete(key, p)
		if stored != nil {
			m.cache.Store(key, &cached{stored, m.now()})
		} else {
			m.cache.Delete(key)
		}
		return nil
	}
	return err
}

// Flush writes every token held in memory because the store failed to take
// it, and every failed refresh it could not record (which other replicas
// would otherwise wait out as interrupted), and reports the first failure.
// Call it before a process stops.
func (m *Manager) Flush(ctx context.Context) error {
	var first error
	m.pending.Range(func(k, v any) bool {
		if err := m.flush(ctx, k.(string), v.(*Record)); err != nil && first == nil {
			first = err
		}
		return true
	})
	m.failures.Range(func(k, v any) bool {
		if err := m.flushFailure(ctx, k.(string), v.(*failedRefresh)); err != nil && first == nil {
			first = err
		}
		return true
	})
	return first
}
