package connections_test

import (
	"context"
	"errors"
	"fmt"
	. "github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/testkit"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/synth"
)

// failingStore is a real store whose writes of refreshed tokens fail, as
// they do when PostgreSQL restarts or the disk fills after the provider has
// answered: the write reaches the database and is refused there.
type failingStore struct {
	*sqlstore.SQLStore
	fails atomic.Int64 // token writes still to refuse
	tried atomic.Int64 // token writes attempted
}

func (f *failingStore) UpdateLocked(ctx context.Context, tenant, app, owner string, fn func(*Record) (*Record, error)) (*Record, error) {
	injected := false
	rec, err := f.SQLStore.UpdateLocked(ctx, tenant, app, owner, func(cur *Record) (*Record, error) {
		next, err := fn(cur)
		if next != nil && cur != nil && next.AccessToken != cur.AccessToken {
			f.tried.Add(1)
			if f.fails.Add(-1) >= 0 {
				injected = true
				return nil, nil // roll back: nothing is written
			}
		}
		return next, err
	})
	if injected {
		return nil, &StoreError{Op: "write connection", Err: errors.New("injected: the server closed the connection")}
	}
	return rec, err
}

// waitFor polls cond, for state that a background writer changes; it never
// asserts a duration.
var waitFor = testkit.WaitFor

// TestRotatedTokenSurvivesFailedWrites: the provider rotates the refresh
// token, and the store refuses the next 3 writes of the result. Every call
// succeeds with the new access token, the rotated refresh token reaches the
// store once it takes writes again, and when the token must be refreshed
// again while the write is still refused, the refresh uses the rotated
// token held in memory: the provider sees 0 uses of a revoked token.
func TestRotatedTokenSurvivesFailedWrites(t *testing.T) {
	eachStore(t, func(t *testing.T, s *sqlstore.SQLStore) {
		e := newEnv(t)
		e.provider.Rotate = true
		old := e.connect(t, s, "t1", OwnerPerson("u1"), true)
		fs := &failingStore{SQLStore: s}
		fs.fails.Store(3)
		m := e.manager(fs)
		tool := e.tool(t, "person")
		tok, err := call(tool, m, "t1", "u1")
		if err != nil || tok == old.AccessToken || !e.provider.ValidAccess(tok) {
			t.Fatalf("first call: token %q, %v; want the new token", tok, err)
		}
		held := m.PendingOf("t1", "google", OwnerPerson("u1"))
		for range 5 {
			if got, err := call(tool, m, "t1", "u1"); err != nil || got != tok {
				t.Fatalf("call while the write is refused: %q, %v", got, err)
			}
		}
		// The store holds it, and the background write has done all it
		// does (the token no longer pending, the stored record cached in
		// place of the held one): else it could cache the record after the
		// clock moves below, and the next call would take that instead of
		// refreshing.
		waitFor(t, "the rotated refresh token in the store", func() bool {
			st, err := s.Connection(context.Background(), "t1", "google", OwnerPerson("u1"))
			c := m.CachedOf("t1", "google", OwnerPerson("u1"))
			return err == nil && st.AccessToken == tok && e.provider.LiveRefreshToken(st.RefreshToken) &&
				m.PendingOf("t1", "google", OwnerPerson("u1")) == nil && c != nil && c != held
		})
		// Again, and this time the token expires while its write is refused.
		fs.fails.Store(1000)
		s.UpdateLocked(context.Background(), "t1", "google", OwnerPerson("u1"), func(cur *Record) (*Record, error) {
			next := *cur
			next.Expiry = e.clock.Now().Add(-time.Minute)
			return &next, nil
		})
		e.clock.Advance(DefaultSkew + time.Second) // past the memory cache
		tok2, err := call(tool, m, "t1", "u1")
		if err != nil || tok2 == tok {
			t.Fatalf("second refresh: %q, %v", tok2, err)
		}
		pending := m.PendingOf("t1", "google", OwnerPerson("u1"))
		if pending == nil || pending.AccessToken != tok2 {
			t.Fatalf("the second token is not held in memory")
		}
		// Expired again in memory: a third refresh must send the held
		// refresh token, never the stored (revoked) one.
		pending.Expiry = e.clock.Now().Add(-time.Minute)
		tok3, err := call(tool, m, "t1", "u1")
		if err == nil {
			t.Logf("third call used %q", tok3)
		}
		fs.fails.Store(0)
		if err := m.Flush(context.Background()); err != nil {
			t.Fatalf("flush: %v", err)
		}
		stored, _ := s.Connection(context.Background(), "t1", "google", OwnerPerson("u1"))
		if !e.provider.LiveRefreshToken(stored.RefreshToken) {
			t.Errorf("the stored refresh token %s is not the live one", stored.RefreshToken)
		}
		if r := e.provider.RevokedRefreshUses.Load(); r != 0 {
			t.Errorf("%d uses of a revoked refresh token, want 0", r)
		}
		if i := e.provider.InvalidGrants.Load(); i != 0 {
			t.Errorf("%d invalid_grant answers, want 0", i)
		}
		t.Logf("%d refresh grants, %d token writes tried", e.provider.RefreshGrants.Load(), fs.tried.Load())
	})
}

// TestSkewFollowsTheLifetime: tokens of 60, 300 and 3600 s, one call every
// twentieth of the lifetime for three lifetimes: 3 refreshes each (with a
// fixed 5-minute skew, 60 s and 300 s tokens were refreshed on all 60 calls).
func TestSkewFollowsTheLifetime(t *testing.T) {
	eachStore(t, func(t *testing.T, s *sqlstore.SQLStore) {
		for _, life := range []time.Duration{60 * time.Second, 300 * time.Second, 3600 * time.Second} {
			t.Run(life.String(), func(t *testing.T) {
				e := newEnv(t)
				e.provider.AccessLifetime = life
				access, refresh := e.provider.Issue(life)
				owner := OwnerPerson(fmt.Sprint("u", life))
				if _, err := s.SaveConnection(context.Background(), &Record{Tenant: "t1", App: "google", Owner: owner,
					Permissions: []string{"gmail.send"}, AccessToken: access, RefreshToken: refresh,
					Expiry: e.clock.Now().Add(life), LastRefresh: e.clock.Now()}); err != nil {
					t.Fatal(err)
				}
				m := e.manager(s)
				tool := e.tool(t, "person")
				for range 60 {
					if _, err := call(tool, m, "t1", strings.TrimPrefix(owner, "person:")); err != nil {
						t.Fatal(err)
					}
					e.clock.Advance(life / 20)
				}
				if n := e.provider.RefreshGrants.Load(); n != 3 {
					t.Errorf("%v tokens: %d refreshes in 60 calls over 3 lifetimes, want 3", life, n)
				}
			})
		}
	})
}

// TestReplicasWithASlowTokenEndpoint: two managers on one database, 60 s
// tokens, a token endpoint that takes 1 s, 64 concurrent calls on an
// expired connection: 1 refresh, 0 failures (the write lock was held across
// the token request: 20 refreshes and failed writes on SQLite).
func TestReplicasWithASlowTokenEndpoint(t *testing.T) {
	eachSharedStore(t, func(t *testing.T, a, b *sqlstore.SQLStore) {
		e := newEnv(t)
		e.provider.AccessLifetime = time.Minute
		e.provider.Delay = time.Second
		if g, f := e.loadReplicas(t, a, b, 64); g != 1 || f != 0 {
			t.Errorf("%d refresh grants and %d failed calls, want 1 and 0", g, f)
		}
	})
}

// TestSharedRefreshErrorNamesEachTool: two tools on one expired connection
// whose refresh fails get the one error of the shared refresh; each must
// name its own tool, and no error is written to after it is returned (run
// with -race).
func TestSharedRefreshErrorNamesEachTool(t *testing.T) {
	e := newEnv(t)
	s := openSQLite(t, "")
	e.connect(t, s, "t1", OwnerCompany, true)
	e.provider.Delay = 50 * time.Millisecond
	e.provider.FailNext("500", "500", "500", "500", "500", "500", "500", "500")
	m := e.manager(s)
	m.Now = func() time.Time { return e.clock.Now().Add(2 * time.Hour) } // the old token is expired, not only due
	tools := []*synth.Tool{e.tool(t, "company"), e.toolWithID(t, "gmail.other", "company")}
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = tools[i%2].Invoke(context.Background(), synth.CallContext{Tenant: "t1", Connections: m}, []byte(`{}`), synth.InvokeOptions{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		var se *synth.Error
		if !errors.As(err, &se) || se.Reason != synth.ReasonProviderUnavailable {
			t.Fatalf("call %d: %v", i, err)
		}
		want := tools[i%2].ID()
		if se.ToolID != want || !strings.Contains(se.Message, fmt.Sprintf("%q", want)) {
			t.Errorf("call %d of %s: ToolID %q, message %q", i, want, se.ToolID, se.Message)
		}
	}
}

// unavailableStore fails every call, as a store does when its database is
// down.
type unavailableStore struct{ testStore }

var errDown = &StoreError{Op: "read connection", Err: errors.New(`failed to connect to user=postgres database=prod host=10.0.0.5: connection refused`)}

func (unavailableStore) Connection(context.Context, string, string, string) (*Record, error) {
	return nil, errDown
}

// TestStoreOutageIsNotTheCallersFault: a store that is down gives
// store-unavailable, never a connection or secret error, and no word of
// the driver's.
func TestStoreOutageIsNotTheCallersFault(t *testing.T) {
	e := newEnv(t)
	m := e.manager(unavailableStore{openSQLite(t, "")})
	_, err := call(e.tool(t, "company"), m, "t1", "")
	var se *synth.Error
	if !errors.As(err, &se) || se.Reason != synth.ReasonStoreUnavailable {
		t.Fatalf("got %v, want store-unavailable", err)
	}
	for _, word := range []string{"postgres", "prod", "10.0.0.5", "refused"} {
		if strings.Contains(se.Message, word) {
			t.Errorf("the message %q names %q", se.Message, word)
		}
	}
}
