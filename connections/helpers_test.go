package connections

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// PostgresEnv names the database the PostgreSQL tests use. .ci/run starts a
// server and sets it; when it is set and the server cannot be reached, the
// tests fail rather than skip.
const PostgresEnv = "HTTPTOOLS_TEST_POSTGRES"

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
	s, err := Open(context.Background(), "sqlite:"+path, testKeys(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// postgresDSN returns the DSN of a new, empty schema on the test server,
// dropped after the test; it skips when PostgresEnv is unset.
func postgresDSN(t testing.TB) string {
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skipf("%s is not set: no PostgreSQL to test against (.ci/run sets it)", PostgresEnv)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	b := make([]byte, 6)
	rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("%s is set but PostgreSQL is not usable: %v", PostgresEnv, err)
	}
	t.Cleanup(func() {
		if a, err := sql.Open("pgx", base); err == nil {
			a.Exec("DROP SCHEMA " + schema + " CASCADE")
			a.Close()
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func openPostgres(t testing.TB, dsn string) *SQLStore {
	s, err := Open(context.Background(), dsn, testKeys(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eachStore runs f against SQLite and PostgreSQL.
func eachStore(t *testing.T, f func(t *testing.T, s *SQLStore)) {
	t.Run("sqlite", func(t *testing.T) { f(t, openSQLite(t, "")) })
	t.Run("postgres", func(t *testing.T) { f(t, openPostgres(t, postgresDSN(t))) })
}

// testStore is what the Manager's tests hand it: connections and states.
type testStore interface {
	ConnectionStore
	StateStore
}
