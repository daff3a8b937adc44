package connections

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// refusingWrites is a connection store whose writes all fail, counted.
type refusingWrites struct {
	ConnectionStore
	writes atomic.Int64
}

func (s *refusingWrites) UpdateLocked(context.Context, string, string, string, func(*Record) (*Record, error)) (*Record, error) {
	s.writes.Add(1)
	return nil, &StoreError{Op: "write connection", Err: errors.New("the database is away")}
}

// TestCloseStopsTheBackgroundWriters: a refreshed token and a failed
// refresh the store would not take are written again in the background;
// Close ends both writers and returns once they have ended, so no write is
// tried after it (0).
func TestCloseStopsTheBackgroundWriters(t *testing.T) {
	store := &refusingWrites{}
	m := &Manager{Connections: store}
	rec := &Record{Tenant: "t1", App: "google", Owner: OwnerCompany, AccessToken: "a", LastRefresh: time.Now()}
	m.keep(cacheKey("t1", "google", OwnerCompany), rec, errors.New("the database is away"))
	m.retryRecordFailure(cacheKey("t1", "google", "person:u1"), &failedRefresh{cur: rec, next: rec})
	// Both writers tried once: they are running. (testkit.WaitFor's
	// package imports this one.)
	for give := time.Now().Add(2 * time.Minute); store.writes.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(give) {
			t.Fatal("the writers never tried")
		}
	}
	m.Close()
	after := store.writes.Load()
	m.writers.Wait() // returns at once: Close waited for them
	if n := store.writes.Load() - after; n != 0 {
		t.Errorf("%d writes after Close", n)
	}
	m.Close() // twice is fine
}
