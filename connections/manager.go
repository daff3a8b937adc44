package connections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/synth"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"
)

// Defaults of a Manager's zero fields.
const (
	DefaultSkew           = 5 * time.Minute
	DefaultRefreshTimeout = 15 * time.Second
	DefaultLeaseTTL       = 6 * time.Second
	StateLifetime         = 10 * time.Minute
	// DefaultInterruptedWait is how long an interrupted refresh keeps
	// every other replica from presenting the stored refresh token: a
	// partition shorter than it costs no connection.
	DefaultInterruptedWait = 5 * time.Minute
)

// Manager hands out access tokens of connections (it is the
// synth.ConnectionSource of the http handler), refreshes them, and runs the
// connect flow. It is safe for concurrent use; several Managers (replicas)
// may share one PostgreSQL database.
type Manager struct {
	// Connections keeps the connections; States the pending connect flows
	// (only Authorize and Callback use it). One SQLStore is both.
	Connections ConnectionStore
	States      StateStore
	Apps        Apps
	// RedirectURL is the OAuth callback: <public-url>/v1/oauth/callback.
	RedirectURL string
	// Skew caps how early a token is refreshed: a tenth of its lifetime, at
	// most Skew; the same bound is how long a token is served from memory
	// without asking the store. 0 means 5 min.
	Skew time.Duration
	// RefreshTimeout bounds a token request, which runs on a fresh context
	// (never the caller's, which may be cancelled). 0 means 15 s.
	RefreshTimeout time.Duration
	// HTTPClient sends token requests; nil means http.DefaultClient. Token
	// URLs come from the operator's apps.json, not from manifests.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Discover, when set, finds the Provider of a discovered app (a remote
	// MCP server's authorization server: discovered.go); nil connects
	// apps.json's apps only.
	Discover func(ctx context.Context, app string) (Provider, error)
	// OnRefresh, when set, is told the outcome of every token request:
	// "ok", "needs-reauth" or "failed" (for metrics).
	OnRefresh func(outcome string)

	// LeaseTTL bounds how long a refresh's lease holds other replicas off
	// past its holder's last renewal (renewed every third of it while the
	// provider is asked), so it is about what a replica that dies
	// mid-refresh costs its connection; 0 means DefaultLeaseTTL (6 s).
	LeaseTTL time.Duration
	// InterruptedWait is how long a refresh whose lease ran out unreleased
	// (its replica froze, died or lost the store, perhaps after the
	// provider rotated the refresh token) keeps this manager from
	// presenting the stored refresh token, which that refresh may have
	// revoked: meanwhile a still valid access token is served, and a call
	// that needs a new one gets connection-refreshing (try again), never
	// needs-reauth. The interrupted replica ends the wait by storing what
	// it was given once it reaches the store again. 0 means
	// DefaultInterruptedWait (5 min).
	InterruptedWait time.Duration
	// SoleReplica says no other process uses the store (SQLite, which one
	// process embeds): a lease this manager did not take was taken by an
	// earlier process, which has ended, so its outcome can never be
	// stored and there is nothing to wait for.
	SoleReplica bool
	// Logger receives what the operator should know (a token write being
	// retried); nil means none.
	Logger *slog.Logger

	group   singleflight.Group
	cache   sync.Map // cacheKey → *cached
	pending sync.Map // cacheKey → *Record: issued by the provider, not yet stored
	// failures: cacheKey → *failedRefresh, a failed refresh not yet recorded
	failures sync.Map
	idOnce   sync.Once
	id       string // this manager's lease owner id

	// stopped ends the writers that retry a store write in the background
	// (keep, retryRecordFailure): Close.
	stopOnce, closeOnce sync.Once
	stopped             chan struct{}
	writers             sync.WaitGroup
}

// done is closed by Close.
func (m *Manager) done() chan struct{} {
	m.stopOnce.Do(func() { m.stopped = make(chan struct{}) })
	return m.stopped
}

// Close stops the manager's background writers (a refreshed token or a
// failed refresh the store did not take, retried until it does) and waits
// for them to end (a write under way ends within RefreshTimeout). Call
// Flush first to write what they hold; what they still hold is lost, and
// other replicas then wait at most InterruptedWait for it. The manager
// must not be used after.
func (m *Manager) Close() {
	m.closeOnce.Do(func() { close(m.done()) })
	m.writers.Wait()
}

// pause waits d, or until Close: false when closed.
func (m *Manager) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-m.done():
		return false
	}
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

// sharedNow is the time every replica agrees on, for what one replica
// writes and another reads (a connect flow's expiry): the state store's
// clock (StoreClock), else this manager's.
func (m *Manager) sharedNow(ctx context.Context) time.Time {
	if sc, ok := m.States.(StoreClock); ok {
		if t, err := sc.StoreNow(ctx); err == nil {
			return t
		}
	}
	return m.now()
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
	if !m.known(need.App) {
		return "", synth.PreconditionFailed(synth.ReasonConnectionUnavailable, "app %q is not configured in apps.json", need.App)
	}
	own, err := owner(need, req.Person)
	if err != nil {
		return "", err
	}
	key := cacheKey(req.Tenant, need.App, own)
	now := m.now()
	var rec *Record
	if p := m.pendingOf(key); p != nil {
		// A token the provider issued that the store has not taken yet:
		// it is the only one to use, and the only refresh token to send.
		rec = p
	} else if c, ok := m.cache.Load(key); ok && req.Rejected == "" {
		c := c.(*cached)
		if now.Sub(c.at) < m.skewOf(c.rec) && c.rec.fresh(now, m.skewOf(c.rec)) {
			rec = c.rec
		}
	}
	if rec == nil {
		if rec, err = m.Connections.Connection(ctx, req.Tenant, need.App, own); err != nil {
			if errors.Is(err, ErrNotFound) {
				return "", notConnected(need.App, own)
			}
			return "", storeUnavailable(err)
		}
	}
	if err := usable(rec, need, own); err != nil {
		m.cache.Delete(key)
		return "", err
	}
	if req.Rejected == "" && rec.fresh(now, m.skewOf(rec)) {
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

// skewOf is how early a token is refreshed: a tenth of its lifetime, at
// most Skew (5 minutes), so that a 60-second token is refreshed 6 seconds
// before it expires rather than on every call. A record whose lifetime is
// unknown (no issue time) gets Skew.
func (m *Manager) skewOf(rec *Record) time.Duration {
	skew := m.skew()
	if rec.Expiry.IsZero() || rec.LastRefresh.IsZero() {
		return skew
	}
	if life := rec.Expiry.Sub(rec.LastRefresh); life > 0 {
		return min(skew, life/10)
	}
	return skew
}

// storeUnavailable is the call error for a store that failed: the caller
// may try again; no driver text.
func storeUnavailable(err error) error {
	return &synth.Error{Code: synth.CodePreconditionFailed, Reason: synth.ReasonStoreUnavailable, Err: err,
		Message: "the connection store is unavailable for now: try again shortly"}
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

func (m *Manager) report(outcome string) {
	if m.OnRefresh != nil {
		m.OnRefresh(outcome)
	}
}

// describeTokenError words a token-endpoint failure without its body.
func describeTokenError(err error) string {
	words, said := tokenErrorWords(err)
	if said != "" {
		return words + ": " + said
	}
	return words
}

// tokenErrorWords is describeTokenError in two parts: the service's words,
// and what the provider said (its error code, which it writes as it
// likes), "" when nothing.
func tokenErrorWords(err error) (words, said string) {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return fmt.Sprintf("token endpoint answered %d %s", re.Response.StatusCode, http.StatusText(re.Response.StatusCode)), re.ErrorCode
	}
	return describeTokenFailure(err), ""
}

// describeTokenFailure words a token-endpoint failure that is not an
// answer of the provider's.
func describeTokenFailure(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "token endpoint timed out"
	}
	var de *fetch.DeniedError
	if errors.As(err, &de) {
		// The guard's words name the host and the rule, never a secret.
		return "token endpoint refused by the outbound guard: " + de.Error() + " (serve --allow-cidr opens a range)"
	}
	return "token endpoint unreachable"
}
