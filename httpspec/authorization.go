package httpspec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

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

// Credential is a resolved Authorization: one header to set, and the
// secret inside it that must never be shown.
type Credential struct {
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
// try: the source is asked for a new one.
func (h *Handler) resolveCredential(ctx context.Context, cc synth.CallContext, rejected string) (Credential, error) {
	var need *synth.ConnectionNeed
	if h.conn != nil {
		need = &h.conn.need
	}
	return h.spec.Authorization.Resolve(ctx, cc, need, h.toolID, rejected)
}

// Resolve resolves a for one call of tool toolID: the secret it names from
// cc.Secrets, or a token of the connection it names from cc.Connections,
// need being that connection as the manifest declares it. rejected is the
// connection token the upstream just refused with 401, "" on a first try:
// the source is asked for a new one. Errors are *synth.Error with code
// precondition-failed and reason secret-unavailable, store-unavailable or a
// connection reason; their messages name the reference, never a value.
func (a *Authorization) Resolve(ctx context.Context, cc synth.CallContext, need *synth.ConnectionNeed, toolID, rejected string) (Credential, error) {
	switch a.Kind {
	case AuthBearer, AuthHeader:
		ref := *a.SecretRef
		r := cc.Secrets
		if r == nil {
			return Credential{}, synth.PreconditionFailed(synth.ReasonSecretUnavailable,
				"the tool needs secret %s but no secret resolver is wired into the call", ref)
		}
		v, err := r.ResolveSecret(ctx, ref)
		if err != nil {
			return Credential{}, secretError(ref, err)
		}
		if a.Kind == AuthBearer {
			return Credential{Header: "Authorization", Value: "Bearer " + v, Secret: v}, nil
		}
		return Credential{Header: http.CanonicalHeaderKey(a.HeaderName), Value: v, Secret: v}, nil
	case AuthConnection:
		if need == nil { // load-time rules make this unreachable
			return Credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable, "connection %q is not declared in needsSpec.connections", a.Connection)
		}
		src := cc.Connections
		if src == nil {
			return Credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable,
				"the tool needs connection %q (app %s, as %s), and this runtime has no OAuth apps to connect with: start httptools serve with --apps apps.json naming app %q (README \"Connections\"); a kernel sets synth.CallContext.Connections", a.Connection, need.App, need.As, need.App)
		}
		if need.As == synth.AsPerson && cc.Person == "" {
			return Credential{}, synth.PreconditionFailed(synth.ReasonConnectionUnavailable,
				"connection %q uses the run's person's %s account, but the run has no person", a.Connection, need.App)
		}
		tok, err := src.AccessToken(ctx, synth.ConnectionRequest{
			Name: a.Connection, Need: *need, ToolID: toolID,
			Tenant: cc.Tenant, Person: cc.Person, ForceRefresh: rejected != "", Rejected: rejected,
		})
		if err != nil {
			var e *synth.Error
			if errors.As(err, &e) {
				return Credential{}, e
			}
			if ctx.Err() != nil {
				return Credential{}, err // the call's deadline or its caller ended it: the call's words say which
			}
			// A source's own error is nobody's words the service knows
			// (a provider's, say): Outside.
			refused := synth.PreconditionFailed(synth.ReasonConnectionUnavailable, "connection %q (app %s) gave no token", a.Connection, need.App)
			refused.Outside = err.Error()
			return Credential{}, refused
		}
		return Credential{Header: "Authorization", Value: "Bearer " + tok, Secret: tok}, nil
	}
	return Credential{}, fmt.Errorf("httpspec: unknown authorization kind %q", a.Kind)
}

// Check runs the load-time rules of an authorization written at path
// ("spec.authorization") of manifest m: a connection must be declared in
// needsSpec.connections, a header name must be one a secret can travel in.
func (a *Authorization) Check(m *synth.Manifest, path string, ps *synth.Problems) {
	switch a.Kind {
	case AuthConnection:
		if m.NeedsSpec == nil || m.NeedsSpec.Connections == nil {
			ps.Error(path+".connection", fmt.Sprintf("connection %q is not declared: add needsSpec.connections.%s with its app, permissions and as", a.Connection, a.Connection))
		} else if _, ok := m.NeedsSpec.Connections[a.Connection]; !ok {
			ps.Error(path+".connection", fmt.Sprintf("connection %q is not declared in needsSpec.connections (declared: %s)", a.Connection, strings.Join(slices.Sorted(maps.Keys(m.NeedsSpec.Connections)), ", ")))
		}
	case AuthHeader:
		switch {
		case !httpguts.ValidHeaderFieldName(a.HeaderName):
			ps.Error(path+".headerName", fmt.Sprintf("%q is not a valid header name: use letters, digits and !#$%%&'*+-.^_`|~ only", a.HeaderName))
		case forbiddenHeaders[strings.ToLower(a.HeaderName)]:
			ps.Error(path+".headerName", fmt.Sprintf("%s is set by the HTTP client and cannot carry a secret: pick the header your API reads the key from", a.HeaderName))
		}
	}
}

func secretError(ref synth.SecretRef, err error) error {
	if errors.Is(err, synth.ErrSecretNotFound) {
		return synth.PreconditionFailed(synth.ReasonSecretUnavailable,
			"secret %s is not set: a service stores it with PUT /v1/secrets/%s (or on the console's Secrets page); a local call takes --secret %s=… or $%s", ref, ref, ref, auth.EnvVar(ref))
	}
	// Any other failure is the resolver's backend (a store that is down,
	// frozen or unreadable), not the call's: it may be tried again. The
	// backend's words stay in Err, out of the message.
	return &synth.Error{Code: synth.CodePreconditionFailed, Reason: synth.ReasonStoreUnavailable,
		Message: fmt.Sprintf("secret %s could not be read: the secret store is unavailable for now: try again shortly", ref), Err: err}
}
