package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/synth"
)

// The service's operations on a tenant's connections and secrets, for the
// key that asks: REST (connroutes.go, secrets.go) and the console
// (ui_account.go) both call these, and only word the outcome. Errors are
// *refusal.

// notFound is the refusal of a thing the tenant does not have.
func notFound(msg string) *refusal {
	return &refusal{status: http.StatusNotFound, code: "not-found", msg: msg}
}

// forbiddenErr is the refusal of what the key's role may not do.
func forbiddenErr(msg string) *refusal {
	return &refusal{status: http.StatusForbidden, code: "forbidden", reason: "role", msg: msg}
}

// storeRefusal logs a store failure and is its refusal: 503 with
// Retry-After, and no word of the driver's.
func (s *Server) storeRefusal(what string, err error) *refusal {
	s.storeFailed(what, err)
	return &refusal{status: http.StatusServiceUnavailable, code: synth.ReasonStoreUnavailable, reason: synth.ReasonStoreUnavailable,
		retryAfter: retryAfter, msg: "the store is unavailable for now (" + what + "): try again shortly"}
}

// connectionsOf lists the connections k may see: a person key its own,
// other keys the tenant's.
func (s *Server) connectionsOf(ctx context.Context, k *auth.APIKey) ([]ConnectionView, error) {
	recs, err := s.cfg.Store.Connections(ctx, k.Tenant)
	if err != nil {
		return nil, s.storeRefusal("listing connections", err)
	}
	out := make([]ConnectionView, 0, len(recs))
	for _, rec := range recs {
		if k.Role == auth.RolePerson && rec.Owner != connections.OwnerPerson(k.Person) {
			continue // a person sees its own connections only
		}
		out = append(out, connectionView(rec))
	}
	return out, nil
}

// startConnect starts the connect flow of app for a company (as
// "company", no person) or a person's account, and returns the provider's
// URL to send the person to. A person key connects its own account.
func (s *Server) startConnect(ctx context.Context, k *auth.APIKey, app, as, person string) (string, error) {
	if s.cfg.Manager == nil {
		return "", notFound("no apps are configured: start serve with --apps apps.json")
	}
	if k.Role == auth.RolePerson && as == synth.AsPerson && person == "" {
		person = k.Person // a person key connects its own account
	}
	var owner string
	switch {
	case as == synth.AsCompany && person == "":
		owner = connections.OwnerCompany
	case as == synth.AsPerson && person != "":
		owner = connections.OwnerPerson(person)
	default:
		return "", &refusal{status: http.StatusBadRequest, code: "bad-request", msg: `the body must be {"as":"person","person":"…"} or {"as":"company"}`}
	}
	if refused := mayManage(k, owner); refused != "" {
		return "", forbiddenErr(refused)
	}
	url, err := s.cfg.Manager.Authorize(ctx, k.Tenant, app, owner)
	switch {
	case errors.Is(err, connections.ErrUnavailable):
		return "", s.storeRefusal("starting the connect flow", err)
	case err != nil:
		return "", notFound(err.Error())
	}
	return url, nil
}

// revokeConnectionOf revokes connection id for k: an admin key any of
// the tenant's, a service key a person's, a person key its own (another
// person's is, to it, no such connection).
func (s *Server) revokeConnectionOf(ctx context.Context, k *auth.APIKey, id string) error {
	if k.Role != auth.RoleAdmin {
		recs, err := s.cfg.Store.Connections(ctx, k.Tenant)
		if err != nil {
			return s.storeRefusal("finding the connection", err)
		}
		for _, rec := range recs {
			if rec.ID != id {
				continue
			}
			if refused := mayManage(k, rec.Owner); refused != "" {
				if k.Role == auth.RolePerson {
					return notFound("no such connection") // another person's is none of its business
				}
				return forbiddenErr(refused)
			}
		}
	}
	var err error
	if s.cfg.Manager != nil {
		err = s.cfg.Manager.Revoke(ctx, k.Tenant, id)
	} else {
		err = s.cfg.Store.RevokeConnection(ctx, k.Tenant, id)
	}
	return s.removal(err, "connection")
}

// secretsOf lists the names of the tenant's secrets, never a value: an
// admin key's business only.
func (s *Server) secretsOf(ctx context.Context, k *auth.APIKey) ([]synth.SecretRef, error) {
	if k.Role != auth.RoleAdmin {
		return nil, forbiddenErr("secrets are managed with an admin key")
	}
	refs, err := s.cfg.Store.SecretRefs(ctx, k.Tenant)
	if err != nil {
		return nil, s.storeRefusal("listing secrets", err)
	}
	if refs == nil {
		refs = []synth.SecretRef{}
	}
	return refs, nil
}

// setSecret stores a secret's value for the tenant (admin keys only).
func (s *Server) setSecret(ctx context.Context, k *auth.APIKey, ref synth.SecretRef, value string) error {
	if k.Role != auth.RoleAdmin {
		return forbiddenErr("secrets are managed with an admin key")
	}
	if value == "" {
		return &refusal{status: http.StatusBadRequest, code: "bad-request", msg: `the body must be {"value": "…"} with a non-empty value`}
	}
	if err := s.cfg.Store.PutSecret(ctx, k.Tenant, ref, value); err != nil {
		return s.storeRefusal("storing the secret", err)
	}
	return nil
}

// deleteSecretOf deletes a secret of the tenant (admin keys only).
func (s *Server) deleteSecretOf(ctx context.Context, k *auth.APIKey, ref synth.SecretRef) error {
	if k.Role != auth.RoleAdmin {
		return forbiddenErr("secrets are managed with an admin key")
	}
	return s.removal(s.cfg.Store.DeleteSecret(ctx, k.Tenant, ref), "secret")
}

// removal is the outcome of a removal: nil, no such thing, or the store's
// failure.
func (s *Server) removal(err error, what string) error {
	switch {
	case errors.Is(err, connections.ErrNotFound):
		return notFound("no such " + what)
	case err != nil:
		return s.storeRefusal("removing the "+what, err)
	}
	return nil
}
