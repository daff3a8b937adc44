package connections

// The lease of a refresh (refresh.go's step 1), and its renewal while the
// provider is asked (step 2): who holds it is decided on the store's clock.

import (
	"context"
	"errors"
	"time"

	"github.com/httptools/httptools/synth"
)

// lease re-reads the row and takes its lease, waiting while another
// replica holds it. It returns the row leased to this manager (took), or a
// row that needs no refresh from us (fresh now, or still valid while another
// replica refreshes), or the error to give the caller. takenFrom names the
// owner of a lease that ran out unreleased (a replica that died or froze
// while it asked the provider), which this one took over.
//
// Who holds a lease is decided on the store's clock (StoreClock), never on
// this replica's: a lease taken until the store's time plus LeaseTTL, and
// renewed while the provider is asked (keepLease).
func (m *Manager) lease(ctx context.Context, tenant string, need synth.ConnectionNeed, own, rejected string) (rec *Record, took bool, takenFrom string, err error) {
	wait := 20 * time.Millisecond
	for {
		var seen *Record
		took, takenFrom = false, ""
		leaseNow, err := m.storeNow(ctx)
		if err != nil {
			return nil, false, "", storeUnavailable(err)
		}
		rec, err = m.Connections.UpdateLocked(ctx, tenant, need.App, own, func(cur *Record) (*Record, error) {
			seen = cur
			now := m.now()
			switch {
			case cur == nil:
				return nil, ErrNotFound
			case cur.Status != StatusActive:
				return nil, usable(cur, need, own)
			case rejected == "" && cur.fresh(now, m.skewOf(cur)):
				return nil, nil // another caller or replica refreshed it meanwhile
			case rejected != "" && cur.AccessToken != rejected && cur.fresh(now, 0):
				return nil, nil // refreshed since the upstream refused the old one
			case cur.LeaseOwner != "" && cur.LeaseOwner != m.leaseID() && cur.LeaseUntil.After(leaseNow):
				return nil, errRaced // another replica is asking the provider
			case m.interrupted(cur, leaseNow):
				return nil, errInterrupted // its tokens may still be stored: never present ours meanwhile
			case cur.RefreshToken == "":
				if cur.fresh(now, 0) && rejected == "" {
					return nil, nil // nothing to refresh with yet; serve it while valid
				}
				next := *cur
				next.Status, next.LastError = StatusNeedsReauth, "the access token expired and there is no refresh token"
				return &next, usable(&next, need, own)
			}
			if cur.LeaseOwner != "" && cur.LeaseOwner != m.leaseID() {
				takenFrom = cur.LeaseOwner // it ran out unreleased
			}
			next := *cur
			next.LeaseOwner, next.LeaseUntil = m.leaseID(), leaseNow.Add(m.leaseTTL())
			took = true
			return &next, nil
		})
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, false, "", notConnected(need.App, own)
		case errors.Is(err, errRaced):
			if rejected == "" && seen.fresh(m.now(), 0) {
				return seen, false, "", nil // valid still: serve it, the other replica refreshes
			}
			select {
			case <-ctx.Done():
				return nil, false, "", synth.PreconditionFailed(synth.ReasonConnectionRefreshing,
					"the %s connection of %s is being refreshed by another replica, which did not finish in time: try again", need.App, whose(own))
			case <-time.After(wait):
			}
			wait = min(2*wait, 200*time.Millisecond)
			continue
		case errors.Is(err, errInterrupted):
			if rejected == "" && seen.fresh(m.now(), 0) {
				return seen, false, "", nil // valid still: serve it while the outcome is unknown
			}
			return nil, false, "", m.interruptedRefusal(need, own, seen, leaseNow)
		case errors.Is(err, ErrUnavailable):
			return nil, false, "", storeUnavailable(err)
		case err != nil:
			return nil, false, "", err // usable's verdict
		}
		return rec, took && err == nil, takenFrom, nil
	}
}

// storeNow is the time leases are decided on: the store's (StoreClock), or
// this manager's clock for a store without one.
func (m *Manager) storeNow(ctx context.Context) (time.Time, error) {
	if sc, ok := m.Connections.(StoreClock); ok {
		return sc.StoreNow(ctx)
	}
	return m.now(), nil
}

// keepLease renews the lease of cur every third of LeaseTTL, on the store's
// clock, until the returned stop is called (which waits for a renewal under
// way). A renewal that finds the lease gone stops renewing.
func (m *Manager) keepLease(ctx context.Context, cur *Record) (stop func()) {
	every := m.leaseTTL() / 3
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			leaseNow, err := m.storeNow(ctx)
			if err != nil {
				continue // the store is away: the lease may run out, and complete() copes
			}
			lost := false
			_, err = m.Connections.UpdateLocked(ctx, cur.Tenant, cur.App, cur.Owner, func(row *Record) (*Record, error) {
				if row == nil || row.LeaseOwner != m.leaseID() {
					lost = true
					return nil, nil
				}
				next := *row
				next.LeaseUntil = leaseNow.Add(m.leaseTTL())
				return &next, nil
			})
			if lost {
				return
			}
			_ = err // a failed renewal is tried again at the next tick
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}
