package connections

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

// TestAPIKeys: keys are stored hashed, one tenant each, revocable. (The
// connection, state and secret suites are storetest's:
// TestSQLStoreConformance.)
func TestAPIKeys(t *testing.T) {
	eachStore(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		// API keys: stored hashed, one tenant each.
		key, _, err := s.CreateAPIKey(ctx, "t1", RoleService, "")
		if err != nil || !strings.HasPrefix(key, APIKeyPrefix) || len(key) < 40 {
			t.Fatalf("key %q %v", key, err)
		}
		k, err := s.KeyOf(ctx, key)
		if err != nil || k.Tenant != "t1" || k.Role != RoleService {
			t.Errorf("key %+v %v", k, err)
		}
		if _, err := s.KeyOf(ctx, key+"x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a wrong key: %v", err)
		}
		pkey, pk, err := s.CreateAPIKey(ctx, "t1", RolePerson, "u1")
		if err != nil || pk.Person != "u1" {
			t.Fatalf("person key %+v %v", pk, err)
		}
		if _, _, err := s.CreateAPIKey(ctx, "t1", RolePerson, ""); err == nil {
			t.Error("a person key without a person")
		}
		if keys, err := s.APIKeys(ctx, "t1"); err != nil || len(keys) != 2 {
			t.Errorf("APIKeys: %v %v", keys, err)
		}
		if err := s.RevokeAPIKey(ctx, "t2", pk.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("another tenant revoked a key: %v", err)
		}
		if err := s.RevokeAPIKey(ctx, "t1", pk.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.KeyOf(ctx, pkey); !errors.Is(err, ErrNotFound) {
			t.Errorf("a revoked key still works: %v", err)
		}
		var n int
		s.db.QueryRow(s.q(`SELECT COUNT(*) FROM api_keys WHERE hash = ?`), key).Scan(&n)
		if n != 0 {
			t.Error("the key is stored in clear")
		}
	})
}

// TestTokensEncryptedAtRest reads the raw database and finds no token,
// refresh token, verifier or secret value in it.
func TestTokensEncryptedAtRest(t *testing.T) {
	secrets := []string{"at-PLAINTEXT-access", "rt-PLAINTEXT-refresh", "v-PLAINTEXT-verifier", "sv-PLAINTEXT-secret"}
	fill := func(s *SQLStore) {
		ctx := context.Background()
		s.SaveConnection(ctx, &Record{Tenant: "t", App: "a", Owner: OwnerCompany, AccessToken: secrets[0], RefreshToken: secrets[1]})
		s.PutState(ctx, &State{State: "st", Tenant: "t", App: "a", Owner: OwnerCompany, Verifier: secrets[2], Expires: time.Now().Add(time.Hour)})
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
