package connections_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/synth"
)

// The leases of a refresh across replicas, each replica a Manager with its
// own clock (skewed 10 minutes either way) on one database: who holds a
// lease is decided on the store's clock only.

// replicaStore is a replica's handle on the shared store. Once dead (the
// process killed or frozen right after it took a lease, or after its token
// request reached the provider), it reads and writes nothing more; before,
// onUpdate (when set) runs before each UpdateLocked.
type replicaStore struct {
	*sqlstore.SQLStore
	dieAfterLease atomic.Bool
	dead          atomic.Bool
	onUpdate      func(n int64)
	updates       atomic.Int64
}

var errDead = &StoreError{Op: "update", Err: errors.New("injected: this replica is dead")}

func (r *replicaStore) StoreNow(ctx context.Context) (time.Time, error) {
	if r.dead.Load() {
		return time.Time{}, errDead
	}
	return r.SQLStore.StoreNow(ctx)
}

func (r *replicaStore) UpdateLocked(ctx context.Context, tenant, app, owner string, fn func(cur *Record) (*Record, error)) (*Record, error) {
	if r.dead.Load() {
		return nil, errDead
	}
	if n := r.updates.Add(1); r.onUpdate != nil {
		r.onUpdate(n)
	}
	rec, err := r.SQLStore.UpdateLocked(ctx, tenant, app, owner, fn)
	if err == nil && rec != nil && rec.LeaseOwner != "" && r.dieAfterLease.Load() {
		r.dead.Store(true)
	}
	return rec, err
}

// testLease is the lease of these tests' managers: short, so that a lease
// that runs out does so quickly.
const testLease = time.Second

// manager is e.manager with the test's lease and clock.
func (e *env) replica(s testStore, now func() time.Time) *Manager {
	m := e.manager(s)
	m.Now, m.LeaseTTL = now, testLease
	return m
}

// skewed is a clock off the true one by d.
func skewed(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }

// blockingClient is a token client whose requests never reach the
// provider: they wait until the test ends (a replica frozen on its request).
func blockingClient(t *testing.T) *http.Client {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
		return nil, errors.New("blocked")
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// expire stores the company connection as expired an hour ago, whatever a
// replica's clock says.
func (e *env) expireHour(t *testing.T, s *sqlstore.SQLStore) {
	t.Helper()
	_, err := s.UpdateLocked(context.Background(), "t1", "google", OwnerCompany, func(cur *Record) (*Record, error) {
		next := *cur
		next.Expiry = time.Now().Add(-time.Hour)
		return &next, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCrashedReplicaNeverCostsTheConnection: replica A (its clock 10
// minutes slow or fast) takes the lease of an expired connection and dies
// while its token request waits on the provider, which may or may not
// have rotated the refresh token. Replica B (true clock) makes 25 calls
// once A's lease has run out: each is refused at once with the retryable
// connection-refreshing (503), with 0 token requests, 0 invalid_grant and
// the connection active (before issue 39, B presented the stored refresh
// token as soon as the lease ran out: had A been cut off from the store
// rather than dead, that token was revoked). Once InterruptedWait has
// passed (a replica with a short one), a call is served: 1 grant. A
// restarted A on a store only it uses (SoleReplica, as serve on SQLite)
// is served at once: there is nobody to wait for.
func TestCrashedReplicaNeverCostsTheConnection(t *testing.T) {
	eachSharedStore(t, func(t *testing.T, a, b *sqlstore.SQLStore) {
		for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute, 0} {
			t.Run(skew.String(), func(t *testing.T) {
				e := newEnv(t)
				e.provider.Rotate = true
				e.connect(t, a, "t1", OwnerCompany, true)
				e.expireHour(t, a)
				tool := e.tool(t, "company")
				dieAfterLease(t, e, a, tool, skew)
				mb := e.replica(b, time.Now)
				var wg sync.WaitGroup
				var refused atomic.Int64
				for range 25 {
					wg.Go(func() {
						if _, err := call(tool, mb, "t1", ""); reason(err) == synth.ReasonConnectionRefreshing {
							refused.Add(1)
						} else {
							t.Errorf("B: %v; want connection-refreshing", err)
						}
					})
				}
				wg.Wait()
				if n, g, i := refused.Load(), e.provider.RefreshGrants.Load(), e.provider.InvalidGrants.Load(); n != 25 || g != 0 || i != 0 {
					t.Errorf("B: %d of 25 refused as connection-refreshing, %d grants, %d invalid_grant; want 25, 0, 0", n, g, i)
				}
				if rec, _ := b.Connection(context.Background(), "t1", "google", OwnerCompany); rec.Status != StatusActive {
					t.Errorf("the connection is %s; want active", rec.Status)
				}
				later := e.replica(b, time.Now)
				later.InterruptedWait = time.Nanosecond // the wait is over
				if _, err := call(tool, later, "t1", ""); err != nil || e.provider.RefreshGrants.Load() != 1 {
					t.Errorf("after the wait: %v, %d grants; want served, 1", err, e.provider.RefreshGrants.Load())
				}
			})
		}
		t.Run("restarted sole replica", func(t *testing.T) {
			e := newEnv(t)
			e.provider.Rotate = true
			e.connect(t, a, "t1", OwnerCompany, true)
			e.expireHour(t, a)
			tool := e.tool(t, "company")
			dieAfterLease(t, e, a, tool, 0)
			restarted := e.replica(a, time.Now)
			restarted.SoleReplica = true
			if _, err := call(tool, restarted, "t1", ""); err != nil || e.provider.RefreshGrants.Load() != 1 {
				t.Errorf("A restarted: %v, %d grants; want served, 1", err, e.provider.RefreshGrants.Load())
			}
		})
	})
}

// dieAfterLease makes a replica on s take the lease of the expired
// company connection and die while its token request waits, then waits
// for its lease to run out on the store's clock.
func dieAfterLease(t *testing.T, e *env, s *sqlstore.SQLStore, tool *synth.Tool, skew time.Duration) {
	t.Helper()
	ra := &replicaStore{SQLStore: s}
	ra.dieAfterLease.Store(true)
	ma := e.replica(ra, skewed(skew))
	ma.HTTPClient = blockingClient(t)
	go call(tool, ma, "t1", "") // takes the lease, then dies
	testkit.WaitFor(t, "A to take the lease and die", ra.dead.Load)
	testkit.WaitFor(t, "A's lease to run out", func() bool {
		rec, err := s.Connection(context.Background(), "t1", "google", OwnerCompany)
		now, nerr := s.StoreNow(context.Background())
		return err == nil && nerr == nil && rec.LeaseOwner != "" && !rec.LeaseUntil.After(now)
	})
}

// TestSlowClockHoldsItsLease: replica A, its clock 10 minutes slow, holds
// the lease while a token endpoint with rotation takes 2 s; replica B (true
// clock) calls meanwhile. B waits for A's token: 1 refresh grant, 0 uses of
// a revoked refresh token, 0 invalid_grant (before: B read A's lease as
// long expired and presented the refresh token A was rotating).
func TestSlowClockHoldsItsLease(t *testing.T) {
	eachSharedStore(t, func(t *testing.T, a, b *sqlstore.SQLStore) {
		e := newEnv(t)
		e.provider.Rotate = true
		e.provider.Delay = 2 * time.Second
		e.connect(t, a, "t1", OwnerCompany, true)
		e.expireHour(t, a)
		tool := e.tool(t, "company")
		ra := &replicaStore{SQLStore: a}
		ma, mb := e.replica(ra, skewed(-10*time.Minute)), e.replica(b, time.Now)
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := call(tool, ma, "t1", ""); err != nil {
				t.Errorf("A: %v", err)
			}
		})
		testkit.WaitFor(t, "A's lease", func() bool {
			rec, err := b.Connection(context.Background(), "t1", "google", OwnerCompany)
			return err == nil && rec.LeaseOwner != ""
		})
		for range 5 {
			wg.Go(func() {
				if _, err := call(tool, mb, "t1", ""); err != nil {
					t.Errorf("B: %v", err)
				}
			})
		}
		wg.Wait()
		if g, r, i := e.provider.RefreshGrants.Load(), e.provider.RevokedRefreshUses.Load(), e.provider.InvalidGrants.Load(); g != 1 || r != 0 || i != 0 {
			t.Errorf("%d grants, %d revoked-token uses, %d invalid_grant; want 1, 0, 0", g, r, i)
		}
	})
}

// TestRaceLoserServesTheWinnersToken: B's token request is refused
// (invalid_grant) because another replica rotated the refresh token
// meanwhile and stored its own refresh: B serves the stored token, the
// connection stays active (before: 409 connection-needs-reauth on a healthy
// row). 0 needs-reauth, the call sent with the winner's token.
func TestRaceLoserServesTheWinnersToken(t *testing.T) {
	eachSharedStore(t, func(t *testing.T, a, b *sqlstore.SQLStore) {
		// The winner's token valid (served), or already expired (the call
		// is to be tried again): never needs-reauth.
		for _, lifetime := range []time.Duration{time.Hour, -time.Minute} {
			e := newEnv(t)
			e.connect(t, a, "t1", OwnerCompany, true)
			tool := e.tool(t, "company")
			winner, _ := e.provider.Issue(time.Hour)
			rb := &replicaStore{SQLStore: b}
			rb.onUpdate = func(n int64) {
				if n != 2 { // 1: B's lease; 2: recording B's failed request
					return
				}
				// Another replica completes its refresh just before.
				a.UpdateLocked(context.Background(), "t1", "google", OwnerCompany, func(cur *Record) (*Record, error) {
					next := *cur
					next.AccessToken, next.RefreshToken = winner, "rt-winner"
					next.Expiry, next.LastRefresh = time.Now().Add(lifetime), time.Now().Add(time.Second)
					return &next, nil
				})
			}
			e.provider.FailNext("invalid_grant")
			tok, err := call(tool, e.replica(rb, time.Now), "t1", "")
			switch {
			case lifetime > 0 && (err != nil || tok != winner):
				t.Errorf("B: %q %v; want the winner's token %q", tok, err, winner)
			case lifetime < 0 && reason(err) != synth.ReasonConnectionRefreshing:
				t.Errorf("B, the winner's token expired: %v; want connection-refreshing (try again), never needs-reauth", err)
			}
			rec, _ := a.Connection(context.Background(), "t1", "google", OwnerCompany)
			if rec.Status != StatusActive || rec.RefreshToken != "rt-winner" {
				t.Errorf("row %s with refresh token %q; want active with the winner's", rec.Status, rec.RefreshToken)
			}
			a.DB().Exec(`DELETE FROM connections`)
		}
	})
}

// TestInterruptedRotationIsLoggedAsSuch: replica A's token request reaches
// the provider, which rotates the refresh token, and A dies before storing
// it (kill -9 right after the provider answered). Until InterruptedWait
// passes, B refuses (connection-refreshing) without presenting the old
// token: 0 invalid_grant. After it, B takes the lease over, presents the
// old token, gets invalid_grant: the connection needs re-authorization (the
// rotated token died with A) and B logs it at ERROR, naming the
// interrupted lease: 1 such record.
func TestInterruptedRotationIsLoggedAsSuch(t *testing.T) {
	eachSharedStore(t, func(t *testing.T, a, b *sqlstore.SQLStore) {
		e := newEnv(t)
		e.provider.Rotate = true
		e.connect(t, a, "t1", OwnerCompany, true)
		tool := e.tool(t, "company")
		ra := &replicaStore{SQLStore: a}
		ma := e.replica(ra, time.Now)
		// A dies as soon as the provider has answered: its writes fail.
		ma.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := http.DefaultTransport.RoundTrip(r)
			ra.dead.Store(true)
			return resp, err
		})}
		call(tool, ma, "t1", "")
		if e.provider.RefreshGrants.Load() != 1 {
			t.Fatalf("A's refresh did not reach the provider")
		}
		// Within the wait: refused, nothing presented.
		if _, err := call(tool, e.replica(b, time.Now), "t1", ""); reason(err) != synth.ReasonConnectionRefreshing || e.provider.InvalidGrants.Load() != 0 {
			t.Fatalf("B within the wait: %v, %d invalid_grant; want connection-refreshing, 0", err, e.provider.InvalidGrants.Load())
		}
		logs := &testkit.Buffer{}
		mb := e.replica(b, time.Now)
		mb.InterruptedWait = time.Nanosecond // the wait is over: A is gone for good
		mb.Logger = slog.New(slog.NewTextHandler(logs, nil))
		_, err := call(tool, mb, "t1", "")
		if reason(err) != synth.ReasonConnectionNeedsReauth {
			t.Fatalf("B: %v; want needs-reauth", err)
		}
		if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), "interrupted_lease=lease_") {
			t.Errorf("%d ERROR records naming the interrupted lease; want 1:\n%s", n, logs)
		}
	})
}

// TestPartitionedHolderKeepsOthersOff: replica A's token request reaches a
// provider that rotates refresh tokens and revokes the whole family when a
// revoked one comes back (RFC 9700); then A is cut off from the store
// before it can write. A keeps serving the new token from memory. Replica
// B, past A's lease, is refused with connection-refreshing and presents
// nothing: 0 revoked tokens presented, 0 invalid_grant, the connection
// active. When A reaches the store again it writes its token, and B is
// served with it: 1 grant in all.
func TestPartitionedHolderKeepsOthersOff(t *testing.T) {
	eachSharedStore(t, func(t *testing.T, a, b *sqlstore.SQLStore) {
		e := newEnv(t)
		e.provider.Rotate, e.provider.RevokeFamilyOnReuse = true, true
		e.connect(t, a, "t1", OwnerCompany, true)
		e.expireHour(t, a)
		tool := e.tool(t, "company")
		ra := &replicaStore{SQLStore: a}
		ma := e.replica(ra, time.Now)
		ma.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := http.DefaultTransport.RoundTrip(r)
			ra.dead.Store(true) // partitioned from the store, alive
			return resp, err
		})}
		tokA, err := call(tool, ma, "t1", "")
		if err != nil || !e.provider.ValidAccess(tokA) {
			t.Fatalf("A: %q %v; want the new token from memory", tokA, err)
		}
		testkit.WaitFor(t, "A's lease to run out", func() bool {
			rec, err := b.Connection(context.Background(), "t1", "google", OwnerCompany)
			now, nerr := b.StoreNow(context.Background())
			return err == nil && nerr == nil && rec.LeaseOwner != "" && !rec.LeaseUntil.After(now)
		})
		mb := e.replica(b, time.Now)
		refused := 0
		for range 10 {
			if _, err := call(tool, mb, "t1", ""); reason(err) == synth.ReasonConnectionRefreshing {
				refused++
			}
			if tok, err := call(tool, ma, "t1", ""); err != nil || tok != tokA {
				t.Errorf("A while cut off: %q %v; want its token from memory", tok, err)
			}
		}
		if r, i := e.provider.RevokedRefreshUses.Load(), e.provider.InvalidGrants.Load(); refused != 10 || r != 0 || i != 0 {
			t.Errorf("B: %d of 10 refused as connection-refreshing, %d revoked tokens presented, %d invalid_grant; want 10, 0, 0", refused, r, i)
		}
		ra.dead.Store(false) // the partition heals: A's retrier stores its token
		testkit.WaitFor(t, "A's token stored", func() bool {
			rec, err := b.Connection(context.Background(), "t1", "google", OwnerCompany)
			return err == nil && rec.AccessToken == tokA && rec.LeaseOwner == ""
		})
		if tok, err := call(tool, mb, "t1", ""); err != nil || tok != tokA {
			t.Errorf("B after the partition: %q %v; want A's token", tok, err)
		}
		rec, _ := b.Connection(context.Background(), "t1", "google", OwnerCompany)
		if g := e.provider.RefreshGrants.Load(); g != 1 || rec.Status != StatusActive || !e.provider.LiveRefreshToken(rec.RefreshToken) {
			t.Errorf("%d grants, status %s, stored refresh token live %v; want 1, active, true", g, rec.Status, e.provider.LiveRefreshToken(rec.RefreshToken))
		}
	})
}

// TestConnectFlowAcrossSkewedReplicas: a connect flow started on a replica
// whose clock is 10 minutes slow and finished on one 10 minutes fast (and
// the other way round) completes, 2 of 2: the flow's expiry is on the
// store's clock (before, the fast replica found the slow one's state
// expired).
func TestConnectFlowAcrossSkewedReplicas(t *testing.T) {
	eachSharedStore(t, func(t *testing.T, a, b *sqlstore.SQLStore) {
		e := newEnv(t)
		done := 0
		for _, order := range [][2]time.Duration{{-10 * time.Minute, 10 * time.Minute}, {10 * time.Minute, -10 * time.Minute}} {
			start, finish := e.replica(a, skewed(order[0])), e.replica(b, skewed(order[1]))
			authURL, err := start.Authorize(context.Background(), "t1", "google", OwnerCompany)
			if err != nil {
				t.Fatal(err)
			}
			state, code := approve(t, authURL)
			if _, err = finish.Callback(context.Background(), state, code); err == nil {
				done++
			} else {
				t.Logf("skew %v then %v: %v", order[0], order[1], err)
			}
		}
		if done != 2 {
			t.Errorf("%d of 2 flows across skewed replicas completed", done)
		}
	})
}

// TestFailedRefreshIsReleasedAfterThePartition: replica A's token request
// fails at the provider (500: nothing issued) just as A is cut off from the
// store, so its lease runs out unreleased. Replica B waits it out as an
// interrupted refresh (connection-refreshing, nothing presented); once A
// reaches the store again it records the failure and releases the lease,
// and B's next call refreshes: 1 grant, 0 invalid_grant, long before
// InterruptedWait.
func TestFailedRefreshIsReleasedAfterThePartition(t *testing.T) {
	eachSharedStore(t, func(t *testing.T, a, b *sqlstore.SQLStore) {
		e := newEnv(t)
		e.provider.Rotate = true
		e.connect(t, a, "t1", OwnerCompany, true)
		e.expireHour(t, a)
		tool := e.tool(t, "company")
		ra := &replicaStore{SQLStore: a}
		ma := e.replica(ra, time.Now)
		ma.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := http.DefaultTransport.RoundTrip(r)
			ra.dead.Store(true)
			return resp, err
		})}
		e.provider.FailNext("500")
		if _, err := call(tool, ma, "t1", ""); reason(err) != synth.ReasonProviderUnavailable {
			t.Fatalf("A: %v; want provider-unavailable", err)
		}
		testkit.WaitFor(t, "A's lease to run out", func() bool {
			rec, err := b.Connection(context.Background(), "t1", "google", OwnerCompany)
			now, nerr := b.StoreNow(context.Background())
			return err == nil && nerr == nil && rec.LeaseOwner != "" && !rec.LeaseUntil.After(now)
		})
		mb := e.replica(b, time.Now)
		if _, err := call(tool, mb, "t1", ""); reason(err) != synth.ReasonConnectionRefreshing {
			t.Fatalf("B while A is cut off: %v; want connection-refreshing", err)
		}
		ra.dead.Store(false)
		testkit.WaitFor(t, "A's lease released", func() bool {
			rec, err := b.Connection(context.Background(), "t1", "google", OwnerCompany)
			return err == nil && rec.LeaseOwner == ""
		})
		if _, err := call(tool, mb, "t1", ""); err != nil {
			t.Errorf("B after the partition: %v", err)
		}
		if g, i := e.provider.RefreshGrants.Load(), e.provider.InvalidGrants.Load(); g != 1 || i != 0 {
			t.Errorf("%d grants, %d invalid_grant; want 1, 0", g, i)
		}
	})
}
