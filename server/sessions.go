package server

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"time"

	"github.com/httptools/httptools/connections"
)

// The console's sign-in is a session, not the API key: the cookie holds a
// random token whose SHA-256 the store maps to the key's, with an expiry.
// A stolen cookie is not a key (it opens the console only, until it
// expires, its key is revoked or its owner signs out), and no replica keeps
// anything of it in memory.

// SessionStore keeps the console's sessions. SQLKeys is one; a KeyStore
// that is not one has no console sign-in. It must be safe for concurrent
// use.
type SessionStore interface {
	// CreateSession starts a session of key (which must be valid) for ttl
	// and returns its token, once.
	CreateSession(ctx context.Context, key string, ttl time.Duration) (string, error)
	// SessionKey returns the key of a live session; an unknown or expired
	// session, or one whose key is revoked, is connections.ErrNotFound.
	SessionKey(ctx context.Context, token string) (*APIKey, error)
	// EndSession ends a session (signing out); an unknown one is no error.
	EndSession(ctx context.Context, token string) error
}

// SessionPrefix starts every console session token.
const SessionPrefix = "hts_"

var _ SessionStore = (*SQLKeys)(nil)

// CreateSession implements SessionStore.
func (k *SQLKeys) CreateSession(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if _, err := k.KeyOf(ctx, key); err != nil {
		return "", err
	}
	b := make([]byte, 32)
	rand.Read(b)
	token := SessionPrefix + base64.RawURLEncoding.EncodeToString(b)
	now := time.Now()
	ctx, cancel := k.bound(ctx)
	defer cancel()
	// Expired sessions go as new ones come.
	if _, err := k.db.ExecContext(ctx, k.q(`DELETE FROM console_sessions WHERE expires < ?`), now.UnixMilli()); err != nil {
		return "", keyFail("end expired sessions", err)
	}
	_, err := k.db.ExecContext(ctx, k.q(`INSERT INTO console_sessions (hash, key_hash, created, expires) VALUES (?, ?, ?, ?)`),
		keyHash(token), keyHash(key), now.UnixMilli(), now.Add(ttl).UnixMilli())
	if err != nil {
		return "", keyFail("start session", err)
	}
	return token, nil
}

// SessionKey implements SessionStore.
func (k *SQLKeys) SessionKey(ctx context.Context, token string) (*APIKey, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	var rec APIKey
	var created int64
	err := k.db.QueryRowContext(ctx, k.q(`SELECT a.id, a.tenant, a.role, a.person, a.created FROM console_sessions s JOIN api_keys a ON a.hash = s.key_hash
		WHERE s.hash = ? AND s.expires > ? AND a.revoked = 0`), keyHash(token), time.Now().UnixMilli()).
		Scan(&rec.ID, &rec.Tenant, &rec.Role, &rec.Person, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, connections.ErrNotFound
	}
	if err != nil {
		return nil, keyFail("check session", err)
	}
	rec.Created = time.UnixMilli(created)
	return &rec, nil
}

// EndSession implements SessionStore.
func (k *SQLKeys) EndSession(ctx context.Context, token string) error {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	_, err := k.db.ExecContext(ctx, k.q(`DELETE FROM console_sessions WHERE hash = ?`), keyHash(token))
	return keyFail("end session", err)
}
