package sqlstore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/history"
)

// TestAPIKeysAndSessions: keys are stored hashed, one tenant each,
// revocable; a session is its key's until it expires, the key is revoked
// or it ends; on SQLite and PostgreSQL.
func TestAPIKeysAndSessions(t *testing.T) {
	ctx := context.Background()
	eachStore(t, func(t *testing.T, s *SQLStore) {
		key, _, err := s.CreateAPIKey(ctx, "t1", auth.RoleService, "")
		if err != nil || !strings.HasPrefix(key, auth.APIKeyPrefix) || len(key) < 40 {
			t.Fatalf("key %q %v", key, err)
		}
		k, err := s.KeyOf(ctx, key)
		if err != nil || k.Tenant != "t1" || k.Role != auth.RoleService {
			t.Errorf("key %+v %v", k, err)
		}
		if _, err := s.KeyOf(ctx, key+"x"); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("a wrong key: %v", err)
		}
		pkey, pk, err := s.CreateAPIKey(ctx, "t1", auth.RolePerson, "u1")
		if err != nil || pk.Person != "u1" {
			t.Fatalf("person key %+v %v", pk, err)
		}
		if _, _, err := s.CreateAPIKey(ctx, "t1", auth.RolePerson, ""); err == nil {
			t.Error("a person key without a person")
		}
		if keys, err := s.APIKeys(ctx, "t1"); err != nil || len(keys) != 2 {
			t.Errorf("APIKeys: %v %v", keys, err)
		}
		if all, _ := s.APIKeys(ctx, ""); len(all) != 2 {
			t.Errorf("every tenant's keys: %d", len(all))
		}

		tok, err := s.CreateSession(ctx, pkey, time.Hour)
		if err != nil || !strings.HasPrefix(tok, auth.SessionPrefix) {
			t.Fatalf("session %q %v", tok, err)
		}
		if sk, err := s.SessionKey(ctx, tok); err != nil || sk.ID != pk.ID {
			t.Errorf("the session's key: %+v %v", sk, err)
		}
		if _, err := s.CreateSession(ctx, "htk_unknown", time.Hour); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("a session of an unknown key: %v", err)
		}
		short, _ := s.CreateSession(ctx, key, -time.Second)
		if _, err := s.SessionKey(ctx, short); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("an expired session: %v", err)
		}

		if err := s.RevokeAPIKey(ctx, "t2", pk.ID); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("another tenant revoked a key: %v", err)
		}
		if err := s.RevokeAPIKey(ctx, "t1", pk.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.KeyOf(ctx, pkey); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("a revoked key still works: %v", err)
		}
		if _, err := s.SessionKey(ctx, tok); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("a revoked key's session still works: %v", err)
		}
		keep, _ := s.CreateSession(ctx, key, time.Hour)
		if err := s.EndSession(ctx, keep); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SessionKey(ctx, keep); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("an ended session still works: %v", err)
		}
		var n int
		s.DB().QueryRow(s.q(`SELECT COUNT(*) FROM api_keys WHERE hash = ? OR id = ?`), key, key).Scan(&n)
		var m int
		s.DB().QueryRow(s.q(`SELECT COUNT(*) FROM console_sessions WHERE hash = ?`), keep).Scan(&m)
		if n != 0 || m != 0 {
			t.Error("a key or a session token is stored in clear")
		}
	})
}

// TestSessionsTableMadeBeforeTheMigration: a database where the service
// made console_sessions itself (before it was one of the store's
// migrations) opens, and its sessions still work.
func TestSessionsTableMadeBeforeTheMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	s := openSQLite(t, path)
	key, _, _ := s.CreateAPIKey(ctx, "t1", auth.RoleAdmin, "")
	tok, _ := s.CreateSession(ctx, key, time.Hour)
	// As the old service left it: the table there, the migration not run.
	// (Migration 5 made console_sessions; what came after goes too.)
	for _, stmt := range []string{`DELETE FROM schema_migrations WHERE version >= 5`, `DROP TABLE policies`, `DROP TABLE approvals`, `ALTER TABLE api_keys DROP COLUMN toolset`, `ALTER TABLE api_keys DROP COLUMN unattended_tools`, `DROP TABLE calls`, `DROP TABLE kept_results`, `ALTER TABLE connections DROP COLUMN wanted_scopes`} {
		if _, err := s.DB().Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	again := openSQLite(t, path)
	if k, err := again.SessionKey(ctx, tok); err != nil || k.Tenant != "t1" {
		t.Fatalf("after the migration: %+v %v", k, err)
	}
	var v int
	again.DB().QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v)
	if v != len(migrations) {
		t.Errorf("migrated to %d of %d", v, len(migrations))
	}
}

// TestPolicies: a tenant's policy document is put, read back as it was,
// replaced and removed, on SQLite and PostgreSQL; another tenant's is its
// own.
func TestPolicies(t *testing.T) {
	ctx := context.Background()
	eachStore(t, func(t *testing.T, s *SQLStore) {
		if _, err := s.Policy(ctx, "t1"); !errors.Is(err, connections.ErrNotFound) {
			t.Fatalf("no policy yet: %v", err)
		}
		for _, doc := range []string{`{"rules":[]}`, `{"default":"deny","rules":[]}`} {
			if err := s.PutPolicy(ctx, "t1", []byte(doc)); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Policy(ctx, "t1"); err != nil || string(got) != doc {
				t.Fatalf("read back %q %v, want %q", got, err, doc)
			}
		}
		if _, err := s.Policy(ctx, AllTenants); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("another tenant's: %v", err)
		}
		if err := s.PutPolicy(ctx, "t1", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Policy(ctx, "t1"); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("removed: %v", err)
		}
	})
}

// TestCalls: records are appended in a batch, listed newest first by
// filter, and pruned by age and by count, on SQLite and PostgreSQL.
func TestCalls(t *testing.T) {
	ctx := context.Background()
	eachStore(t, func(t *testing.T, s *SQLStore) {
		now := time.Now()
		var recs []history.Record
		for i := range 10 {
			r := history.Record{Tenant: "t1", Tool: "a.x", Person: "u1", At: now.Add(time.Duration(i-10) * time.Minute), Status: 200, Request: "{}", Answer: "{}"}
			if i%2 == 1 {
				r.Tool, r.Person, r.Code = "a.y", "u2", "handler-error"
			}
			recs = append(recs, r)
		}
		recs = append(recs, history.Record{Tenant: "t2", Tool: "a.x", At: now})
		if err := s.AppendCalls(ctx, recs); err != nil {
			t.Fatal(err)
		}
		for f, want := range map[history.Filter]int{{}: 10, {Tool: "a.y"}: 5, {Person: "u1"}: 5, {Status: "error"}: 5, {Status: "ok"}: 5, {Since: now.Add(-3 * time.Minute)}: 3, {Limit: 2}: 2} {
			got, err := s.Calls(ctx, "t1", f)
			if err != nil || len(got) != want {
				t.Errorf("%+v: %d calls, %v; want %d", f, len(got), err, want)
			}
		}
		if got, _ := s.Calls(ctx, "t1", history.Filter{}); !got[0].At.After(got[1].At) {
			t.Error("not newest first")
		}
		n, err := s.PruneCalls(ctx, now.Add(-5*time.Minute), 4)
		if err != nil || n != 5+2 {
			t.Errorf("pruned %d, %v; want 7", n, err)
		}
	})
}
