package connections_test

import (
	"testing"

	. "github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/testkit"
)

// The Manager's tests run on the real stores, SQLite and PostgreSQL.

// openSQLite opens a store on a new SQLite file ("" for a new one).
func openSQLite(t testing.TB, path string) *sqlstore.SQLStore {
	return testkit.SQLiteStore(t, path, nil)
}

func postgresDSN(t testing.TB) string { return testkit.PostgresDSN(t) }

func openPostgres(t testing.TB, dsn string) *sqlstore.SQLStore {
	return testkit.PostgresStore(t, dsn, nil)
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
