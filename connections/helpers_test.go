package connections_test

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/pgtest"
)

// The Manager's tests run on the real stores, SQLite and PostgreSQL.

func testKeys(t testing.TB) *sqlstore.Keyring {
	k, err := sqlstore.NewKeyring(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// openSQLite opens a store on a new SQLite file.
func openSQLite(t testing.TB, path string) *sqlstore.SQLStore {
	if path == "" {
		path = filepath.Join(t.TempDir(), "httptools.db")
	}
	s, err := sqlstore.Open(context.Background(), "sqlite:"+path, testKeys(t), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func postgresDSN(t testing.TB) string { return pgtest.DSN(t) }

func openPostgres(t testing.TB, dsn string) *sqlstore.SQLStore {
	s, err := sqlstore.Open(context.Background(), dsn, testKeys(t), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eachStore runs f against SQLite and PostgreSQL.
func eachStore(t *testing.T, f func(t *testing.T, s *sqlstore.SQLStore)) {
	t.Run("sqlite", func(t *testing.T) { f(t, openSQLite(t, "")) })
	t.Run("postgres", func(t *testing.T) { f(t, openPostgres(t, postgresDSN(t))) })
}

// testStore is what the Manager's tests hand it: connections and states.
type testStore interface {
	ConnectionStore
	StateStore
}
