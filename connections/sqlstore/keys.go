package sqlstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
)

// The service's API keys and the console's sessions. A key or a token is
// 256 random bits and only its SHA-256 is stored (one hash is the right
// one: there is nothing to brute-force); it is shown once and can never be
// read back.

// CreateAPIKey makes a new API key for tenant with a role (person keys
// name their person) and returns it, once.
func (s *SQLStore) CreateAPIKey(ctx context.Context, tenant, role, person string) (string, *auth.APIKey, error) {
	if tenant == "" {
		return "", nil, errors.New("an API key needs a tenant")
	}
	if strings.IndexFunc(tenant, unicode.IsControl) >= 0 {
		// Such names are the service's own (remote MCP registrations).
		return "", nil, fmt.Errorf("tenant %q holds a control character: name it with printable characters", tenant)
	}
	if err := auth.CheckRole(role, person); err != nil {
		return "", nil, err
	}
	key := auth.APIKeyPrefix + randomToken()
	h := tokenHash(key)
	rec := &auth.APIKey{ID: "key_" + h[:16], Tenant: tenant, Role: role, Person: person, Created: time.UnixMilli(time.Now().UnixMilli())}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO api_keys (hash, tenant, created, id, role, person) VALUES (?, ?, ?, ?, ?, ?)`),
		h, tenant, rec.Created.UnixMilli(), rec.ID, role, person)
	if err != nil {
		return "", nil, fail("store API key", err)
	}
	return key, rec, nil
}

// KeyOf returns what an API key is, or connections.ErrNotFound for an
// unknown or revoked key.
func (s *SQLStore) KeyOf(ctx context.Context, key string) (*auth.APIKey, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rec, err := scanKey(s.db.QueryRowContext(ctx, s.q(`SELECT id, tenant, role, person, created, toolset, unattended_tools FROM api_keys WHERE hash = ? AND revoked = 0`), tokenHash(key)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, connections.ErrNotFound
	}
	return rec, fail("check API key", err)
}

// APIKeys lists a tenant's keys that are not revoked ("" lists every
// tenant's, for the CLI).
func (s *SQLStore) APIKeys(ctx context.Context, tenant string) ([]*auth.APIKey, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	q := `SELECT id, tenant, role, person, created, toolset, unattended_tools FROM api_keys WHERE revoked = 0`
	args := []any{}
	if tenant != "" {
		q += ` AND tenant = ?`
		args = append(args, tenant)
	}
	return queryAll(ctx, s, "list API keys", scanKey, q+` ORDER BY tenant, created, id`, args...)
}

// RevokeAPIKey revokes a key by id; tenant "" matches any tenant (the
// CLI). An unknown id, or another tenant's, is connections.ErrNotFound.
func (s *SQLStore) RevokeAPIKey(ctx context.Context, tenant, id string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	q := `UPDATE api_keys SET revoked = ? WHERE id = ? AND revoked = 0`
	args := []any{time.Now().UnixMilli(), id}
	if tenant != "" {
		q += ` AND tenant = ?`
		args = append(args, tenant)
	}
	res, err := s.db.ExecContext(ctx, s.q(q), args...)
	if err != nil {
		return fail("revoke API key", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return connections.ErrNotFound
	}
	return nil
}

// BindToolset binds the key id of tenant to toolset ("" unbinds it): the
// key then sees and runs that toolset's tools only. An unknown id is
// connections.ErrNotFound.
func (s *SQLStore) BindToolset(ctx context.Context, tenant, id, toolset string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE api_keys SET toolset = ? WHERE id = ? AND tenant = ? AND revoked = 0`), toolset, id, tenant)
	if err != nil {
		return fail("bind the key to a toolset", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return connections.ErrNotFound
	}
	return nil
}

// CreateSession starts a console session of key (which must be valid) for
// ttl and returns its token, once. Expired sessions go as new ones come.
func (s *SQLStore) CreateSession(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if _, err := s.KeyOf(ctx, key); err != nil {
		return "", err
	}
	token := auth.SessionPrefix + randomToken()
	now := time.Now()
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM console_sessions WHERE expires < ?`), now.UnixMilli()); err != nil {
		return "", fail("end expired sessions", err)
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO console_sessions (hash, key_hash, created, expires) VALUES (?, ?, ?, ?)`),
		tokenHash(token), tokenHash(key), now.UnixMilli(), now.Add(ttl).UnixMilli())
	if err != nil {
		return "", fail("start session", err)
	}
	return token, nil
}

// SessionKey returns the key of a live session; an unknown or expired
// session, or one whose key is revoked, is connections.ErrNotFound.
func (s *SQLStore) SessionKey(ctx context.Context, token string) (*auth.APIKey, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rec, err := scanKey(s.db.QueryRowContext(ctx, s.q(`SELECT a.id, a.tenant, a.role, a.person, a.created, a.toolset, a.unattended_tools FROM console_sessions s JOIN api_keys a ON a.hash = s.key_hash
		WHERE s.hash = ? AND s.expires > ? AND a.revoked = 0`), tokenHash(token), time.Now().UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, connections.ErrNotFound
	}
	return rec, fail("check session", err)
}

// EndSession ends a session (signing out); an unknown one is no error.
func (s *SQLStore) EndSession(ctx context.Context, token string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM console_sessions WHERE hash = ?`), tokenHash(token))
	return fail("end session", err)
}

func scanKey(row scanner) (*auth.APIKey, error) {
	var rec auth.APIKey
	var created int64
	var unattended string
	if err := row.Scan(&rec.ID, &rec.Tenant, &rec.Role, &rec.Person, &created, &rec.Toolset, &unattended); err != nil {
		return nil, err
	}
	if unattended != "" {
		rec.UnattendedTools = strings.Split(unattended, ",")
	}
	rec.Created = time.UnixMilli(created)
	return &rec, nil
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
