package connections_test

import (
	"testing"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/storetest"
)

// TestSQLStoreConformance: SQLStore passes each store suite on SQLite and
// on PostgreSQL.
func TestSQLStoreConformance(t *testing.T) {
	for name, open := range connections.NewTestStores() {
		t.Run(name, func(t *testing.T) {
			storetest.Connections(t, func(t *testing.T) connections.ConnectionStore { return open(t) })
			storetest.States(t, func(t *testing.T) connections.StateStore { return open(t) })
			storetest.Secrets(t, func(t *testing.T) connections.SecretStore { return open(t) })
		})
	}
}
