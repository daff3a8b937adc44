package connections

import (
	"context"
	"slices"
	"strings"

	"github.com/httptools/httptools/synth"
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
	// PKCE S256 challenge of verifier, the resource, and the scopes: its
	// own (Scopes) and scopes, those the connection held or was asked for.
	AuthCodeURL(state, verifier string, scopes []string) string
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

// StepUp remembers that the server of a connection asked it for scopes
// it was not granted (a 403 insufficient_scope: MCP's step-up): the
// connection's next authorization asks them with those it holds. It
// implements synth.ConnectionStepUp; it is ErrNotFound when there is no
// such connection.
func (m *Manager) StepUp(ctx context.Context, req synth.ConnectionRequest, scopes []string) error {
	own, err := owner(req.Need, req.Person)
	if err != nil {
		return err
	}
	tenant, app := req.Tenant, req.Need.App
	_, err = m.Connections.UpdateLocked(ctx, tenant, app, own, func(cur *Record) (*Record, error) {
		if cur == nil {
			return nil, ErrNotFound
		}
		next := *cur
		for _, s := range scopes {
			if s != "" && !slices.Contains(next.Scopes, s) && !slices.Contains(next.Wanted, s) {
				next.Wanted = append(slices.Clone(next.Wanted), s)
			}
		}
		if len(next.Wanted) == len(cur.Wanted) {
			return nil, nil // nothing new: no write
		}
		return &next, nil
	})
	if err == nil {
		m.cache.Delete(cacheKey(tenant, app, own))
	}
	return err
}

var _ synth.ConnectionStepUp = (*Manager)(nil)

// askedScopes are the scopes a discovered app's authorization of owner
// asks beyond its provider's: those the connection holds and those its
// server asked for since.
func (m *Manager) askedScopes(ctx context.Context, tenant, app, owner string) []string {
	rec, err := m.Connections.Connection(ctx, tenant, app, owner)
	if err != nil {
		return nil
	}
	return append(slices.Clone(rec.Scopes), rec.Wanted...)
}
