package connections

import (
	"context"
	"errors"
	"github.com/httptools/httptools/internal/ids"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/synth"
	"golang.org/x/oauth2"
)

// A refresh, across any number of replicas, runs in three short steps with no
// transaction open while the provider is asked:
//
//  1. lease: in one transaction on the row, re-check (another replica may
//     have refreshed), then mark the row leased to this manager until
//     LeaseTTL past the store's time (StoreClock: never a replica's own
//     clock); a row leased to another is waited on, polling, or its old
//     token served while it is still valid;
//  2. ask the provider with the stored refresh token, renewing the lease
//     every third of LeaseTTL meanwhile: a replica that dies here holds
//     the others off for at most LeaseTTL;
//  3. complete: in one transaction, write the new tokens and clear the
//     lease, if the lease is still ours or the row holds an older refresh.
//
// A token the provider issued is never dropped: if the write of step 3
// fails (the database restarted, the disk is full), the new record is kept
// in memory, served, and written again in the background until the store
// takes it. While it is pending, this manager never refreshes from the
// store's row, whose refresh token the provider may have revoked; the row's
// lease keeps other replicas off it meanwhile.

// errRaced: the row changed between the read and the lease; read again.
var errRaced = errors.New("connections: the row changed")

// errSuperseded: the row holds a later refresh than the one being written.
var errSuperseded = errors.New("connections: a later refresh is stored")

// errInterrupted: another replica's lease ran out unreleased less than
// InterruptedWait ago; what its refresh got is not known yet.
var errInterrupted = errors.New("connections: another replica's refresh was interrupted")

func (m *Manager) interruptedWait() time.Duration {
	if m.InterruptedWait > 0 {
		return m.InterruptedWait
	}
	return DefaultInterruptedWait
}

// interrupted reports whether cur's lease, run out at the store's time
// now, was taken by another replica whose refresh may still be stored: it
// froze, or lost the store after the provider answered (then it holds the
// new tokens in memory and writes them once it can). Until it does, or
// InterruptedWait passes, the stored refresh token may be one the provider
// has revoked, and presenting it again could cost the connection for good
// (a provider that revokes the whole family on reuse, RFC 9700 4.14.2).
// A sole replica has nobody to wait for.
func (m *Manager) interrupted(cur *Record, now time.Time) bool {
	return cur.LeaseOwner != "" && cur.LeaseOwner != m.leaseID() && !m.SoleReplica &&
		now.Sub(cur.LeaseUntil) < m.interruptedWait()
}

// interruptedRefusal is the retryable answer while another replica's
// interrupted refresh may still be stored.
func (m *Manager) interruptedRefusal(need synth.ConnectionNeed, own string, cur *Record, now time.Time) error {
	left := max(m.interruptedWait()-now.Sub(cur.LeaseUntil), 0).Round(time.Second)
	return synth.PreconditionFailed(synth.ReasonConnectionRefreshing,
		"a refresh of the %s connection of %s by another replica was interrupted before its tokens were stored (that replica lost the store, or stopped); the stored refresh token may no longer be valid, so it is not sent until that replica stores them, or for %s more: try again shortly (nothing needs reconnecting)",
		need.App, whose(own), left)
}

func (m *Manager) leaseID() string {
	m.idOnce.Do(func() { m.id = ids.New("lease_") })
	return m.id
}

func (m *Manager) leaseTTL() time.Duration {
	if m.LeaseTTL > 0 {
		return m.LeaseTTL
	}
	return DefaultLeaseTTL
}

var discard = slog.New(slog.DiscardHandler)

func (m *Manager) logger() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return discard
}

// pendingOf returns the record issued for key that the store has not taken.
func (m *Manager) pendingOf(key string) *Record {
	if p, ok := m.pending.Load(key); ok {
		return p.(*Record)
	}
	return nil
}

// refresh gets a new access token for a connection: once per connection in
// this process (singleflight) and once across replicas (the lease), on a
// fresh bounded context.
func (m *Manager) refresh(ctx context.Context, tenant string, need synth.ConnectionNeed, own, rejected string) (*Record, error) {
	key := cacheKey(tenant, need.App, own)
	ch := m.group.DoChan(key, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.refreshTimeout())
		defer cancel()
		return m.refreshOnce(rctx, tenant, need, own, rejected)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Record), nil
	}
}

func (m *Manager) refreshOnce(ctx context.Context, tenant string, need synth.ConnectionNeed, own, rejected string) (*Record, error) {
	key := cacheKey(tenant, need.App, own)
	if p := m.pendingOf(key); p != nil {
		// Store what we hold before anything else: the row's refresh
		// token may be the one the provider revoked when it issued ours.
		if err := m.flush(ctx, key, p); err != nil {
			if rejected != p.AccessToken && p.fresh(m.now(), 0) {
				return p, nil
			}
			return nil, storeUnavailable(err)
		}
	}
	cur, took, takenFrom, err := m.lease(ctx, tenant, need, own, rejected)
	if err != nil || !took {
		return cur, err // an error, or a token someone else refreshed (or that may still serve)
	}
	// The lease is renewed while the provider is asked: held as long as
	// this replica lives, and at most LeaseTTL past its death.
	stop := m.keepLease(ctx, cur)
	tok, grants, terr := m.renew(ctx, need.App, cur.RefreshToken)
	stop()
	if terr != nil {
		return m.refreshFailed(ctx, cur, need, own, rejected, takenFrom, terr)
	}
	if err := bearerOnly(tok); err != nil {
		return m.refreshFailed(ctx, cur, need, own, rejected, takenFrom, err)
	}
	issued := m.now()
	m.report("ok")
	next := *cur
	next.AccessToken = tok.AccessToken
	if tok.RefreshToken != "" {
		next.RefreshToken = tok.RefreshToken // rotated; else keep the old one
	}
	next.Expiry = tok.Expiry
	if tok.ExpiresIn > 0 {
		// On the manager's clock, so that the lifetime (and the skew)
		// is what the provider said.
		next.Expiry = issued.Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	next.LastRefresh = issued
	next.LastError = ""
	next.LeaseOwner, next.LeaseUntil = "", time.Time{}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		next.Scopes = strings.Fields(s)
		next.Permissions = grants(next.Scopes)
	}
	stored, err := m.complete(ctx, &next)
	switch {
	case errors.Is(err, errSuperseded):
		return stored, nil
	case err != nil:
		m.keep(key, &next, err)
		return &next, nil
	}
	return stored, nil
}

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

// refreshFailed records a failed token request and releases the lease.
// The connection needs re-authorization only when the provider refused the
// refresh token (invalid_grant) and the store still holds that token: if
// another replica refreshed meanwhile (its rotated token stored, or a later
// refresh), its row stands and its token is served.
func (m *Manager) refreshFailed(ctx context.Context, cur *Record, need synth.ConnectionNeed, own, rejected, takenFrom string, terr error) (*Record, error) {
	secrets := &redact.Set{}
	secrets.Add(cur.RefreshToken, cur.AccessToken)
	next := *cur // LastRefresh stays: it dates the tokens held, not the attempt
	next.LeaseOwner, next.LeaseUntil = "", time.Time{}
	var re *oauth2.RetrieveError
	invalid := errors.As(terr, &re) && re.ErrorCode == "invalid_grant"
	if invalid {
		next.Status = StatusNeedsReauth
		next.LastError = secrets.Redact("invalid_grant: " + re.ErrorDescription)
	} else {
		m.report("failed")
		next.LastError = describeTokenError(terr)
	}
	row, superseded, err := m.recordFailure(ctx, cur, &next, invalid)
	if err != nil {
		// The outcome is known here, but not to the other replicas, which
		// will wait out an interrupted refresh: record it once the store
		// takes it.
		m.logger().Warn("a failed token refresh could not be recorded; it is retried in the background", "app", cur.App, "error", words(err))
		m.retryRecordFailure(cacheKey(cur.Tenant, cur.App, cur.Owner), &failedRefresh{cur: cur, next: &next, invalid: invalid})
	}
	if superseded && row != nil && row.Status == StatusActive {
		// The race was lost, not the grant: the winner's token serves, and
		// the connection is never marked for a token no longer stored.
		if row.fresh(m.now(), 0) && row.AccessToken != rejected {
			m.logger().Info("a token refresh lost a race to another replica's; its token is used", "app", cur.App, "tenant", cur.Tenant)
			return row, nil
		}
		return nil, synth.PreconditionFailed(synth.ReasonConnectionRefreshing,
			"the %s connection of %s was refreshed by another replica meanwhile: try again", need.App, whose(own))
	}
	if invalid {
		m.report("needs-reauth")
		if takenFrom != "" {
			m.logger().Error("the provider refused a refresh token after a refresh by another replica was interrupted: that replica may have been given a rotated refresh token and died before storing it; the person must connect again (POST /v1/connections/{app}/authorize)",
				"app", cur.App, "tenant", cur.Tenant, "owner", cur.Owner, "interrupted_lease", takenFrom)
		} else {
			m.logger().Warn("the provider refused the refresh token (invalid_grant): the connection needs to be connected again",
				"app", cur.App, "tenant", cur.Tenant, "owner", cur.Owner)
		}
		return nil, usable(&next, need, own)
	}
	// The token endpoint failed for now: the connection stays active, and
	// its token serves while it is valid (not when it was refused).
	if rejected == "" && cur.fresh(m.now(), 0) {
		return cur, nil
	}
	// The provider's error code is its words: Outside.
	words, said := tokenErrorWords(terr)
	failed := synth.PreconditionFailed(synth.ReasonProviderUnavailable,
		"refreshing the %s connection of %s failed (%s); it stays connected: try again shortly", need.App, whose(own), words)
	failed.Outside = secrets.Redact(said)
	return nil, failed
}

// recordFailure writes next, the record of a failed token request for cur,
// and releases this manager's lease, unless another replica refreshed (or
// revoked) meanwhile: superseded, with the row as it is.
func (m *Manager) recordFailure(ctx context.Context, cur, next *Record, invalid bool) (row *Record, superseded bool, err error) {
	_, err = m.Connections.UpdateLocked(ctx, cur.Tenant, cur.App, cur.Owner, func(r *Record) (*Record, error) {
		row = r
		switch {
		case r == nil:
			return nil, nil
		case r.RefreshToken != cur.RefreshToken || r.LastRefresh.After(cur.LastRefresh) || r.Status != StatusActive:
			superseded = true // refreshed (or revoked) by another meanwhile: theirs stands
			return nil, nil
		case !invalid && r.LeaseOwner != m.leaseID():
			return nil, nil // the lease ran out and another replica took over
		}
		out := *next
		if r.LeaseOwner != m.leaseID() {
			out.LeaseOwner, out.LeaseUntil = r.LeaseOwner, r.LeaseUntil // another's lease stays
		}
		return &out, nil
	})
	return row, superseded, err
}

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

// complete writes a refreshed record if the lease is still ours, or if the
// row holds an older refresh (our lease ran out, but nobody refreshed since).
// A row holding a later refresh wins: errSuperseded, with that row.
func (m *Manager) complete(ctx context.Context, next *Record) (*Record, error) {
	return m.Connections.UpdateLocked(ctx, next.Tenant, next.App, next.Owner, func(cur *Record) (*Record, error) {
		switch {
		case cur == nil:
			return nil, ErrNotFound // revoked and deleted meanwhile
		case cur.Status == StatusRevoked:
			return nil, errSuperseded
		case cur.LeaseOwner == m.leaseID() || cur.LastRefresh.Before(next.LastRefresh):
			out := *next
			return &out, nil
		}
		return nil, errSuperseded
	})
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

// renew asks app's token endpoint for a token for refreshToken, and what
// maps granted scopes to permissions.
func (m *Manager) renew(ctx context.Context, app, refreshToken string) (*oauth2.Token, func([]string) []string, error) {
	if a, ok := m.Apps[app]; ok {
		tok, err := a.oauthConfig(m.RedirectURL, nil).TokenSource(m.tokenContext(ctx), &oauth2.Token{RefreshToken: refreshToken}).Token()
		return tok, a.grantedPermissions, err
	}
	p, err := m.provider(ctx, app)
	if err != nil {
		return nil, nil, err
	}
	tok, err := p.Refresh(ctx, refreshToken)
	return tok, slices.Clone[[]string], err
}
