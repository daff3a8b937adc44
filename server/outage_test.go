package server

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/synth"
)

// downStore is the rig's real store, switched off: every call fails the way
// a store fails when PostgreSQL is down (a StoreError wrapping the driver's
// words), or blocks until its context ends, as it does when PostgreSQL is
// frozen (SIGSTOP).
type downStore struct {
	*testStore
	down, frozen atomic.Bool
}

var errDriverWords = errors.New(`failed to connect to user=postgres database=custdb: 10.0.0.5:5432 (10.0.0.5): dial error: connection refused`)

func (d *downStore) fail(ctx context.Context, op string) error {
	if d.frozen.Load() {
		<-ctx.Done()
		return &connections.StoreError{Op: op, Err: ctx.Err()}
	}
	return &connections.StoreError{Op: op, Err: errDriverWords}
}

func (d *downStore) KeyOf(ctx context.Context, key string) (*auth.APIKey, error) {
	if d.down.Load() {
		return nil, d.fail(ctx, "check API key")
	}
	return d.testStore.KeyOf(ctx, key)
}
func (d *downStore) Secret(ctx context.Context, tenant string, ref synth.SecretRef) (string, error) {
	if d.down.Load() {
		return "", d.fail(ctx, "read secret")
	}
	return d.testStore.Secret(ctx, tenant, ref)
}
func (d *downStore) SecretRefs(ctx context.Context, tenant string) ([]synth.SecretRef, error) {
	if d.down.Load() {
		return nil, d.fail(ctx, "list secrets")
	}
	return d.testStore.SecretRefs(ctx, tenant)
}
func (d *downStore) PutSecret(ctx context.Context, tenant string, ref synth.SecretRef, v string) error {
	if d.down.Load() {
		return d.fail(ctx, "store secret")
	}
	return d.testStore.PutSecret(ctx, tenant, ref, v)
}
func (d *downStore) Connection(ctx context.Context, tenant, app, owner string) (*connections.Record, error) {
	if d.down.Load() {
		return nil, d.fail(ctx, "read connection")
	}
	return d.testStore.Connection(ctx, tenant, app, owner)
}
func (d *downStore) Connections(ctx context.Context, tenant string) ([]*connections.Record, error) {
	if d.down.Load() {
		return nil, d.fail(ctx, "list connections")
	}
	return d.testStore.Connections(ctx, tenant)
}
func (d *downStore) PutState(ctx context.Context, st *connections.State) error {
	if d.down.Load() {
		return d.fail(ctx, "store connect state")
	}
	return d.testStore.PutState(ctx, st)
}
func (d *downStore) Ping(ctx context.Context) error {
	if d.down.Load() {
		return d.fail(ctx, "write check")
	}
	return d.testStore.Ping(ctx)
}

// TestStoreOutage: with the store down, every route that needs it answers
// 503 with the one code and reason store-unavailable and Retry-After, never 409 or 404, and no response
// holds the driver's words (user, database, address); with it frozen,
// /readyz still answers 503 (its check has a timeout).
func TestStoreOutage(t *testing.T) {
	r := newRig(t)
	ds := &downStore{testStore: r.store}
	r.srv.cfg.Store, r.srv.cfg.Keys = ds, ds
	r.srv.cfg.Manager.Connections, r.srv.cfg.Manager.States = ds, ds
	// A key not yet checked, so that its check reaches the store.
	fresh, _, _ := r.store.CreateAPIKey(context.Background(), "tenant-c", auth.RoleAdmin, "")
	r.do(t, r.keyA, "GET", "/v1/tools", "") // keyA is now cached
	ds.down.Store(true)
	for _, tc := range []struct{ name, key, method, path, body string }{
		{"secret call", r.keyA, "POST", "/v1/tools/t.secret/invoke", `{}`},
		{"connection call", r.keyA, "POST", "/v1/tools/t.mail/invoke", `{"context":{"person":"u1"}}`},
		{"list secrets", r.keyA, "GET", "/v1/secrets", ""},
		{"put secret", r.keyA, "PUT", "/v1/secrets/production/TOKEN", `{"value":"v"}`},
		{"list connections", r.keyA, "GET", "/v1/connections", ""},
		{"authorize", r.keyA, "POST", "/v1/connections/google/authorize", `{"as":"company"}`},
		{"key check", fresh, "GET", "/v1/tools", ""},
		{"readyz", "", "GET", "/readyz", ""},
	} {
		rp := r.doFull(t, tc.key, tc.method, tc.path, tc.body)
		if want := synth.ReasonStoreUnavailable + "/" + synth.ReasonStoreUnavailable; rp.status != 503 || rp.code() != want || rp.header.Get("Retry-After") == "" {
			t.Errorf("%s: %d %s Retry-After %q; want 503 %s with Retry-After (one code for one outage)", tc.name, rp.status, rp.code(), rp.header.Get("Retry-After"), want)
		}
		for _, word := range []string{"postgres", "custdb", "10.0.0.5", "5432", "refused", "dial"} {
			if strings.Contains(rp.raw, word) {
				t.Errorf("%s: the response names %q: %s", tc.name, word, rp.raw)
			}
		}
	}
	ds.frozen.Store(true)
	if rp := r.doFull(t, "", "GET", "/readyz", ""); rp.status != 503 {
		t.Errorf("frozen store: /readyz %d, want 503", rp.status)
	}
}
