package server

import (
	"context"
	"testing"

	"github.com/httptools/httptools/connections/sqlstore"
)

// testStore is the SQL store, as serve wires it: connections, secrets, API
// keys and console sessions on one database.
type testStore = sqlstore.SQLStore

func openTestStore(tb testing.TB, path string, keyring *sqlstore.Keyring) *testStore {
	s, err := sqlstore.Open(context.Background(), "sqlite:"+path, keyring, sqlstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
