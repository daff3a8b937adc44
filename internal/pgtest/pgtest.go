// Package pgtest gives tests a PostgreSQL of their own: a new, empty
// schema on the server HTTPTOOLS_TEST_POSTGRES names, dropped after the
// test. .ci/run starts a server and sets the variable; without it the
// tests that need PostgreSQL skip, and with it set to a server that cannot
// be used they fail rather than skip.
package pgtest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// Env names the server the tests use.
const Env = "HTTPTOOLS_TEST_POSTGRES"

// Available reports whether Env is set.
func Available() bool { return os.Getenv(Env) != "" }

// DSN returns the DSN of a new, empty schema, dropped when t ends; it
// skips t when Env is unset.
func DSN(t testing.TB) string {
	base := os.Getenv(Env)
	if base == "" {
		t.Skipf("%s is not set: no PostgreSQL to test against (.ci/run sets it)", Env)
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
		t.Fatalf("%s is set but PostgreSQL is not usable: %v", Env, err)
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
