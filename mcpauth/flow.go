package mcpauth

import (
	"context"
	"net/http"
	"net/url"
	"sync"

	"golang.org/x/oauth2"
)

// Request is a remote MCP server's demand for a token, as mcpremote hands
// it to an Authorizer.
type Request struct {
	// Endpoint is the MCP endpoint's URL.
	Endpoint string
	// Egress is what the tool may reach; the learned URLs are fetched
	// under it.
	Egress Egress
	// Person is the person the call acts for, "" for the company.
	Person string
	// Status is the server's refusal: 401, or 403 with
	// insufficient_scope; 0 when Token asks before any call.
	Status int
	// WWWAuthenticate are the refusal's WWW-Authenticate values.
	WWWAuthenticate []string
}

// Authorizer obtains OAuth tokens for remote MCP servers that ask for them.
// Implementations must be safe for concurrent use.
type Authorizer interface {
	// Token returns the token held for r's endpoint and person, refreshed
	// if it expired; "" when there is none.
	Token(ctx context.Context, r *Request) (string, error)
	// Authorize answers r's refusal and returns the token to send: a
	// refreshed one for a 401, else one from a new authorization, asking
	// the challenge's scopes with those asked before (a step-up). mcpremote
	// calls it under the caller's context, not the tool's timeout: it may
	// wait for a person.
	Authorize(ctx context.Context, r *Request) (string, error)
}

// Opener shows a person the authorization URL and brings back the answer.
type Opener interface {
	// RedirectURI is where the authorization server sends its answer.
	RedirectURI() string
	// Open sends the person to authURL and returns the query of the
	// redirect to RedirectURI.
	Open(ctx context.Context, eg Egress, authURL string) (url.Values, error)
}

// Flow is an Authorizer for one process (httptools call): it keeps each
// token in memory, per tenant, person and endpoint, with the scopes asked.
// Authorizations run one at a time, as a person answers one page at a time.
type Flow struct {
	Config    *Config
	Registrar *Registrar
	Opener    Opener

	mu   sync.Mutex
	held map[string]*grant
}

var _ Authorizer = (*Flow)(nil)

// grant is a token held for a resource.
type grant struct {
	d      *Discovery
	client *Client
	tok    *oauth2.Token
	scopes []string // asked, for the next step-up's union
}

func flowKey(r *Request) string { return r.Egress.Tenant + "\x00" + r.Person + "\x00" + r.Endpoint }

// Token returns the held token, refreshed once it expired.
func (f *Flow) Token(ctx context.Context, r *Request) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.held[flowKey(r)]
	if g == nil {
		return "", nil
	}
	if g.tok.Valid() {
		return g.tok.AccessToken, nil
	}
	nt, err := f.Config.Refresh(ctx, r.Egress, g.d, g.client, g.tok)
	if err != nil {
		delete(f.held, flowKey(r)) // the server's challenge starts afresh
		return "", nil
	}
	g.tok = nt
	return nt.AccessToken, nil
}

// Authorize answers a 401 with a refresh when it can, else (and for a
// step-up) discovers, registers and runs the authorization code flow.
func (f *Flow) Authorize(ctx context.Context, r *Request) (string, error) {
	// A challenge that cannot be read still asks for a token: discovery
	// then looks at the well-known URLs only.
	ch, _ := ParseChallenge(r.WWWAuthenticate)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = map[string]*grant{}
	}
	g := f.held[flowKey(r)]
	if g != nil && r.Status == http.StatusUnauthorized && !ch.InsufficientScope() && g.tok.RefreshToken != "" {
		if nt, err := f.Config.Refresh(ctx, r.Egress, g.d, g.client, g.tok); err == nil {
			g.tok = nt
			return nt.AccessToken, nil
		}
	}
	d, err := f.Config.Discover(ctx, r.Egress, r.Endpoint, ch)
	if err != nil {
		return "", err
	}
	redirect := f.Opener.RedirectURI()
	client, err := f.Registrar.Register(ctx, r.Egress, d, redirect)
	if err != nil {
		return "", err
	}
	var asked []string
	if g != nil && g.d.Resource == d.Resource {
		asked = g.scopes
	}
	p := Begin(d, client, redirect, ChooseScopes(ch, d, asked))
	answer, err := f.Opener.Open(ctx, r.Egress, p.URL)
	if err != nil {
		return "", err
	}
	tok, err := p.Exchange(ctx, f.Config, r.Egress, answer)
	if err != nil {
		return "", err
	}
	f.held[flowKey(r)] = &grant{d: d, client: client, tok: tok, scopes: p.Scopes}
	return tok.AccessToken, nil
}

// Granted says whether the flow holds a token, and the scopes asked for
// the tokens it holds (httptools import mcp writes them as the
// connection's permissions).
func (f *Flow) Granted() (scopes []string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.held {
		scopes, ok = Union(scopes, g.scopes), true
	}
	return scopes, ok
}
