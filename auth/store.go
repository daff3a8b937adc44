package auth

import (
	"context"

	"github.com/httptools/httptools/synth"
)

// SecretStore reads a tenant's stored secrets; connections.SecretStore (and
// so the SQL store) is one.
// It must be safe for concurrent use: every call resolves through it.
type SecretStore interface {
	Secret(ctx context.Context, tenant string, ref synth.SecretRef) (string, error)
}

// TenantSecrets resolves secrets from one tenant's part of a store: the
// first link of the service's chain (auth.Chain{TenantSecrets{…}, Env{}}).
type TenantSecrets struct {
	Store  SecretStore
	Tenant string
}

var _ synth.SecretResolver = TenantSecrets{}

// ResolveSecret implements synth.SecretResolver.
func (t TenantSecrets) ResolveSecret(ctx context.Context, ref synth.SecretRef) (string, error) {
	return t.Store.Secret(ctx, t.Tenant, ref)
}
