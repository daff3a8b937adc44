package sqlstore

import (
	"testing"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/storetest"
)

// TestConformance: SQLStore passes each store suite on SQLite and on
// PostgreSQL.
func TestConformance(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) *SQLStore{
		"sqlite":   func(t *testing.T) *SQLStore { return openSQLite(t, "") },
		"postgres": func(t *testing.T) *SQLStore { return openPostgres(t, postgresDSN(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			storetest.Connections(t, func(t *testing.T) connections.ConnectionStore { return open(t) })
			storetest.States(t, func(t *testing.T) connections.StateStore { return open(t) })
			storetest.Secrets(t, func(t *testing.T) connections.SecretStore { return open(t) })
		})
	}
}
