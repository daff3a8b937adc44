package connections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/faults"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/synth"
)

// partitionRig is two replicas, A and B, each on PostgreSQL through a
// Toxiproxy link of its own, and each reaching the OAuth provider through
// another, the provider revoking a token's whole family when a rotated
// refresh token is presented again (RFC 9700).
type partitionRig struct {
	e            *env
	dbA, dbB     *faults.Link
	idpA, idpB   *faults.Link
	a, b         *sqlstore.SQLStore
	ma, mb       *Manager
	tool         *synth.Tool
	late, calls  atomic.Int64 // calls answered past their deadline (with grace); all calls
	reauthMarked atomic.Int64
}

// deadline is the test tool's timeoutMs; grace is what a call may take
// past it before it counts as late: the issue measured 5 s overshoots,
// and 1.5 s still tells them apart on a loaded machine.
const (
	partitionDeadline = 3 * time.Second
	partitionGrace    = 1500 * time.Millisecond
)

func newPartitionRig(t *testing.T) *partitionRig {
	dsn := postgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	r := &partitionRig{e: newEnv(t)}
	r.e.provider.Rotate, r.e.provider.RevokeFamilyOnReuse = true, true
	through := func(l *faults.Link) string {
		v := *u
		v.Host = l.Addr()
		return v.String()
	}
	r.dbA, r.dbB = faults.New(t, u.Host), faults.New(t, u.Host)
	r.a, r.b = openPostgres(t, through(r.dbA)), openPostgres(t, through(r.dbB))
	pu, _ := url.Parse(r.e.provider.URL)
	r.idpA, r.idpB = faults.New(t, pu.Host), faults.New(t, pu.Host)
	replica := func(s *sqlstore.SQLStore, idp *faults.Link) *Manager {
		m := r.e.replica(s, time.Now)
		m.LeaseTTL = 0 // the default, 6 s: the lease a partition outlasts in production
		via := strings.Replace(r.e.provider.TokenURL(), pu.Host, idp.Addr(), 1)
		apps, err := ParseApps([]byte(fmt.Sprintf(`{"apps":{"google":{"authURL":%q,"tokenURL":%q,"clientID":"client-1","clientSecretEnv":"GOOGLE_SECRET","authStyle":"params",
			"permissions":{"gmail.send":["https://mail/send"]}}}}`, r.e.provider.AuthURL(), via)), func(string) string { return "secret-1" })
		if err != nil {
			t.Fatal(err)
		}
		m.Apps = apps
		return m
	}
	r.ma, r.mb = replica(r.a, r.idpA), replica(r.b, r.idpB)
	tool, err := r.e.loader.Load([]byte(`{"id":"gmail.send","description":"d","version":"1.0.0","mutating":true,
		"input":{"type":"object"},"output":{"type":"object"},
		"needsSpec":{"connections":{"gmail":{"app":"google","permissions":["gmail.send"],"as":"company"}}},
		"spec":{"kind":"http","method":"POST","urlTemplate":"` + r.e.api.URL + `/send","timeoutMs":3000,"authorization":{"kind":"connection","connection":"gmail"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r.tool = tool
	return r
}

// call makes one call on m for tenant, counting it, a late answer and a
// refusal that would send the person to reconnect.
func (r *partitionRig) call(m *Manager, tenant string) (string, error) {
	start := time.Now()
	res, err := r.tool.Invoke(context.Background(), synth.CallContext{Tenant: tenant, Connections: m}, []byte(`{}`), synth.InvokeOptions{})
	r.calls.Add(1)
	if time.Since(start) > partitionDeadline+partitionGrace {
		r.late.Add(1)
	}
	if err != nil {
		if reason(err) == synth.ReasonConnectionNeedsReauth {
			r.reauthMarked.Add(1)
		}
		return "", err
	}
	var out struct {
		SentWith string `json:"sent_with_reversed"`
	}
	_ = json.Unmarshal(res.Output, &out)
	return reverse(out.SentWith), nil
}

// retryable says err is a refusal a caller may retry: the connection is
// being refreshed, the provider or the store is unreachable, or the call's
// deadline passed while waiting on one.
func retryable(err error) bool {
	switch reason(err) {
	case synth.ReasonConnectionRefreshing, synth.ReasonProviderUnavailable, synth.ReasonStoreUnavailable, synth.ReasonTimeout:
		return true
	}
	return false
}

// check asserts what every scenario must keep: 0 revoked refresh tokens
// presented, 0 invalid_grant, 0 calls told to reconnect, 0 calls past
// their deadline, the connection active with a live refresh token.
func (r *partitionRig) check(t *testing.T, tenant string) {
	t.Helper()
	p := r.e.provider
	rec, err := r.b.Connection(context.Background(), tenant, "google", OwnerCompany)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls, %d late, %d told to reconnect; provider: %d grants, %d revoked tokens presented, %d invalid_grant; connection %s",
		r.calls.Load(), r.late.Load(), r.reauthMarked.Load(), p.RefreshGrants.Load(), p.RevokedRefreshUses.Load(), p.InvalidGrants.Load(), rec.Status)
	if p.RevokedRefreshUses.Load() != 0 || p.InvalidGrants.Load() != 0 || r.reauthMarked.Load() != 0 || r.late.Load() != 0 ||
		rec.Status != StatusActive || !p.LiveRefreshToken(rec.RefreshToken) {
		t.Errorf("want 0 revoked tokens presented, 0 invalid_grant, 0 told to reconnect, 0 late, the connection active on a live refresh token (%v)",
			p.LiveRefreshToken(rec.RefreshToken))
	}
}

// TestRefreshUnderPartitions: two replicas on PostgreSQL, each link
// through Toxiproxy, against a provider that rotates refresh tokens and
// revokes the family on reuse. Each scenario ends with 0 revoked refresh
// tokens presented, 0 invalid_grant, 0 persons marked needs-reauth, 0 calls
// past their deadline (3 s, with 1.5 s of grace), the connection active.
func TestRefreshUnderPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30 s partition")
	}
	testkit.PostgresDSN(t) // skips without PostgreSQL

	// The lease holder is cut off from PostgreSQL right after the
	// provider answered (the refresh token rotated, not yet stored). B
	// presents nothing while the outcome is unknown; once the link heals
	// A stores its token and B uses it.
	t.Run("holder cut off after the provider's answer", func(t *testing.T) {
		r := newPartitionRig(t)
		r.holderCutOff(t, "t1", r.dbA.Cut, 0)
	})
	// The same with a half-open link: A's writes reach PostgreSQL (they
	// may commit), their answers never come back.
	t.Run("half-open link", func(t *testing.T) {
		r := newPartitionRig(t)
		r.holderCutOff(t, "t1", r.dbA.HalfOpen, 0)
	})
	// 30 s of partition, B calling all along.
	t.Run("30 s partition", func(t *testing.T) {
		r := newPartitionRig(t)
		r.holderCutOff(t, "t1", r.dbA.Cut, 30*time.Second)
	})
	// 500 ± 400 ms on both replicas' store links: 24 concurrent calls on
	// an expired connection.
	t.Run("store latency", func(t *testing.T) {
		r := newPartitionRig(t)
		r.e.connect(t, r.a, "t1", OwnerCompany, true)
		r.dbA.Latency(500, 400)
		r.dbB.Latency(500, 400)
		var wg sync.WaitGroup
		var failed, notRetryable atomic.Int64
		for i := range 24 {
			m := r.ma
			if i%2 == 1 {
				m = r.mb
			}
			wg.Go(func() {
				if _, err := r.call(m, "t1"); err != nil {
					failed.Add(1)
					if !retryable(err) {
						notRetryable.Add(1)
						t.Errorf("a call refused with no retry: %v", err)
					}
				}
			})
		}
		wg.Wait()
		r.dbA.Heal()
		r.dbB.Heal()
		t.Logf("%d of 24 calls refused (retryable), %d not retryable; held in memory as the links heal: A %v, B %v",
			failed.Load(), notRetryable.Load(), r.ma.PendingOf("t1", "google", OwnerCompany) != nil, r.mb.PendingOf("t1", "google", OwnerCompany) != nil)
		// A token refreshed while the store was slow may be held in
		// memory, its write retried in the background: it must reach the
		// store by itself once the links heal.
		r.settled(t, "t1")
		r.check(t, "t1")
	})
	// The provider unreachable from A mid-refresh (the request never
	// arrives): A's callers are told to retry, B refreshes once the lease
	// is released, nobody is told to reconnect.
	t.Run("provider cut off", func(t *testing.T) {
		r := newPartitionRig(t)
		r.e.connect(t, r.a, "t1", OwnerCompany, true)
		r.idpA.Cut()
		if _, err := r.call(r.ma, "t1"); !retryable(err) {
			t.Errorf("A with the provider cut off: %v; want a retryable refusal", err)
		}
		testkit.WaitFor(t, "a call served through B", func() bool {
			_, err := r.call(r.mb, "t1")
			if err != nil && !retryable(err) {
				t.Fatalf("B: %v", err)
			}
			return err == nil
		})
		r.idpA.Heal()
		if _, err := r.call(r.ma, "t1"); err != nil {
			t.Errorf("A once the provider is back: %v", err)
		}
		r.check(t, "t1")
	})
}

// settled waits until the refresh a timed-out call left running (it runs on
// its own deadline) has ended: the lease released, neither replica holding
// a refreshed token in memory, the store holding a live refresh token. A
// token lost on the way never gets there, and the wait fails.
func (r *partitionRig) settled(t *testing.T, tenant string) {
	t.Helper()
	testkit.WaitFor(t, "every refreshed token stored and the lease released", func() bool {
		rec, err := r.b.Connection(context.Background(), tenant, "google", OwnerCompany)
		return err == nil && rec.LeaseOwner == "" && r.e.provider.LiveRefreshToken(rec.RefreshToken) &&
			r.ma.PendingOf(tenant, "google", OwnerCompany) == nil && r.mb.PendingOf(tenant, "google", OwnerCompany) == nil
	})
}

// holderCutOff: A takes the lease of an expired connection and refreshes;
// as the provider's answer reaches A, fault (a Cut or HalfOpen of A's
// store link) starts. B calls until A's lease has run out (and, with
// hold, for hold more); every B call is served with a valid token or
// refused as retryable. Then the link heals: A's token is stored and B is
// served with it.
func (r *partitionRig) holderCutOff(t *testing.T, tenant string, fault func(), hold time.Duration) {
	r.e.connect(t, r.a, tenant, OwnerCompany, true)
	var once sync.Once
	r.ma.HTTPClient = &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(req)
		once.Do(fault) // the provider answered: the holder is cut off
		return resp, err
	})}
	tokA, errA := r.call(r.ma, tenant)
	t.Logf("A's call as it was cut off: %v", errA)
	if errA != nil && !retryable(errA) {
		t.Errorf("A's call: %v; want its token or a retryable refusal", errA)
	}
	served, refused := 0, 0
	bCall := func() {
		tok, err := r.call(r.mb, tenant)
		switch {
		case err == nil && r.e.provider.ValidAccess(tok):
			served++
		case err == nil:
			t.Errorf("B sent a token the provider does not know: %q", tok)
		case retryable(err):
			refused++
		default:
			t.Errorf("B: %v; want a valid token or a retryable refusal", err)
		}
	}
	testkit.WaitFor(t, "A's lease to run out", func() bool {
		bCall()
		rec, err := r.b.Connection(context.Background(), tenant, "google", OwnerCompany)
		now, nerr := r.b.StoreNow(context.Background())
		return err == nil && nerr == nil && (rec.LeaseOwner == "" || !rec.LeaseUntil.After(now))
	})
	for end := time.Now().Add(hold); time.Now().Before(end); {
		bCall()
		time.Sleep(200 * time.Millisecond) // pacing only: no verdict rests on it
	}
	for range 5 {
		bCall()
	}
	r.dbA.Heal()
	testkit.WaitFor(t, "the refreshed token stored and the lease released", func() bool {
		rec, err := r.b.Connection(context.Background(), tenant, "google", OwnerCompany)
		return err == nil && rec.LeaseOwner == "" && r.e.provider.ValidAccess(rec.AccessToken)
	})
	if tok, err := r.call(r.mb, tenant); err != nil || !r.e.provider.ValidAccess(tok) {
		t.Errorf("B after the partition: %q %v", tok, err)
	}
	if tokA != "" && !r.e.provider.ValidAccess(tokA) {
		t.Errorf("A was served a token the provider does not know")
	}
	t.Logf("during the partition B was served %d calls and refused %d (retryable)", served, refused)
	if g := r.e.provider.RefreshGrants.Load(); g != 1 {
		t.Errorf("%d refresh grants; want 1 (A's)", g)
	}
	r.check(t, tenant)
}
