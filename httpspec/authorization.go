package httpspec

import (
	"context"
	"errors"
	"fmt"
	"github.com/httptools/httptools/auth"

	"github.com/httptools/httptools/synth"
)

// Kinds of authorization a spec may declare.
const (
	AuthBearer     = "bearer"
	AuthHeader     = "header"
	AuthConnection = "connection"
)

// Authorization is the authorization of an http tool (HttpAuthSpec): a
// secret sent as a bearer token or in a named header, or a declared
// connection.
type Authorization struct {
	Kind       string           `json:"kind"`
	SecretRef  *synth.SecretRef `json:"secretRef,omitempty"`
	HeaderName string           `json:"headerName,omitempty"`
	Connection string           `json:"connection,omitempty"`
}

// credential is a resolved Authorization: one header to set, and the
// secret inside it that must never be shown.
type credential struct {
	Header string // canonical header name
	Value  string // the whole header value
	Secret string // the secret or token in Value
}

// credentialVar names the environment variable a person could hold the
// credential of spec in, for printing a request:
// HTTPTOOLS_SECRET_<ENV>_<NAME>, or HTTPTOOLS_TOKEN_<CONNECTION> for a
// connection's token; "" for none.
func credentialVar(spec *Authorization) string {
	switch {
	case spec == nil:
		return ""
	case spec.Kind == AuthConnection:
		return auth.TokenVar(spec.Connection)
	case spec.SecretRef != nil:
		return auth.EnvVar(*spec.SecretRef)
	}
	return ""
}

// resolveCredential resolves the authorization of one call of h. rejected
// is the connection token the upstream just refused with 401, "" on a first
// try: the source is asked for a new one. Errors are *synth.Error with code precondition-failed
// and reason secret-unavailable or a connection reason; their messages name
// the reference, never a value.
func (h *Handler) resolveCredential(ctx context.Context, cc synth.CallContext, rejected string) (credential, error) {
	spec := h.spec.Authorization
	switch spec.Kind {
	case AuthBearer, AuthHeader:
		ref := *spec.SecretRef
		r := cc.Secrets
		if r == nil {
			return credential{}, synth.PreconditionFailed(synth.ReasonSecretUnavailable,
				"the tool needs secret %s but no secret resolver is wired into the call", ref)
		}
		v, err := r.ResolveSecret(ctx, ref)
		if err != nil {
			return credential{}, secretError(ref, err)
		}
		if spec.Kind == AuthBearer {
			return credential{Header: "Authorization", Value: "Bearer " + v, Secret: v}, nil
		}
		return credential{Header: spec.HeaderName, Value: v, Secret: v}, nil
	case AuthConnection:
		if h.conn == nil { // load-time rules make this unreachable
			return credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable, "connection %q is not declared in needsSpec.connections", spec.Connection)
		}
		need := h.conn.need
		src := cc.Connections
		if src == nil {
			return credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable,
				"the tool needs connection %q (app %s, as %s) but no connection source is wired into the call", spec.Connection, need.App, need.As)
		}
		if need.As == synth.AsPerson && cc.Person == "" {
			return credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable,
				"connection %q uses the run's person's %s account, but the run has no person", spec.Connection, need.App)
		}
		tok, err := src.AccessToken(ctx, synth.ConnectionRequest{
			Name: spec.Connection, Need: need, ToolID: h.toolID,
			Tenant: cc.Tenant, Person: cc.Person, ForceRefresh: rejected != "", Rejected: rejected,
		})
		if err != nil {
			var e *synth.Error
			if errors.As(err, &e) {
				return credential{}, e
			}
			return credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable, "connection %q (app %s): %v", spec.Connection, need.App, err)
		}
		return credential{Header: "Authorization", Value: "Bearer " + tok, Secret: tok}, nil
	}
	return credential{}, fmt.Errorf("httpspec: unknown authorization kind %q", spec.Kind)
}

func secretError(ref synth.SecretRef, err error) error {
	if errors.Is(err, synth.ErrSecretNotFound) {
		return synth.PreconditionFailed(synth.ReasonSecretUnavailable,
			"secret %s is not set: store it for the tenant, or for local use set %s", ref, auth.EnvVar(ref))
	}
	// Any other failure is the resolver's backend (a store that is down,
	// frozen or unreadable), not the call's: it may be tried again. The
	// backend's words stay in Err, out of the message.
	return &synth.Error{Code: synth.CodePreconditionFailed, Reason: synth.ReasonStoreUnavailable,
		Message: fmt.Sprintf("secret %s could not be read: the secret store is unavailable for now: try again shortly", ref), Err: err}
}
