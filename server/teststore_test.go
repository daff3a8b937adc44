package server

import (
	"testing"

	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/testkit"
)

// testStore is the SQL store, as serve wires it: connections, secrets, API
// keys and console sessions on one database.
type testStore = sqlstore.SQLStore

func openTestStore(tb testing.TB, path string, keyring *sqlstore.Keyring) *testStore {
	return testkit.SQLiteStore(tb, path, keyring)
}
