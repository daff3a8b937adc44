package server

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
)

// countingKeys counts the look-ups of keys in the store.
type countingKeys struct {
	KeyStore
	lookups atomic.Int64
}

func (c *countingKeys) KeyOf(ctx context.Context, key string) (*auth.APIKey, error) {
	c.lookups.Add(1)
	return c.KeyStore.KeyOf(ctx, key)
}

// TestRevokedKeyMintsNothing: an admin key revoked by another replica (in
// the store, while this replica's cache still trusts it) creates 0 keys,
// sets 0 secrets, revokes 0 keys and starts 0 connections here: every route
// that makes keys, sets secrets or starts or revokes a connection asks the
// store (before: POST /v1/keys answered 201, and the
// key it made outlived the revocation).
func TestRevokedKeyMintsNothing(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	victim, info, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	if rp := r.do(t, r.keyA, "GET", "/v1/tools", ""); rp.status != 200 {
		t.Fatal(rp.status)
	}
	before, _ := r.store.APIKeys(ctx, "tenant-a")
	k, _ := r.store.KeyOf(ctx, r.keyA)
	if err := r.store.RevokeAPIKey(ctx, "", k.ID); err != nil { // another replica revokes it
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/keys", `{"role":"admin"}`},
		{"PUT", "/v1/secrets/production/TOKEN", `{"value":"v"}`},
		{"DELETE", "/v1/secrets/production/TOKEN", ""},
		{"DELETE", "/v1/keys/" + info.ID, ""},
		{"POST", "/v1/connections/google/authorize", `{"as":"company"}`},
		{"DELETE", "/v1/connections/conn_x", ""},
	} {
		if rp := r.do(t, r.keyA, tc.method, tc.path, tc.body); rp.status != 401 {
			t.Errorf("%s %s with a revoked key: %d %s; want 401", tc.method, tc.path, rp.status, rp.raw)
		}
	}
	after, _ := r.store.APIKeys(ctx, "tenant-a")
	if len(after) != len(before)-1 { // the revoked one gone, nothing new
		t.Errorf("%d keys before, %d after; want one fewer (0 created)", len(before), len(after))
	}
	if _, err := r.store.KeyOf(ctx, victim); err != nil {
		t.Errorf("the service key was revoked by a revoked key: %v", err)
	}
	if refs, _ := r.store.SecretRefs(ctx, "tenant-a"); len(refs) != 0 {
		t.Errorf("%d secrets set by a revoked key", len(refs))
	}
}

// TestFailedAuthIsThrottled: 300 wrong keys from one address: at most the
// burst of 20 and what the refill allows meanwhile reach the store (401),
// the rest are 429 with Retry-After and never looked up; a key this
// replica verified before the flood keeps working from the same address
// (10 of 10).
func TestFailedAuthIsThrottled(t *testing.T) {
	ck := &countingKeys{}
	r := newRig(t, func(c *Config) { ck.KeyStore = c.Keys; c.Keys = ck })
	if rp := r.do(t, r.keyA, "GET", "/v1/tools", ""); rp.status != 200 {
		t.Fatal(rp.status)
	}
	ck.lookups.Store(0)
	start := time.Now()
	counts := map[int]int{}
	for i := range 300 {
		rp := r.do(t, "htk_wrong"+strings.Repeat("x", i%7)+string(rune('a'+i%26)), "GET", "/v1/tools", "")
		counts[rp.status]++
		if rp.status == 429 && rp.header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After")
		}
	}
	elapsed := time.Since(start)
	allowed := authFailureBurst + int(elapsed.Seconds()*authFailureRate) + 1
	t.Logf("300 wrong keys in %v: %v; %d store look-ups", elapsed.Round(time.Millisecond), counts, ck.lookups.Load())
	if counts[401] > allowed || counts[401]+counts[429] != 300 || int(ck.lookups.Load()) > allowed {
		t.Errorf("%d answered 401 after %d look-ups; want at most %d, the rest 429", counts[401], ck.lookups.Load(), allowed)
	}
	ok := 0
	for range 10 {
		if rp := r.do(t, r.keyA, "GET", "/v1/tools", ""); rp.status == 200 {
			ok++
		}
	}
	if ok != 10 {
		t.Errorf("a verified key during the flood: %d of 10", ok)
	}
}
