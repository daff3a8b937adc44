package sqlstore

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/httptools/httptools/connections"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

// TestTokensEncryptedAtRest reads the raw database and finds no token,
// refresh token, verifier or secret value in it.
func TestTokensEncryptedAtRest(t *testing.T) {
	secrets := []string{"at-PLAINTEXT-access", "rt-PLAINTEXT-refresh", "v-PLAINTEXT-verifier", "sv-PLAINTEXT-secret"}
	fill := func(s *SQLStore) {
		ctx := context.Background()
		s.SaveConnection(ctx, &connections.Record{Tenant: "t", App: "a", Owner: connections.OwnerCompany, AccessToken: secrets[0], RefreshToken: secrets[1]})
		s.PutState(ctx, &connections.State{State: "st", Tenant: "t", App: "a", Owner: connections.OwnerCompany, Verifier: secrets[2], Expires: time.Now().Add(time.Hour)})
		s.PutSecret(ctx, "t", synth.SecretRef{EnvName: "e", Name: "n"}, secrets[3])
	}
	t.Run("sqlite file", func(t *testing.T) {
		path := t.TempDir() + "/raw.db"
		s := openSQLite(t, path)
		fill(s)
		s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		var raw []byte
		for _, p := range []string{path, path + "-wal"} {
			b, _ := os.ReadFile(p)
			raw = append(raw, b...)
		}
		if len(raw) == 0 {
			t.Fatal("read nothing")
		}
		for _, sec := range secrets {
			if strings.Contains(string(raw), sec) || strings.Contains(string(raw), strings.TrimPrefix(sec, "at-")) {
				t.Errorf("%s is in the database file", sec)
			}
		}
	})
	t.Run("postgres rows", func(t *testing.T) {
		s := openPostgres(t, postgresDSN(t))
		fill(s)
		for _, q := range []string{
			`SELECT encode(access_token, 'escape') || encode(refresh_token, 'escape') FROM connections`,
			`SELECT encode(verifier, 'escape') FROM oauth_states`,
			`SELECT encode(value, 'escape') FROM secrets`,
		} {
			var raw string
			if err := s.db.QueryRow(q).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			for _, sec := range secrets {
				if strings.Contains(raw, sec) {
					t.Errorf("%s is in the rows (%s)", sec, q)
				}
			}
		}
	})
}

// TestTenantSecretsChain: the service's resolver chain reads the tenant's
// store first, then the environment; another tenant's secret is not found.
func TestTenantSecretsChain(t *testing.T) {
	s := openSQLite(t, "")
	ctx := context.Background()
	ref := synth.SecretRef{EnvName: "production", Name: "TOKEN"}
	s.PutSecret(ctx, "t1", ref, "from-store")
	env := auth.Env{LookupEnv: func(k string) (string, bool) { return "from-env", k == auth.EnvVar(ref) }}
	for tenant, want := range map[string]string{"t1": "from-store", "t2": "from-env"} {
		v, err := auth.Chain{auth.TenantSecrets{Store: s, Tenant: tenant}, env}.ResolveSecret(ctx, ref)
		if err != nil || v != want {
			t.Errorf("%s: %q %v, want %q", tenant, v, err, want)
		}
	}
	if _, err := (auth.TenantSecrets{Store: s, Tenant: "t2"}).ResolveSecret(ctx, ref); !errors.Is(err, synth.ErrSecretNotFound) {
		t.Errorf("t2 alone: %v", err)
	}
}
