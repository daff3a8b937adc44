package connections

import "testing"

// NewTestStores returns, by name, makers of new, empty SQLite and
// PostgreSQL stores (PostgreSQL skips without HTTPTOOLS_TEST_POSTGRES), for
// the package's external tests.
func NewTestStores() map[string]func(t *testing.T) *SQLStore {
	return map[string]func(t *testing.T) *SQLStore{
		"sqlite":   func(t *testing.T) *SQLStore { return openSQLite(t, "") },
		"postgres": func(t *testing.T) *SQLStore { return openPostgres(t, postgresDSN(t)) },
	}
}
