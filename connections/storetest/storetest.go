// Package storetest is the conformance suite of the connections stores: an
// embedder that keeps connections, connect flows or secrets in a store of
// its own runs the suite of each interface it implements in its own tests.
// SQLStore passes all three on SQLite and PostgreSQL.
//
//	func TestMyStore(t *testing.T) {
//		storetest.Connections(t, func(t *testing.T) connections.ConnectionStore { return newMyStore(t) })
//	}
//
// Each suite asks for a new, empty store per subtest.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/synth"
)

// Connections runs the suite of a ConnectionStore: records read back as
// written, each (tenant, app, owner) its own, revocation wipes tokens and
// stays within its tenant, and UpdateLocked loses no update under
// concurrency.
func Connections(t *testing.T, newStore func(t *testing.T) connections.ConnectionStore) {
	t.Run("round trip and isolation", func(t *testing.T) { connectionsRoundTrip(t, newStore(t)) })
	t.Run("UpdateLocked", func(t *testing.T) { connectionsUpdateLocked(t, newStore(t)) })
}

// connectionsRoundTrip checks that a saved record reads back whole, that a
// second save is the same connection's next version, that no other tenant,
// owner or app sees it, and that revoking it (by its tenant only) drops its
// tokens.
func connectionsRoundTrip(t *testing.T, s connections.ConnectionStore) {
	ctx := context.Background()
	exp := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
	rec, err := s.SaveConnection(ctx, &connections.Record{Tenant: "t1", App: "google", Owner: connections.OwnerPerson("u1"),
		Permissions: []string{"gmail.send"}, Scopes: []string{"s1"}, AccessToken: "at-secret-1", RefreshToken: "rt-secret-1", Expiry: exp})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != 1 || rec.Status != connections.StatusActive || rec.ID == "" {
		t.Errorf("saved %+v: want version 1, status active, an id", rec)
	}
	got, err := s.Connection(ctx, "t1", "google", connections.OwnerPerson("u1"))
	if err != nil || got.AccessToken != "at-secret-1" || got.RefreshToken != "rt-secret-1" || !got.Expiry.Equal(exp) ||
		len(got.Permissions) != 1 || got.Permissions[0] != "gmail.send" || len(got.Scopes) != 1 {
		t.Fatalf("read back %+v, %v", got, err)
	}
	again, err := s.SaveConnection(ctx, &connections.Record{Tenant: "t1", App: "google", Owner: connections.OwnerPerson("u1"), AccessToken: "at-2"})
	if err != nil || again.ID != rec.ID || again.Version != 2 {
		t.Errorf("second save: %+v %v; want the same id, version 2", again, err)
	}
	for _, k := range [][3]string{{"t2", "google", connections.OwnerPerson("u1")}, {"t1", "google", connections.OwnerPerson("u2")},
		{"t1", "google", connections.OwnerCompany}, {"t1", "github", connections.OwnerPerson("u1")}} {
		if _, err := s.Connection(ctx, k[0], k[1], k[2]); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("%v: %v, want ErrNotFound", k, err)
		}
	}
	list, err := s.Connections(ctx, "t1")
	other, _ := s.Connections(ctx, "t2")
	if err != nil || len(list) != 1 || len(other) != 0 {
		t.Errorf("lists: t1 %d (%v), t2 %d", len(list), err, len(other))
	}
	if err := s.RevokeConnection(ctx, "t2", rec.ID); !errors.Is(err, connections.ErrNotFound) {
		t.Errorf("another tenant revoked it: %v", err)
	}
	if err := s.RevokeConnection(ctx, "t1", rec.ID); err != nil {
		t.Fatal(err)
	}
	got, err = s.Connection(ctx, "t1", "google", connections.OwnerPerson("u1"))
	if err != nil || got.Status != connections.StatusRevoked || got.AccessToken != "" || got.RefreshToken != "" {
		t.Errorf("revoked: %+v %v; want status revoked and no tokens", got, err)
	}
	if err := s.RevokeConnection(ctx, "t1", "conn_nope"); !errors.Is(err, connections.ErrNotFound) {
		t.Errorf("revoking an unknown id: %v", err)
	}
}

// connectionsUpdateLocked checks that concurrent UpdateLocked calls on one
// connection each see the one before (a counter reaches their number), and
// that fn's nil writes nothing and fn's error is returned.
func connectionsUpdateLocked(t *testing.T, s connections.ConnectionStore) {
	ctx := context.Background()
	if _, err := s.SaveConnection(ctx, &connections.Record{Tenant: "t", App: "a", Owner: connections.OwnerCompany, LastError: "0"}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.UpdateLocked(ctx, "t", "a", connections.OwnerCompany, func(cur *connections.Record) (*connections.Record, error) {
				var v int
				fmt.Sscan(cur.LastError, &v)
				next := *cur
				next.LastError = fmt.Sprint(v + 1)
				return &next, nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, _ := s.Connection(ctx, "t", "a", connections.OwnerCompany)
	if got.LastError != fmt.Sprint(n) || got.Version != n+1 {
		t.Errorf("after %d concurrent updates: counter %s, version %d; want %d and %d", n, got.LastError, got.Version, n, n+1)
	}
	// nil leaves the row as it was; fn's error is returned.
	if _, err := s.UpdateLocked(ctx, "t", "a", connections.OwnerCompany, func(*connections.Record) (*connections.Record, error) { return nil, nil }); err != nil {
		t.Error(err)
	}
	boom := errors.New("boom")
	if _, err := s.UpdateLocked(ctx, "t", "a", connections.OwnerCompany, func(*connections.Record) (*connections.Record, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("fn's error: %v", err)
	}
	if got, _ := s.Connection(ctx, "t", "a", connections.OwnerCompany); got.Version != n+1 {
		t.Errorf("version %d after updates that wrote nothing", got.Version)
	}
}

// States runs the suite of a StateStore: a state reads back once, and of
// concurrent takes exactly one wins.
func States(t *testing.T, newStore func(t *testing.T) connections.StateStore) {
	ctx := context.Background()
	s := newStore(t)
	exp := time.Now().Add(time.Hour)
	if err := s.PutState(ctx, &connections.State{State: "st-1", Tenant: "t1", App: "google", Owner: connections.OwnerCompany, Verifier: "v-secret", Expires: exp}); err != nil {
		t.Fatal(err)
	}
	st, err := s.TakeState(ctx, "st-1")
	if err != nil || st.Verifier != "v-secret" || st.Owner != connections.OwnerCompany || st.Tenant != "t1" || st.App != "google" {
		t.Fatalf("take: %+v %v", st, err)
	}
	if _, err := s.TakeState(ctx, "st-1"); !errors.Is(err, connections.ErrNotFound) {
		t.Errorf("second take: %v, want ErrNotFound", err)
	}
	if _, err := s.TakeState(ctx, "never"); !errors.Is(err, connections.ErrNotFound) {
		t.Errorf("unknown state: %v, want ErrNotFound", err)
	}
	if err := s.PutState(ctx, &connections.State{State: "st-race", Tenant: "t1", App: "google", Owner: connections.OwnerCompany, Verifier: "v", Expires: exp}); err != nil {
		t.Fatal(err)
	}
	var wins atomic.Int64
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.TakeState(ctx, "st-race"); err == nil {
				wins.Add(1)
			} else if !errors.Is(err, connections.ErrNotFound) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d of 10 concurrent takes got the state, want 1", wins.Load())
	}
}

// Secrets runs the suite of a SecretStore: values by tenant, names listed
// without values, deletion within the tenant.
func Secrets(t *testing.T, newStore func(t *testing.T) connections.SecretStore) {
	ctx := context.Background()
	s := newStore(t)
	ref := synth.SecretRef{EnvName: "production", Name: "TOKEN"}
	if err := s.PutSecret(ctx, "t1", ref, "sv-secret-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSecret(ctx, "t1", ref, "sv-secret-2"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Secret(ctx, "t1", ref); v != "sv-secret-2" || err != nil {
		t.Errorf("secret %q %v, want the last value", v, err)
	}
	if _, err := s.Secret(ctx, "t2", ref); !errors.Is(err, synth.ErrSecretNotFound) {
		t.Errorf("another tenant's secret: %v, want synth.ErrSecretNotFound", err)
	}
	if _, err := s.Secret(ctx, "t1", synth.SecretRef{EnvName: "local", Name: "TOKEN"}); !errors.Is(err, synth.ErrSecretNotFound) {
		t.Errorf("another environment's secret: %v", err)
	}
	refs, err := s.SecretRefs(ctx, "t1")
	if err != nil || len(refs) != 1 || refs[0] != ref {
		t.Errorf("refs %v %v", refs, err)
	}
	if other, _ := s.SecretRefs(ctx, "t2"); len(other) != 0 {
		t.Errorf("t2 lists %v", other)
	}
	for _, r := range refs {
		if strings.Contains(fmt.Sprint(r), "sv-secret") {
			t.Errorf("a listed name holds the value: %v", r)
		}
	}
	if err := s.DeleteSecret(ctx, "t2", ref); !errors.Is(err, connections.ErrNotFound) {
		t.Errorf("another tenant deleted it: %v, want ErrNotFound", err)
	}
	if err := s.DeleteSecret(ctx, "t1", ref); err != nil {
		t.Error(err)
	}
	if _, err := s.Secret(ctx, "t1", ref); !errors.Is(err, synth.ErrSecretNotFound) {
		t.Errorf("after delete: %v", err)
	}
}
