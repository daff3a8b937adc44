package connections

import (
	"context"
	"strings"

	"golang.org/x/oauth2"
)

// Discovered apps: the authorization server of a remote MCP server, which
// httptools finds for itself (MCP authorization: protected resource
// metadata, authorization server metadata, a client registered by the
// operator, by a client metadata document or dynamically: package
// mcpauth) instead of reading it from apps.json. Its id is DiscoveredPrefix
// and the server's endpoint URL, as a manifest names it:
//
//	"needsSpec": {"connections": {"linear": {"app": "mcp:https://mcp.linear.app/mcp", "as": "person"}}}
//
// Its connections are stored, leased, refreshed once across replicas and
// re-authorized exactly as those of apps.json's apps; only the three steps
// that speak to the authorization server go through its Provider, whose
// every request is guarded (the URLs are the metadata's, chosen by whoever
// runs the server). Its permissions are its scopes.

// DiscoveredPrefix starts the id of a discovered app.
const DiscoveredPrefix = "mcp:"

// IsDiscovered says whether app is a discovered app's id.
func IsDiscovered(app string) bool { return strings.HasPrefix(app, DiscoveredPrefix) }

// A Provider speaks to a discovered app's authorization server.
// Implementations must be safe for concurrent use.
type Provider interface {
	// AuthCodeURL is the authorization URL of a connect flow: state, the
	// PKCE S256 challenge of verifier, the resource and the scopes.
	AuthCodeURL(state, verifier string) string
	// Exchange trades the code of the flow's answer (with its iss, "" when
	// it had none) for a token, checked to be for the resource.
	Exchange(ctx context.Context, code, verifier, iss string) (*oauth2.Token, error)
	// Refresh renews a token with its refresh token.
	Refresh(ctx context.Context, refreshToken string) (*oauth2.Token, error)
	// Scopes are the scopes asked.
	Scopes() []string
}

// provider is the Provider of the discovered app id.
func (m *Manager) provider(ctx context.Context, app string) (Provider, error) {
	if m.Discover == nil {
		return nil, errNoDiscovery(app)
	}
	return m.Discover(ctx, app)
}

// known says whether app is one the manager can connect: apps.json's, or
// a discovered one when it discovers.
func (m *Manager) known(app string) bool {
	_, ok := m.Apps[app]
	return ok || IsDiscovered(app) && m.Discover != nil
}

func errNoDiscovery(app string) error {
	return &discoveryOff{app: app}
}

type discoveryOff struct{ app string }

func (e *discoveryOff) Error() string {
	return "app " + e.app + " is a remote MCP server's authorization, which this service does not discover (serve does; a library sets Manager.Discover)"
}
