package connections_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/testkit"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	toolstest "github.com/httptools/httptools/httptest"
	"github.com/httptools/httptools/synth"
)

// env is a fake OAuth provider, a fake API that accepts only the provider's
// live access tokens, a store and a manager.
type env struct {
	provider *toolstest.OAuthProvider
	api      *httptest.Server
	apiCalls atomic.Int64
	mu       sync.Mutex
	seen     []string // bearer tokens the API received
	apps     Apps
	clock    *testkit.Clock
	loader   *synth.Loader
}

func newEnv(t *testing.T) *env {
	e := &env{provider: toolstest.NewOAuthProvider(), clock: testkit.NewClock()}
	t.Cleanup(e.provider.Close)
	e.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.apiCalls.Add(1)
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		e.mu.Lock()
		e.seen = append(e.seen, tok)
		e.mu.Unlock()
		if !e.provider.ValidAccess(tok) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		// Reversed: an echo of the credential itself is masked in the
		// output (issue 39), and the tests need to know which was sent.
		fmt.Fprintf(w, `{"sent_with_reversed":%q}`, reverse(tok))
	}))
	t.Cleanup(e.api.Close)
	apps, err := ParseApps([]byte(fmt.Sprintf(`{"apps":{"google":{"authURL":%q,"tokenURL":%q,"clientID":"client-1","clientSecretEnv":"GOOGLE_SECRET","authStyle":"params",
		"authParams":{"access_type":"offline"},
		"permissions":{"gmail.send":["https://mail/send"],"gmail.read":["https://mail/read"]}}}}`, e.provider.AuthURL(), e.provider.TokenURL())),
		func(string) string { return "secret-1" })
	if err != nil {
		t.Fatal(err)
	}
	e.apps = apps
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})))
	e.loader = &synth.Loader{Registry: reg}
	return e
}

func (e *env) manager(s testStore) *Manager {
	return &Manager{Connections: s, States: s, Apps: e.apps, RedirectURL: "http://127.0.0.1:8080/v1/oauth/callback", Now: e.clock.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// connect stores a connection whose tokens the provider issued; expired
// makes the stored expiry lie in the past (the provider still accepts it).
func (e *env) connect(t *testing.T, s testStore, tenant, owner string, expired bool) *Record {
	access, refresh := e.provider.Issue(time.Hour)
	exp := e.clock.Now().Add(time.Hour)
	if expired {
		exp = e.clock.Now().Add(-time.Minute)
	}
	rec, err := s.SaveConnection(context.Background(), &Record{Tenant: tenant, App: "google", Owner: owner,
		Permissions: []string{"gmail.send"}, Scopes: []string{"https://mail/send"},
		AccessToken: access, RefreshToken: refresh, Expiry: exp})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (e *env) tool(t *testing.T, as string, perms ...string) *synth.Tool {
	return e.toolWithID(t, "gmail.send", as, perms...)
}

func (e *env) toolWithID(t *testing.T, id, as string, perms ...string) *synth.Tool {
	if perms == nil {
		perms = []string{"gmail.send"}
	}
	p, _ := json.Marshal(perms)
	tool, err := e.loader.Load([]byte(`{"id":"` + id + `","description":"d","version":"1.0.0","mutating":true,
		"input":{"type":"object"},"output":{"type":"object"},
		"needsSpec":{"connections":{"gmail":{"app":"google","permissions":` + string(p) + `,"as":"` + as + `"}}},
		"spec":{"kind":"http","method":"POST","urlTemplate":"` + e.api.URL + `/send","authorization":{"kind":"connection","connection":"gmail"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func call(tool *synth.Tool, m *Manager, tenant, person string) (string, error) {
	res, err := tool.Invoke(context.Background(), synth.CallContext{Tenant: tenant, Person: person, Connections: m}, json.RawMessage(`{"raw":"x"}`), synth.InvokeOptions{})
	if err != nil {
		return "", err
	}
	var out struct {
		SentWith string `json:"sent_with_reversed"`
	}
	json.Unmarshal(res.Output, &out)
	return reverse(out.SentWith), nil
}

// reverse is s backwards (tokens are ASCII).
func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

func reason(err error) string {
	var e *synth.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return fmt.Sprint(err)
}

// TestConcurrentCallsRefreshOnce: 50 concurrent calls on one expired
// connection make exactly one refresh grant, and all 50 use the new token.
func TestConcurrentCallsRefreshOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, s *sqlstore.SQLStore) {
		e := newEnv(t)
		old := e.connect(t, s, "t1", OwnerPerson("u1"), true)
		m := e.manager(s)
		tool := e.tool(t, "person")
		var wg sync.WaitGroup
		tokens := make([]string, 50)
		errs := make([]error, 50)
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tokens[i], errs[i] = call(tool, m, "t1", "u1")
			}()
		}
		wg.Wait()
		stored, _ := s.Connection(context.Background(), "t1", "google", OwnerPerson("u1"))
		for i := range 50 {
			if errs[i] != nil || tokens[i] != stored.AccessToken || tokens[i] == old.AccessToken {
				t.Fatalf("call %d: token %q, err %v; want the new token %q", i, tokens[i], errs[i], stored.AccessToken)
			}
		}
		if n := e.provider.RefreshGrants.Load(); n != 1 {
			t.Errorf("%d refresh grants, want 1", n)
		}
		if stored.RefreshToken != old.RefreshToken {
			t.Errorf("no rotation, yet the refresh token changed: %q", stored.RefreshToken)
		}
	})
}

// TestTwoReplicasRefreshOnce: two managers (two replicas) with their own
// connection pools on one database, 50 concurrent calls each on the same
// expired connection: exactly one refresh grant.
func TestTwoReplicasRefreshOnce(t *testing.T) {
	eachSharedStore(t, func(t *testing.T, a, b *sqlstore.SQLStore) {
		e := newEnv(t)
		if g, f := e.loadReplicas(t, a, b, 100); g != 1 || f != 0 {
			t.Errorf("%d refresh grants and %d failed calls, want 1 and 0", g, f)
		}
	})
}

// eachSharedStore runs f with two stores (two replicas' pools) on one
// database: PostgreSQL and a SQLite file.
func eachSharedStore(t *testing.T, f func(t *testing.T, a, b *sqlstore.SQLStore)) {
	t.Run("postgres", func(t *testing.T) {
		dsn := postgresDSN(t)
		f(t, openPostgres(t, dsn), openPostgres(t, dsn))
	})
	t.Run("sqlite", func(t *testing.T) {
		path := t.TempDir() + "/shared.db"
		f(t, openSQLite(t, path), openSQLite(t, path))
	})
}

// loadReplicas stores an expired company connection through a, then makes
// n concurrent calls split over a manager on a and one on b; it returns the
// refresh grants and the failed calls.
func (e *env) loadReplicas(t *testing.T, a, b *sqlstore.SQLStore, n int) (grants, failed int64) {
	e.connect(t, a, "t1", OwnerCompany, true)
	tool := e.tool(t, "company")
	ms := []*Manager{e.manager(a), e.manager(b)}
	var wg sync.WaitGroup
	var fails atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := call(tool, ms[i%2], "t1", ""); err != nil {
				fails.Add(1)
				t.Log(err)
			}
		}()
	}
	wg.Wait()
	return e.provider.RefreshGrants.Load(), fails.Load()
}

// TestRotationNeverLosesTheRefreshToken: 20 refresh cycles with rotation on
// and 10 concurrent callers each: the stored refresh token is always the
// provider's live one, and no request ever presents a revoked one.
func TestRotationNeverLosesTheRefreshToken(t *testing.T) {
	eachStore(t, func(t *testing.T, s *sqlstore.SQLStore) {
		e := newEnv(t)
		e.provider.Rotate = true
		e.provider.AccessLifetime = 24 * time.Hour
		e.connect(t, s, "t1", OwnerPerson("u1"), true)
		ms := []*Manager{e.manager(s), e.manager(s)}
		tool := e.tool(t, "person")
		for cycle := range 20 {
			var wg sync.WaitGroup
			for i := range 10 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := call(tool, ms[i%2], "t1", "u1"); err != nil {
						t.Errorf("cycle %d: %v", cycle, err)
					}
				}()
			}
			wg.Wait()
			stored, _ := s.Connection(context.Background(), "t1", "google", OwnerPerson("u1"))
			if !e.provider.LiveRefreshToken(stored.RefreshToken) {
				t.Fatalf("cycle %d: the stored refresh token %s is not the live one", cycle, stored.RefreshToken)
			}
			// Time passes: the token expires, and the managers' memory of it
			// (kept for at most one skew) is stale.
			s.UpdateLocked(context.Background(), "t1", "google", OwnerPerson("u1"), func(cur *Record) (*Record, error) {
				next := *cur
				next.Expiry = e.clock.Now().Add(-time.Minute)
				return &next, nil
			})
			e.clock.Advance(DefaultSkew + time.Second)
		}
		if g, r := e.provider.RefreshGrants.Load(), e.provider.RevokedRefreshUses.Load(); g != 20 || r != 0 {
			t.Errorf("%d refresh grants, %d uses of revoked tokens; want 20 and 0", g, r)
		}
	})
}

// TestInvalidGrantNeedsReauth: invalid_grant marks the connection
// needs-reauth, keeps the row, and later calls make no token request.
func TestInvalidGrantNeedsReauth(t *testing.T) {
	eachStore(t, func(t *testing.T, s *sqlstore.SQLStore) {
		e := newEnv(t)
		rec := e.connect(t, s, "t1", OwnerPerson("u1"), true)
		e.provider.FailNext("invalid_grant")
		m := e.manager(s)
		tool := e.tool(t, "person")
		_, err := call(tool, m, "t1", "u1")
		if reason(err) != synth.ReasonConnectionNeedsReauth || !strings.Contains(err.Error(), "POST /v1/connections/google/authorize") {
			t.Fatalf("got %v", err)
		}
		for range 5 {
			if _, err := call(tool, m, "t1", "u1"); reason(err) != synth.ReasonConnectionNeedsReauth {
				t.Fatalf("later call: %v", err)
			}
		}
		stored, err := s.Connection(context.Background(), "t1", "google", OwnerPerson("u1"))
		if err != nil || stored.Status != StatusNeedsReauth || stored.ID != rec.ID || stored.RefreshToken != rec.RefreshToken {
			t.Errorf("stored %+v, %v", stored, err)
		}
		if g, i := e.provider.RefreshGrants.Load(), e.provider.InvalidGrants.Load(); g != 0 || i != 1 {
			t.Errorf("%d grants, %d invalid_grant answers; want 0 and 1", g, i)
		}
		if e.apiCalls.Load() != 0 {
			t.Errorf("the API was called %d times", e.apiCalls.Load())
		}
	})
}

// TestUpstream401ForcesOneRefresh: the API refuses a token the store thinks
// fresh: one forced refresh, one retried call, success.
func TestUpstream401ForcesOneRefresh(t *testing.T) {
	e := newEnv(t)
	s := openSQLite(t, "")
	rec := e.connect(t, s, "t1", OwnerCompany, false)
	e.provider.ExpireAccess(rec.AccessToken)
	m := e.manager(s)
	res, err := e.tool(t, "company").Invoke(context.Background(), synth.CallContext{Tenant: "t1", Connections: m}, json.RawMessage(`{}`), synth.InvokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g, a := e.provider.RefreshGrants.Load(), e.apiCalls.Load(); g != 1 || a != 2 || res.Attempts != 2 {
		t.Errorf("%d refresh grants, %d API calls, %d attempts; want 1, 2, 2", g, a, res.Attempts)
	}
}

// TestTransientFailureKeepsServing: a 500 from the token endpoint keeps the
// connection active and serves the old token while it is valid.
func TestTransientFailureKeepsServing(t *testing.T) {
	e := newEnv(t)
	s := openSQLite(t, "")
	rec := e.connect(t, s, "t1", OwnerCompany, false)
	// Inside the skew (refresh due) but not expired.
	e.clock.Advance(time.Hour - 2*time.Minute)
	e.provider.FailNext("500")
	m := e.manager(s)
	tool := e.tool(t, "company")
	tok, err := call(tool, m, "t1", "")
	if err != nil || tok != rec.AccessToken {
		t.Fatalf("token %q, %v; want the old token", tok, err)
	}
	stored, _ := s.Connection(context.Background(), "t1", "google", OwnerCompany)
	if stored.Status != StatusActive || !strings.Contains(stored.LastError, "Internal Server Error") {
		t.Errorf("stored status %s, last error %q", stored.Status, stored.LastError)
	}
	// Expired and the endpoint still down: an error, still active.
	e.clock.Advance(10 * time.Minute)
	e.provider.FailNext("500")
	_, err = call(tool, m, "t1", "")
	if reason(err) != synth.ReasonProviderUnavailable || strings.Contains(err.Error(), rec.RefreshToken) {
		t.Errorf("got %v; want provider-unavailable (retryable, not the code of a missing connection)", err)
	}
	stored, _ = s.Connection(context.Background(), "t1", "google", OwnerCompany)
	if stored.Status != StatusActive {
		t.Errorf("status %s", stored.Status)
	}
	// The endpoint is back: refreshed.
	if _, err := call(tool, m, "t1", ""); err != nil {
		t.Error(err)
	}
}

// TestIsolation: a person's call never gets another person's or the
// company's token, nor another tenant's.
func TestIsolation(t *testing.T) {
	e := newEnv(t)
	s := openSQLite(t, "")
	a := e.connect(t, s, "t1", OwnerPerson("a"), false)
	b := e.connect(t, s, "t1", OwnerPerson("b"), false)
	c := e.connect(t, s, "t1", OwnerCompany, false)
	other := e.connect(t, s, "t2", OwnerPerson("a"), false)
	m := e.manager(s)
	person, company := e.tool(t, "person"), e.tool(t, "company")
	for _, tc := range []struct {
		tool           *synth.Tool
		tenant, person string
		want           string
		reason         string
	}{
		{person, "t1", "a", a.AccessToken, ""},
		{person, "t1", "b", b.AccessToken, ""},
		{person, "t2", "a", other.AccessToken, ""},
		{company, "t1", "a", c.AccessToken, ""},
		{person, "t1", "", "", synth.ReasonConnectionUnavailable},  // no person: never the company's
		{person, "t1", "z", "", synth.ReasonConnectionUnavailable}, // no connection: never another's
		{company, "t2", "a", "", synth.ReasonConnectionUnavailable},
		{person, "t3", "a", "", synth.ReasonConnectionUnavailable},
	} {
		got, err := call(tc.tool, m, tc.tenant, tc.person)
		if got != tc.want || (tc.reason != "" && reason(err) != tc.reason) || (tc.reason == "" && err != nil) {
			t.Errorf("tenant %s person %q: token %q, %v; want %q %s", tc.tenant, tc.person, got, err, tc.want, tc.reason)
		}
	}
	_, err := call(person, m, "t1", "z")
	if !strings.Contains(fmt.Sprint(err), `POST /v1/connections/google/authorize with {"as":"person","person":"z"}`) {
		t.Errorf("message says how to connect? %v", err)
	}
	_, err = call(e.tool(t, "person", "gmail.send", "gmail.read"), m, "t1", "a")
	if reason(err) != synth.ReasonConnectionPermissionMissing || !strings.Contains(err.Error(), "gmail.read") {
		t.Errorf("missing permission: %v", err)
	}
}

// TestConnectFlow: authorize → provider → callback stores the connection;
// the state is single use and expires.
func TestConnectFlow(t *testing.T) {
	eachStore(t, func(t *testing.T, s *sqlstore.SQLStore) {
		e := newEnv(t)
		e.provider.Scope = "https://mail/send"
		m := e.manager(s)
		ctx := context.Background()
		authURL, err := m.Authorize(ctx, "t1", "google", OwnerPerson("u1"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"code_challenge_method=S256", "access_type=offline", "client_id=client-1", "scope=https%3A%2F%2Fmail%2Fread+https%3A%2F%2Fmail%2Fsend"} {
			if !strings.Contains(authURL, want) {
				t.Errorf("authorization URL %s lacks %s", authURL, want)
			}
		}
		state, code := approve(t, authURL)
		rec, err := m.Callback(ctx, state, code)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != StatusActive || strings.Join(rec.Permissions, ",") != "gmail.send" || rec.AccessToken == "" || rec.Owner != OwnerPerson("u1") {
			t.Errorf("stored %+v", rec)
		}
		if n := e.provider.AuthCodeGrants.Load(); n != 1 {
			t.Errorf("%d code grants", n)
		}
		if _, err := m.Callback(ctx, state, code); !errors.Is(err, ErrBadState) {
			t.Errorf("replayed state: %v", err)
		}
		// An expired state.
		authURL, _ = m.Authorize(ctx, "t1", "google", OwnerCompany)
		state, code = approve(t, authURL)
		// Its expiry is on the store's clock: the row is made to have
		// expired there.
		if _, err := s.DB().Exec(`UPDATE oauth_states SET expires = 1`); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Callback(ctx, state, code); !errors.Is(err, ErrBadState) {
			t.Errorf("expired state: %v", err)
		}
		// A made-up state.
		if _, err := m.Callback(ctx, "st_forged", "code-1"); !errors.Is(err, ErrBadState) {
			t.Errorf("forged state: %v", err)
		}
	})
}

// TestRefreshOutlivesTheCaller: the token request runs on its own bounded
// context, so a caller that gives up does not waste the refresh: the next
// call uses its result without another grant.
func TestRefreshOutlivesTheCaller(t *testing.T) {
	e := newEnv(t)
	s := openSQLite(t, "")
	e.connect(t, s, "t1", OwnerCompany, true)
	e.provider.Delay = 200 * time.Millisecond
	m := e.manager(s)
	need := synth.ConnectionNeed{App: "google", Permissions: []string{"gmail.send"}, As: "company"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := m.AccessToken(ctx, synth.ConnectionRequest{Need: need, Tenant: "t1"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the impatient caller: %v", err)
	}
	// The next caller joins the refresh in flight or finds its result.
	tok, err := m.AccessToken(context.Background(), synth.ConnectionRequest{Need: need, Tenant: "t1"})
	if err != nil || !e.provider.ValidAccess(tok) {
		t.Fatalf("token %q, %v", tok, err)
	}
	if n := e.provider.RefreshGrants.Load(); n != 1 {
		t.Errorf("%d refresh grants, want 1", n)
	}
}

// BenchmarkAccessToken times the token look-up of a fresh connection: from
// the in-memory copy (every call but the first within a skew) and, for
// comparison, from the store itself.
func BenchmarkAccessToken(b *testing.B) {
	for _, db := range []string{"sqlite", "postgres"} {
		b.Run(db, func(b *testing.B) {
			var s *sqlstore.SQLStore
			if db == "sqlite" {
				s = openSQLite(b, "")
			} else {
				s = openPostgres(b, postgresDSN(b))
			}
			ctx := context.Background()
			s.SaveConnection(ctx, &Record{Tenant: "t1", App: "google", Owner: OwnerCompany, Permissions: []string{"gmail.send"},
				AccessToken: "at-1", RefreshToken: "rt-1", Expiry: time.Now().Add(24 * time.Hour)})
			apps := Apps{"google": &App{ID: "google", Permissions: map[string][]string{"gmail.send": {"s"}}}}
			m := &Manager{Connections: s, States: s, Apps: apps}
			req := synth.ConnectionRequest{Tenant: "t1", Need: synth.ConnectionNeed{App: "google", Permissions: []string{"gmail.send"}, As: "company"}}
			b.Run("cached", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if tok, err := m.AccessToken(ctx, req); err != nil || tok != "at-1" {
						b.Fatal(tok, err)
					}
				}
			})
			b.Run("store", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if r, err := s.Connection(ctx, "t1", "google", OwnerCompany); err != nil || r.AccessToken != "at-1" {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// approve follows an authorization URL to the fake provider, which
// approves at once, and returns the state and code it sends back.
func approve(t *testing.T, authURL string) (state, code string) {
	t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := resp.Location()
	if err != nil {
		t.Fatal(err)
	}
	return back.Query().Get("state"), back.Query().Get("code")
}
