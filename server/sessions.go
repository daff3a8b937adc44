package server

import (
	"context"
	"time"

	"github.com/httptools/httptools/auth"
)

// The console's sign-in is a session, not the API key: the cookie holds a
// random token whose SHA-256 the store maps to the key's, with an expiry.
// A stolen cookie is not a key (it opens the console only, until it
// expires, its key is revoked or its owner signs out), and no replica keeps
// anything of it in memory.

// SessionStore keeps the console's sessions (sqlstore.SQLStore is one); a
// KeyStore that is not one has no console sign-in. It must be safe for concurrent
// use.
type SessionStore interface {
	// CreateSession starts a session of key (which must be valid) for ttl
	// and returns its token, once.
	CreateSession(ctx context.Context, key string, ttl time.Duration) (string, error)
	// SessionKey returns the key of a live session; an unknown or expired
	// session, or one whose key is revoked, is connections.ErrNotFound.
	SessionKey(ctx context.Context, token string) (*auth.APIKey, error)
	// EndSession ends a session (signing out); an unknown one is no error.
	EndSession(ctx context.Context, token string) error
}
