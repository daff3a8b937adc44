package connections

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/httptools/httptools/synth"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"
)

// Defaults of a Manager's zero fields.
const (
	DefaultSkew           = 5 * time.Minute
	DefaultRefreshTimeout = 15 * time.Second
	StateLifetime         = 10 * time.Minute
)

// Manager hands out access tokens of connections (it is the
// synth.ConnectionSource of the http handler), refreshes them, and runs the
// connect flow. It is safe for concurrent use; several Managers (replicas)
// may share one PostgreSQL database.
type Manager struct {
	Store Store
	Apps  Apps
	// RedirectURL is the OAuth callback: <public-url>/v1/oauth/callback.
	RedirectURL string
	// Skew: a token that expires within it is refreshed; it is also how long
	// a token is served from memory without asking the store. 0 means 5 min.
	Skew time.Duration
	// RefreshTimeout bounds a token request, which runs on a fresh context
	// (never the caller's, which may be cancelled). 0 means 15 s.
	RefreshTimeout time.Duration
	// HTTPClient sends token requests; nil means http.DefaultClient. Token
	// URLs come from the operator's apps.json, not from manifests.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnRefresh, when set, is told the outcome of every token request:
	// "ok", "needs-reauth" or "failed" (for metrics).
	OnRefresh func(outcome string)

	group singleflight.Group
	cache sync.Map // cacheKey → *cached
}

var _ synth.ConnectionSource = (*Manager)(nil)

type cached struct {
	rec *Record
	at  time.Time
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Manager) skew() time.Duration {
	if m.Skew > 0 {
		return m.Skew
	}
	return DefaultSkew
}

func cacheKey(tenant, app, owner string) string { return tenant + "\x00" + app + "\x00" + owner }

// owner resolves whose connection a need asks for. Never one for the other.
func owner(need synth.ConnectionNeed, person string) (string, error) {
	if need.As == synth.AsCompany {
		return OwnerCompany, nil
	}
	if person == "" {
		return "", synth.PreconditionFailed(synth.ReasonConnectionUnavailable,
			"the tool uses the run's person's %s connection, but the run has no person (as: person never falls back to the company's)", need.App)
	}
	return OwnerPerson(person), nil
}

func whose(ownerID string) string {
	if ownerID == OwnerCompany {
		return "the company"
	}
	return "person " + strings.TrimPrefix(ownerID, "person:")
}

func connectHint(app, ownerID string) string {
	if ownerID == OwnerCompany {
		return fmt.Sprintf(`POST /v1/connections/%s/authorize with {"as":"company"}`, app)
	}
	return fmt.Sprintf(`POST /v1/connections/%s/authorize with {"as":"person","person":%q}`, app, strings.TrimPrefix(ownerID, "person:"))
}

// notConnected is the error for an owner without a connection to app.
func notConnected(app, own string) error {
	return synth.PreconditionFailed(synth.ReasonConnectionUnavailable,
		"%s has no %s connection in this tenant: connect it with %s", whose(own), app, connectHint(app, own))
}

// tokenContext carries HTTPClient to x/oauth2's token requests (its API
// takes the client from the context).
func (m *Manager) tokenContext(ctx context.Context) context.Context {
	if m.HTTPClient == nil {
		return ctx
	}
	return context.WithValue(ctx, oauth2.HTTPClient, m.HTTPClient)
}

// AccessToken implements synth.ConnectionSource.
func (m *Manager) AccessToken(ctx context.Context, req synth.ConnectionRequest) (string, error) {
	need := req.Need
	if _, ok := m.Apps[need.App]; !ok {
		return "", synth.PreconditionFailed(synth.ReasonConnectionUnavailable, "app %q is not configured in apps.json", need.App)
	}
	own, err := owner(need, req.Person)
	if err != nil {
		return "", err
	}
	key := cacheKey(req.Tenant, need.App, own)
	now := m.now()
	var rec *Record
	if c, ok := m.cache.Load(key); ok && req.Rejected == "" {
		c := c.(*cached)
		if now.Sub(c.at) < m.skew() && c.rec.fresh(now, m.skew()) {
			rec = c.rec
		}
	}
	if rec == nil {
		if rec, err = m.Store.Connection(ctx, req.Tenant, need.App, own); err != nil {
			if errors.Is(err, ErrNotFound) {
				return "", notConnected(need.App, own)
			}
			return "", err
		}
	}
	if err := usable(rec, need, own); err != nil {
		m.cache.Delete(key)
		return "", err
	}
	if req.Rejected == "" && rec.fresh(now, m.skew()) {
		m.cache.Store(key, &cached{rec, now})
		return rec.AccessToken, nil
	}
	rec, err = m.refresh(ctx, req.Tenant, need, own, req.Rejected)
	if err != nil {
		return "", err
	}
	m.cache.Store(key, &cached{rec, m.now()})
	return rec.AccessToken, nil
}

// usable checks the status and the permissions of a connection.
func usable(rec *Record, need synth.ConnectionNeed, own string) error {
	if rec.Status != StatusActive {
		return synth.PreconditionFailed(synth.ReasonConnectionNeedsReauth,
			"the %s connection of %s is %s: reconnect it with %s", need.App, whose(own), rec.Status, connectHint(need.App, own))
	}
	var missing []string
	for _, p := range need.Permissions {
		if !slices.Contains(rec.Permissions, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return synth.PreconditionFailed(synth.ReasonConnectionPermissionMissing,
			"the %s connection of %s lacks permission %s: reconnect it with %s to grant it", need.App, whose(own), strings.Join(missing, ", "), connectHint(need.App, own))
	}
	return nil
}

// refresh gets a new access token for a connection: once per connection in
// this process (singleflight) and once across replicas (the row lock), on a
// fresh bounded context.
func (m *Manager) refresh(ctx context.Context, tenant string, need synth.ConnectionNeed, own, rejected string) (*Record, error) {
	key := cacheKey(tenant, need.App, own)
	ch := m.group.DoChan(key, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.refreshTimeout())
		defer cancel()
		return m.refreshLocked(rctx, tenant, need, own, rejected)
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

// errTransient marks a failed token request that leaves the connection
// active.
type errTransient struct{ msg string }

func (e *errTransient) Error() string { return e.msg }

func (m *Manager) refreshLocked(ctx context.Context, tenant string, need synth.ConnectionNeed, own, rejected string) (*Record, error) {
	app := m.Apps[need.App]
	var before *Record
	rec, err := m.Store.UpdateLocked(ctx, tenant, need.App, own, func(cur *Record) (*Record, error) {
		before = cur
		now := m.now()
		switch {
		case cur == nil:
			return nil, ErrNotFound
		case cur.Status != StatusActive:
			return nil, usable(cur, need, own)
		case rejected == "" && cur.fresh(now, m.skew()):
			return nil, nil // another caller or replica refreshed it meanwhile
		case rejected != "" && cur.AccessToken != rejected && cur.fresh(now, 0):
			return nil, nil // refreshed since the upstream refused the old one
		case cur.RefreshToken == "":
			if cur.fresh(now, 0) && rejected == "" {
				return nil, nil // nothing to refresh with yet; serve it while valid
			}
			next := *cur
			next.Status, next.LastError = StatusNeedsReauth, "the access token expired and there is no refresh token"
			return &next, usable(&next, need, own)
		}
		conf := app.oauthConfig(m.RedirectURL, nil)
		tok, err := conf.TokenSource(m.tokenContext(ctx), &oauth2.Token{RefreshToken: cur.RefreshToken}).Token()
		next := *cur
		next.LastRefresh = now
		if err != nil {
			var re *oauth2.RetrieveError
			if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
				m.report("needs-reauth")
				// The refresh token sent is the stored one (we hold the
				// lock): the grant is gone, the person must reconnect.
				next.Status = StatusNeedsReauth
				next.LastError = "invalid_grant: " + re.ErrorDescription
				return &next, usable(&next, need, own)
			}
			next.LastError = describeTokenError(err)
			m.report("failed")
			return &next, &errTransient{next.LastError}
		}
		m.report("ok")
		next.AccessToken = tok.AccessToken
		if tok.RefreshToken != "" {
			next.RefreshToken = tok.RefreshToken // rotated; else keep the old one
		}
		next.Expiry = tok.Expiry
		next.LastError = ""
		if s, ok := tok.Extra("scope").(string); ok && s != "" {
			next.Scopes = strings.Fields(s)
			next.Permissions = app.grantedPermissions(next.Scopes)
		}
		return &next, nil
	})
	var tr *errTransient
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, notConnected(need.App, own)
	case errors.As(err, &tr):
		// The token endpoint failed for now: the connection stays active,
		// and its token serves while it is valid (not when it was refused).
		if before != nil && rejected == "" && before.fresh(m.now(), 0) {
			return before, nil
		}
		return nil, synth.PreconditionFailed(synth.ReasonConnectionUnavailable,
			"refreshing the %s connection of %s failed (%s); it stays connected: try again", need.App, whose(own), tr.msg)
	case err != nil:
		var se *synth.Error
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, fmt.Errorf("connections: refresh: %w", err)
	}
	return rec, nil
}

func (m *Manager) report(outcome string) {
	if m.OnRefresh != nil {
		m.OnRefresh(outcome)
	}
}

// describeTokenError words a token-endpoint failure without its body.
func describeTokenError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		s := "token endpoint answered " + http.StatusText(re.Response.StatusCode)
		if re.ErrorCode != "" {
			s += ": " + re.ErrorCode
		}
		return s
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "token endpoint timed out"
	}
	return "token endpoint unreachable"
}
