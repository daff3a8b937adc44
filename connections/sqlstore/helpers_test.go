package sqlstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/httptools/httptools/internal/pgtest"
)

func testKeys(t testing.TB) *Keyring {
	k, err := NewKeyring(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// openSQLite opens a store on a new SQLite file.
func openSQLite(t testing.TB, path string) *SQLStore {
	if path == "" {
		path = filepath.Join(t.TempDir(), "httptools.db")
	}
	s, err := Open(context.Background(), "sqlite:"+path, testKeys(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// postgresDSN is a new schema on the test server (pgtest).
func postgresDSN(t testing.TB) string { return pgtest.DSN(t) }

func openPostgres(t testing.TB, dsn string) *SQLStore {
	s, err := Open(context.Background(), dsn, testKeys(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eachStore runs f on a new store on SQLite and on PostgreSQL.
func eachStore(t *testing.T, f func(t *testing.T, s *SQLStore)) {
	t.Run("sqlite", func(t *testing.T) { f(t, openSQLite(t, "")) })
	t.Run("postgres", func(t *testing.T) { f(t, openPostgres(t, postgresDSN(t))) })
}
