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
