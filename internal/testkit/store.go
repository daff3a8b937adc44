package testkit

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/pgtest"
)

// The real SQL stores, for tests outside package sqlstore (whose own
// tests cannot import this package): a SQLite file of the test's own, or a
// PostgreSQL schema of its own (pgtest), closed when the test ends.

// Keyring is a keyring of one all-zero key: tests need sealing, not
// secrecy.
func Keyring(t testing.TB) *sqlstore.Keyring {
	k, err := sqlstore.NewKeyring(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// SQLiteStore opens a store on the SQLite file path ("" for a new one in the
// test's temporary folder) with keys (nil: Keyring's).
func SQLiteStore(t testing.TB, path string, keys *sqlstore.Keyring) *sqlstore.SQLStore {
	if path == "" {
		path = filepath.Join(t.TempDir(), "httptools.db")
	}
	return open(t, "sqlite:"+path, keys)
}

// PostgresDSN is a new, empty schema on the test server (pgtest.DSN: the
// test skips without one).
func PostgresDSN(t testing.TB) string { return pgtest.DSN(t) }

// PostgresStore opens a store on dsn (PostgresDSN's) with keys (nil:
// Keyring's).
func PostgresStore(t testing.TB, dsn string, keys *sqlstore.Keyring) *sqlstore.SQLStore {
	return open(t, dsn, keys)
}

func open(t testing.TB, dsn string, keys *sqlstore.Keyring) *sqlstore.SQLStore {
	if keys == nil {
		keys = Keyring(t)
	}
	s, err := sqlstore.Open(context.Background(), dsn, keys, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
