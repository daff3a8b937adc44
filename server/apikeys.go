package server

import (
	"context"

	"github.com/httptools/httptools/auth"
)

// ToolsetBinder is a KeyStore that can bind a key to a toolset
// (sqlstore.SQLStore is one). It must be safe for concurrent use.
type ToolsetBinder interface {
	BindToolset(ctx context.Context, tenant, id, toolset string) error
}

// UnattendedSetter is a KeyStore that keeps a service key's unattended
// tools (sqlstore.SQLStore is one). It must be safe for concurrent use.
type UnattendedSetter interface {
	SetUnattendedTools(ctx context.Context, tenant, id string, tools []string) error
}

// KeyStore keeps API keys, stored hashed (sqlstore.SQLStore is one). Errors are connections.ErrNotFound
// for an unknown key or id, or wrap connections.ErrUnavailable.
// It must be safe for concurrent use: every request checks its key through it.
type KeyStore interface {
	// CreateAPIKey makes a key for tenant with a role and returns it once.
	CreateAPIKey(ctx context.Context, tenant, role, person string) (string, *auth.APIKey, error)
	// KeyOf returns what a key is; unknown or revoked is ErrNotFound.
	KeyOf(ctx context.Context, key string) (*auth.APIKey, error)
	// APIKeys lists a tenant's keys not revoked ("" lists every tenant's).
	APIKeys(ctx context.Context, tenant string) ([]*auth.APIKey, error)
	// RevokeAPIKey revokes a key by id within tenant ("" matches any).
	RevokeAPIKey(ctx context.Context, tenant, id string) error
}
