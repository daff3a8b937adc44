package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/synth"
)

// A tenant's secrets, sealed with the keyring and bound to their row.

func secretAAD(tenant string, ref synth.SecretRef) string {
	return "secret/" + tenant + "/" + ref.EnvName + "/" + ref.Name
}

// PutSecret implements Store.
func (s *SQLStore) PutSecret(ctx context.Context, tenant string, ref synth.SecretRef, value string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO secrets (tenant, env_name, name, key_id, value, updated) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, env_name, name) DO UPDATE SET key_id = excluded.key_id, value = excluded.value, updated = excluded.updated`),
		tenant, ref.EnvName, ref.Name, s.keys.KeyID(), s.keys.Seal([]byte(value), []byte(secretAAD(tenant, ref))), ms(time.Now()))
	return fail("store secret", err)
}

// Secret implements Store.
func (s *SQLStore) Secret(ctx context.Context, tenant string, ref synth.SecretRef) (string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	v, _, err := s.openSecret(ctx, tenant, ref)
	return v, err
}

// openSecret reads the secret and opens it: its value and the sealed bytes
// it was read as.
func (s *SQLStore) openSecret(ctx context.Context, tenant string, ref synth.SecretRef) (string, []byte, error) {
	var keyID string
	var sealed []byte
	err := s.db.QueryRowContext(ctx, s.q(`SELECT key_id, value FROM secrets WHERE tenant = ? AND env_name = ? AND name = ?`), tenant, ref.EnvName, ref.Name).Scan(&keyID, &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, fmt.Errorf("no secret %s in tenant %s: %w", ref, tenant, synth.ErrSecretNotFound)
	}
	if err != nil {
		return "", nil, fail("read secret", err)
	}
	b, err := s.keys.Open(keyID, sealed, []byte(secretAAD(tenant, ref)))
	if err != nil {
		return "", nil, fail("decrypt secret", err)
	}
	return string(b), sealed, nil
}

// SecretRefs implements Store.
func (s *SQLStore) SecretRefs(ctx context.Context, tenant string) ([]synth.SecretRef, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return queryAll(ctx, s, "list secrets", func(row scanner) (synth.SecretRef, error) {
		var r synth.SecretRef
		return r, row.Scan(&r.EnvName, &r.Name)
	}, `SELECT env_name, name FROM secrets WHERE tenant = ? ORDER BY env_name, name`, tenant)
}

// DeleteSecret implements Store.
func (s *SQLStore) DeleteSecret(ctx context.Context, tenant string, ref synth.SecretRef) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM secrets WHERE tenant = ? AND env_name = ? AND name = ?`), tenant, ref.EnvName, ref.Name)
	if err != nil {
		return fail("delete secret", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return connections.ErrNotFound
	}
	return nil
}

// DeleteSecretIf deletes the secret if match holds of its value, and only
// the value match read: a secret put meanwhile (another replica's) is
// kept, as each put seals it anew. It reports whether it deleted.
func (s *SQLStore) DeleteSecretIf(ctx context.Context, tenant string, ref synth.SecretRef, match func(value string) bool) (bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	v, sealed, err := s.openSecret(ctx, tenant, ref)
	if errors.Is(err, synth.ErrSecretNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !match(v) {
		return false, nil
	}
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM secrets WHERE tenant = ? AND env_name = ? AND name = ? AND value = ?`), tenant, ref.EnvName, ref.Name, sealed)
	if err != nil {
		return false, fail("delete secret", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
