package auth

import (
	"context"
	"errors"
	"fmt"

	"github.com/httptools/httptools/synth"
)

// Kinds of auth a spec may declare.
const (
	KindBearer     = "bearer"
	KindHeader     = "header"
	KindConnection = "connection"
)

// Spec is the authorization of a declarative tool (HttpAuthSpec): a secret
// sent as a bearer token or in a named header, or a declared connection.
type Spec struct {
	Kind       string           `json:"kind"`
	SecretRef  *synth.SecretRef `json:"secretRef,omitempty"`
	HeaderName string           `json:"headerName,omitempty"`
	Connection string           `json:"connection,omitempty"`
}

// Credential is a resolved Spec: one header to set, and the secret inside it
// that must never be shown.
type Credential struct {
	Header string // canonical header name
	Value  string // the whole header value
	Secret string // the secret or token in Value
}

// Var names the environment variable a person could hold the credential of
// spec in, for printing a request: HTTPTOOLS_SECRET_<ENV>_<NAME>, or
// HTTPTOOLS_TOKEN_<CONNECTION> for a connection's token; "" for none.
func Var(spec *Spec) string {
	switch {
	case spec == nil:
		return ""
	case spec.Kind == KindConnection:
		return "HTTPTOOLS_TOKEN_" + envPart(spec.Connection)
	case spec.SecretRef != nil:
		return EnvVar(*spec.SecretRef)
	}
	return ""
}

// Resolve resolves spec for one call of tool. rejected is the connection
// token the upstream just refused with 401, "" on a first try: the source is
// asked for a new one. Errors are *synth.Error with code precondition-failed
// and reason secret-unavailable or a connection reason; their messages name
// the reference, never a value.
func Resolve(ctx context.Context, spec *Spec, tool *synth.Tool, cc synth.CallContext, rejected string) (Credential, error) {
	switch spec.Kind {
	case KindBearer, KindHeader:
		ref := *spec.SecretRef
		r := cc.Secrets
		if r == nil {
			return Credential{}, synth.PreconditionFailed(synth.ReasonSecretUnavailable,
				"the tool needs secret %s but no secret resolver is wired into the call", ref)
		}
		v, err := r.ResolveSecret(ctx, ref)
		if err != nil {
			return Credential{}, secretError(ref, err)
		}
		if spec.Kind == KindBearer {
			return Credential{Header: "Authorization", Value: "Bearer " + v, Secret: v}, nil
		}
		return Credential{Header: spec.HeaderName, Value: v, Secret: v}, nil
	case KindConnection:
		need, ok := tool.Connection(spec.Connection)
		if !ok { // load-time rules make this unreachable
			return Credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable, "connection %q is not declared in needsSpec.connections", spec.Connection)
		}
		src := cc.Connections
		if src == nil {
			return Credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable,
				"the tool needs connection %q (app %s, as %s) but no connection source is wired into the call", spec.Connection, need.App, need.As)
		}
		if need.As == synth.AsPerson && cc.Person == "" {
			return Credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable,
				"connection %q uses the run's person's %s account, but the run has no person", spec.Connection, need.App)
		}
		tok, err := src.AccessToken(ctx, synth.ConnectionRequest{
			Name: spec.Connection, Need: need, ToolID: tool.ID(),
			Tenant: cc.Tenant, Person: cc.Person, ForceRefresh: rejected != "", Rejected: rejected,
		})
		if err != nil {
			var e *synth.Error
			if errors.As(err, &e) {
				return Credential{}, e
			}
			return Credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable, "connection %q (app %s): %v", spec.Connection, need.App, err)
		}
		return Credential{Header: "Authorization", Value: "Bearer " + tok, Secret: tok}, nil
	}
	return Credential{}, fmt.Errorf("auth: unknown kind %q", spec.Kind)
}

func secretError(ref synth.SecretRef, err error) error {
	if isNotFound(err) {
		return synth.PreconditionFailed(synth.ReasonSecretUnavailable,
			"secret %s is not set: store it for the tenant, or for local use set %s", ref, EnvVar(ref))
	}
	// Any other failure is the resolver's backend (a store that is down,
	// frozen or unreadable), not the call's: it may be tried again. The
	// backend's words stay in Err, out of the message.
	return &synth.Error{Code: synth.CodePreconditionFailed, Reason: synth.ReasonStoreUnavailable,
		Message: fmt.Sprintf("secret %s could not be read: the secret store is unavailable for now: try again shortly", ref), Err: err}
}

func isNotFound(err error) bool { return errors.Is(err, synth.ErrSecretNotFound) }
