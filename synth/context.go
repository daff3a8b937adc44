package synth

import (
	"context"
	"errors"
)

// SecretRef names a secret: envName is the deployment environment it lives in
// ("production", "local"), name its name there.
type SecretRef struct {
	EnvName string `json:"envName"`
	Name    string `json:"name"`
}

// String returns "envName/name".
func (r SecretRef) String() string { return r.EnvName + "/" + r.Name }

// ErrSecretNotFound is returned (wrapped) by a SecretResolver that has no
// value for a reference.
var ErrSecretNotFound = errors.New("secret not found")

// SecretResolver resolves a secret reference to its value. It is called on
// every call that needs the secret, so a rotated secret is picked up at once.
// Implementations must be safe for concurrent use and must never put the
// value in an error.
type SecretResolver interface {
	ResolveSecret(ctx context.Context, ref SecretRef) (string, error)
}

// ConnectionRequest asks a ConnectionSource for the access token of one of the
// connections a tool declares.
type ConnectionRequest struct {
	Name   string         // the tool's name for the connection: the key in needsSpec.connections
	Need   ConnectionNeed // app, permissions and whose account
	ToolID string
	Tenant string
	Person string // "" when the run has no person
	// ForceRefresh asks for a new token even if the stored one looks fresh:
	// the upstream answered 401 to Rejected.
	ForceRefresh bool
	Rejected     string
}

// ConnectionSource hands out access tokens of OAuth connections. Errors should
// be *Error with code precondition-failed and a reason such as
// connection-unavailable, connection-needs-reauth or
// connection-permission-missing. Implementations must be safe for concurrent
// use.
type ConnectionSource interface {
	AccessToken(ctx context.Context, req ConnectionRequest) (string, error)
}

// A ConnectionStepUp remembers scopes a server asked a connection for
// beyond those granted (a remote MCP server's 403 insufficient_scope),
// which the connection's next authorization asks. A ConnectionSource may
// implement it (connections.Manager does).
type ConnectionStepUp interface {
	StepUp(ctx context.Context, req ConnectionRequest, scopes []string) error
}

// CallContext is what the kernel knows about one call: who it runs for and
// the resolvers the handler may use. It is a plain struct so that a field
// added later breaks no caller; the zero value is an attended call of tenant
// "" with no person and no resolvers. The resolvers must be safe for
// concurrent use.
type CallContext struct {
	// Tenant is the tenant the call runs in.
	Tenant string
	// Person is the person the run acts for, "" when there is none.
	Person string
	// Run identifies the run, "" outside one.
	Run string
	// IdempotencyKey is stable across resume, retry and re-run of the same
	// call; "" when the kernel has none.
	IdempotencyKey string
	// Unattended says no person started the run (a schedule, a webhook, an
	// event, a mail, a service account's key).
	Unattended bool
	// Approved says a person approved this call, or that the trigger's
	// toolsAllowedUnattended names the tool.
	Approved bool
	// Secrets resolves secret references; nil when none is wired.
	Secrets SecretResolver
	// Connections resolves OAuth connections; nil when none is wired.
	Connections ConnectionSource
}
