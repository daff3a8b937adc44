package mcpauth

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/httptools/httptools/connections"
	"golang.org/x/oauth2"
)

// A Connector makes the connections.Provider of a discovered app (a
// remote MCP server's authorization server, connections.IsDiscovered), for
// serve's connections.Manager.Discover: the person's or company's
// connection to the server is then stored, leased, refreshed once across
// replicas and re-authorized as every other connection, while each request
// to the authorization server goes through Config's guarded client under
// the Egress of the tools that use the server. What it found is kept for
// CacheFor (a connect flow's callback, on any replica, finds the same
// client); a failure is not kept.
type Connector struct {
	Config    *Config
	Registrar *Registrar
	// RedirectURI is the service's OAuth callback.
	RedirectURI string
	// Egress says what the tools using app may reach; nil: the SSRF
	// guard only.
	Egress func(app string) Egress
	// CacheFor is how long a discovery is kept; 0 means 10 minutes.
	CacheFor time.Duration

	mu    sync.Mutex
	found map[string]foundProvider
}

type foundProvider struct {
	p  *Provider
	at time.Time
}

// Provider discovers app's authorization server and client, or returns
// the ones found lately.
func (c *Connector) Provider(ctx context.Context, app string) (connections.Provider, error) {
	keep := c.CacheFor
	if keep <= 0 {
		keep = 10 * time.Minute
	}
	c.mu.Lock()
	f, ok := c.found[app]
	c.mu.Unlock()
	if ok && time.Since(f.at) < keep {
		return f.p, nil
	}
	endpoint := strings.TrimPrefix(app, connections.DiscoveredPrefix)
	var eg Egress
	if c.Egress != nil {
		eg = c.Egress(app)
	}
	d, err := c.Config.Discover(ctx, eg, endpoint, Challenge{})
	if err != nil {
		return nil, err
	}
	client, err := c.Registrar.Register(ctx, eg, d, c.RedirectURI)
	if err != nil {
		return nil, err
	}
	p := &Provider{Config: c.Config, Egress: eg, Discovery: d, Client: client, RedirectURI: c.RedirectURI, Scope: ChooseScopes(Challenge{}, d, nil)}
	if client.How == HowDynamic && c.Registrar.Store != nil {
		p.OnInvalidClient = func(ctx context.Context) error {
			// The store first, then the cache, and only the entry of this
			// client: a newer provider (another client) stays.
			err := c.Registrar.Store.ForgetRegistration(ctx, d.Issuer, c.RedirectURI, client.ID)
			c.mu.Lock()
			if f, ok := c.found[app]; ok && f.p.Client.ID == client.ID {
				delete(c.found, app)
			}
			c.mu.Unlock()
			return err
		}
	}
	c.mu.Lock()
	if c.found == nil {
		c.found = map[string]foundProvider{}
	}
	c.found[app] = foundProvider{p: p, at: time.Now()}
	c.mu.Unlock()
	return p, nil
}

// A Provider is one authorization server and httptools' client at it, as
// a connections.Provider: the flow's state and PKCE verifier are the
// connections store's, so that its callback may reach any replica.
type Provider struct {
	Config      *Config
	Egress      Egress
	Discovery   *Discovery
	Client      *Client
	RedirectURI string
	Scope       []string
	// OnInvalidClient, when set, runs when the token endpoint answers
	// invalid_client: a dynamic registration the server has dropped is
	// forgotten, and the next connect flow registers again (the
	// connection itself must then be authorized again).
	OnInvalidClient func(ctx context.Context) error
}

var _ connections.Provider = (*Provider)(nil)

// AuthCodeURL is the authorization URL: PKCE S256, the resource indicator,
// the provider's scopes joined with more (those a connection holds or was
// asked for: a step-up loses nothing).
func (p *Provider) AuthCodeURL(state, verifier string, more []string) string {
	return oauthConfig(p.Discovery, p.Client, p.RedirectURI, Union(p.Scope, more)).AuthCodeURL(state,
		oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", p.Discovery.Resource))
}

// Exchange checks the answer's iss (RFC 9207) and trades its code for a
// token for the resource.
func (p *Provider) Exchange(ctx context.Context, code, verifier, iss string) (*oauth2.Token, error) {
	if err := checkIssuer(iss, p.Discovery); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.Config.timeout())
	defer cancel()
	tok, err := oauthConfig(p.Discovery, p.Client, p.RedirectURI, p.Scope).Exchange(p.Config.oauthContext(ctx, p.Egress), code,
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", p.Discovery.Resource))
	if err != nil {
		p.forgetIfUnknown(ctx, err)
		return nil, errorf(ReasonTokenRefused, p.Discovery.Server.TokenEndpoint, tokenCause(err), "the token endpoint refused the authorization code")
	}
	return tok, checkToken(tok, p.Discovery)
}

// Refresh renews a token for the same resource.
func (p *Provider) Refresh(ctx context.Context, refreshToken string) (*oauth2.Token, error) {
	tok, err := p.Config.Refresh(ctx, p.Egress, p.Discovery, p.Client, &oauth2.Token{RefreshToken: refreshToken})
	if err != nil {
		p.forgetIfUnknown(ctx, err)
	}
	return tok, err
}

// forgetIfUnknown runs OnInvalidClient when err is the server's
// invalid_client. Forgetting is best effort: the error the caller gets is
// the token endpoint's either way.
func (p *Provider) forgetIfUnknown(ctx context.Context, err error) {
	if p.OnInvalidClient != nil && invalidClient(err) {
		_ = p.OnInvalidClient(context.WithoutCancel(ctx))
	}
}

// Scopes are the scopes asked.
func (p *Provider) Scopes() []string { return p.Scope }
