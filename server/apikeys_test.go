package server

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/pgtest"
)

// TestSQLKeys: keys are stored hashed, one tenant each, revocable, on the
// SQL store's SQLite and PostgreSQL databases and on a bare SQLite
// database (where SQLKeys makes its own table).
func TestSQLKeys(t *testing.T) {
	ctx := context.Background()
	keyring, _ := sqlstore.NewKeyring(make([]byte, 32))
	for name, open := range map[string]func(t *testing.T) (*sql.DB, bool){
		"sqlite store": func(t *testing.T) (*sql.DB, bool) {
			s, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "k.db"), keyring)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s.DB(), false
		},
		"postgres store": func(t *testing.T) (*sql.DB, bool) {
			s, err := sqlstore.Open(ctx, pgtest.DSN(t), keyring)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s.DB(), true
		},
		"bare sqlite": func(t *testing.T) (*sql.DB, bool) {
			db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "bare.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db, false
		},
	} {
		t.Run(name, func(t *testing.T) {
			db, pg := open(t)
			s, err := NewSQLKeys(ctx, db, pg)
			if err != nil {
				t.Fatal(err)
			}
			key, _, err := s.CreateAPIKey(ctx, "t1", RoleService, "")
			if err != nil || !strings.HasPrefix(key, APIKeyPrefix) || len(key) < 40 {
				t.Fatalf("key %q %v", key, err)
			}
			k, err := s.KeyOf(ctx, key)
			if err != nil || k.Tenant != "t1" || k.Role != RoleService {
				t.Errorf("key %+v %v", k, err)
			}
			if _, err := s.KeyOf(ctx, key+"x"); !errors.Is(err, connections.ErrNotFound) {
				t.Errorf("a wrong key: %v", err)
			}
			pkey, pk, err := s.CreateAPIKey(ctx, "t1", RolePerson, "u1")
			if err != nil || pk.Person != "u1" {
				t.Fatalf("person key %+v %v", pk, err)
			}
			if _, _, err := s.CreateAPIKey(ctx, "t1", RolePerson, ""); err == nil {
				t.Error("a person key without a person")
			}
			if keys, err := s.APIKeys(ctx, "t1"); err != nil || len(keys) != 2 {
				t.Errorf("APIKeys: %v %v", keys, err)
			}
			if all, _ := s.APIKeys(ctx, ""); len(all) != 2 {
				t.Errorf("every tenant's keys: %d", len(all))
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
			var n int
			db.QueryRow(s.q(`SELECT COUNT(*) FROM api_keys WHERE hash = ?`), key).Scan(&n)
			if n != 0 {
				t.Error("the key is stored in clear")
			}
			if _, err := NewSQLKeys(ctx, db, pg); err != nil {
				t.Errorf("opening the keys again: %v", err)
			}
		})
	}
}

// testStore is a SQL store with the service's API keys beside it, as serve
// wires them.
type testStore struct {
	*sqlstore.SQLStore
	*SQLKeys
}

func openTestStore(tb testing.TB, path string, keyring *sqlstore.Keyring) *testStore {
	s, err := sqlstore.Open(context.Background(), "sqlite:"+path, keyring)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	k, err := NewSQLKeys(context.Background(), s.DB(), false)
	if err != nil {
		tb.Fatal(err)
	}
	return &testStore{s, k}
}
