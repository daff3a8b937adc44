package connections

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

// TestStoreSuite is the conformance suite every Store passes.
func TestStoreSuite(t *testing.T) {
	eachStore(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		exp := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
		rec, err := s.SaveConnection(ctx, &Record{Tenant: "t1", App: "google", Owner: OwnerPerson("u1"),
			Permissions: []string{"gmail.send"}, Scopes: []string{"s1"}, AccessToken: "at-secret-1", RefreshToken: "rt-secret-1", Expiry: exp})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Version != 1 || rec.Status != StatusActive || !strings.HasPrefix(rec.ID, "conn_") {
			t.Errorf("saved %+v", rec)
		}
		got, err := s.Connection(ctx, "t1", "google", OwnerPerson("u1"))
		if err != nil || got.AccessToken != "at-secret-1" || got.RefreshToken != "rt-secret-1" || !got.Expiry.Equal(exp) || got.Permissions[0] != "gmail.send" {
			t.Fatalf("read back %+v, %v", got, err)
		}
		// Saving again keeps the id and bumps the version.
		again, _ := s.SaveConnection(ctx, &Record{Tenant: "t1", App: "google", Owner: OwnerPerson("u1"), AccessToken: "at-2"})
		if again.ID != rec.ID || again.Version != 2 {
			t.Errorf("second save: id %s version %d", again.ID, again.Version)
		}
		// Other tenants, apps and owners see nothing.
		for _, k := range [][3]string{{"t2", "google", OwnerPerson("u1")}, {"t1", "google", OwnerPerson("u2")}, {"t1", "google", OwnerCompany}, {"t1", "github", OwnerPerson("u1")}} {
			if _, err := s.Connection(ctx, k[0], k[1], k[2]); !errors.Is(err, ErrNotFound) {
				t.Errorf("%v: %v, want ErrNotFound", k, err)
			}
		}
		if err := s.RevokeConnection(ctx, "t2", rec.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("another tenant revoked it: %v", err)
		}
		list, _ := s.Connections(ctx, "t1")
		other, _ := s.Connections(ctx, "t2")
		if len(list) != 1 || len(other) != 0 {
			t.Errorf("lists: t1 %d, t2 %d", len(list), len(other))
		}
		if err := s.RevokeConnection(ctx, "t1", rec.ID); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Connection(ctx, "t1", "google", OwnerPerson("u1"))
		if got.Status != StatusRevoked || got.AccessToken != "" || got.RefreshToken != "" {
			t.Errorf("revoked: %+v", got)
		}

		// States are single use.
		if err := s.PutState(ctx, &State{State: "st-1", Tenant: "t1", App: "google", Owner: OwnerCompany, Verifier: "v-secret", Expires: exp}); err != nil {
			t.Fatal(err)
		}
		st, err := s.TakeState(ctx, "st-1")
		if err != nil || st.Verifier != "v-secret" || st.Owner != OwnerCompany {
			t.Fatalf("take: %+v %v", st, err)
		}
		if _, err := s.TakeState(ctx, "st-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("second take: %v", err)
		}

		// Secrets, by tenant.
		ref := synth.SecretRef{EnvName: "production", Name: "TOKEN"}
		s.PutSecret(ctx, "t1", ref, "sv-secret-1")
		s.PutSecret(ctx, "t1", ref, "sv-secret-2")
		if v, err := s.Secret(ctx, "t1", ref); v != "sv-secret-2" || err != nil {
			t.Errorf("secret %q %v", v, err)
		}
		if _, err := s.Secret(ctx, "t2", ref); !errors.Is(err, synth.ErrSecretNotFound) {
			t.Errorf("another tenant's secret: %v", err)
		}
		refs, _ := s.SecretRefs(ctx, "t1")
		if len(refs) != 1 || refs[0] != ref {
			t.Errorf("refs %v", refs)
		}
		if err := s.DeleteSecret(ctx, "t2", ref); !errors.Is(err, ErrNotFound) {
			t.Errorf("another tenant deleted it: %v", err)
		}
		if err := s.DeleteSecret(ctx, "t1", ref); err != nil {
			t.Error(err)
		}
		if err := s.Ping(ctx); err != nil {
			t.Error(err)
		}

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

// TestUpdateLockedSerializes: 20 concurrent read-modify-writes under the
// row lock lose no update.
func TestUpdateLockedSerializes(t *testing.T) {
	eachStore(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		s.SaveConnection(ctx, &Record{Tenant: "t", App: "a", Owner: OwnerCompany, LastError: "0"})
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.UpdateLocked(ctx, "t", "a", OwnerCompany, func(cur *Record) (*Record, error) {
					var n int
					fmt.Sscan(cur.LastError, &n)
					next := *cur
					next.LastError = fmt.Sprint(n + 1)
					return &next, nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		got, _ := s.Connection(ctx, "t", "a", OwnerCompany)
		if got.LastError != "20" || got.Version != 21 {
			t.Errorf("counter %s, version %d; want 20 and 21", got.LastError, got.Version)
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
