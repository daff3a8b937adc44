package mcpauth

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/httptools/httptools/connections"
)

// How a Client came to be.
const (
	HowPreRegistered    = "pre-registered"
	HowMetadataDocument = "metadata-document"
	HowDynamic          = "dynamic"
)

// Token endpoint authentication methods (RFC 8414 names).
const (
	AuthBasic = "client_secret_basic"
	AuthPost  = "client_secret_post"
	AuthNone  = "none"
)

// Client is the OAuth client httptools is at one authorization server.
type Client struct {
	ID     string `json:"client_id"`
	Secret string `json:"client_secret,omitempty"`
	// AuthMethod is how it authenticates at the token endpoint:
	// client_secret_basic, client_secret_post or none.
	AuthMethod string `json:"token_endpoint_auth_method"`
	// How is HowPreRegistered, HowMetadataDocument or HowDynamic.
	How string `json:"how"`
}

// PreRegistered finds the client the operator registered at an
// authorization server, if any.
type PreRegistered interface {
	PreRegistered(d *Discovery) (*Client, bool)
}

// StaticClient is one client the operator registered, used at every
// authorization server (or at Issuer only, when set): the CLI's
// --oauth-client-id.
type StaticClient struct {
	ID, Secret string
	// Issuer, when set, is the one authorization server it is for.
	Issuer string
}

// PreRegistered returns the client unless it is for another issuer.
func (s StaticClient) PreRegistered(d *Discovery) (*Client, bool) {
	if s.ID == "" || (s.Issuer != "" && strings.TrimSuffix(s.Issuer, "/") != strings.TrimSuffix(d.Issuer, "/")) {
		return nil, false
	}
	return &Client{ID: s.ID, Secret: s.Secret, AuthMethod: chooseMethod(d.Server.TokenEndpointAuthMethodsSupported, s.Secret != ""), How: HowPreRegistered}, true
}

// Apps finds the pre-registered client among the apps of apps.json: the app
// whose tokenURL is the authorization server's token endpoint.
type Apps connections.Apps

// PreRegistered returns the app's client whose token URL is the server's.
func (as Apps) PreRegistered(d *Discovery) (*Client, bool) {
	for _, id := range slices.Sorted(maps.Keys(as)) {
		a := as[id]
		if a.TokenURL != d.Server.TokenEndpoint {
			continue
		}
		method := AuthPost
		if a.AuthStyle == "header" {
			method = AuthBasic
		}
		if a.ClientSecret() == "" {
			method = AuthNone
		}
		return &Client{ID: a.ClientID, Secret: a.ClientSecret(), AuthMethod: method, How: HowPreRegistered}, true
	}
	return nil, false
}

// chooseMethod picks the token endpoint authentication among those the
// server supports (client_secret_basic when it lists none, RFC 8414 §2).
func chooseMethod(supported []string, hasSecret bool) string {
	if !hasSecret {
		return AuthNone
	}
	if len(supported) == 0 || slices.Contains(supported, AuthBasic) {
		return AuthBasic
	}
	if slices.Contains(supported, AuthPost) {
		return AuthPost
	}
	return AuthNone
}

// RegistrationStore keeps the clients dynamic registration made, one per
// authorization server and redirect URI. Implementations must be safe for
// concurrent use; serve's keeps them encrypted like secrets.
type RegistrationStore interface {
	// Registration returns the client registered at issuer for
	// redirectURI, nil when there is none.
	Registration(ctx context.Context, issuer, redirectURI string) (*Client, error)
	// SaveRegistration keeps c as the client at issuer for redirectURI.
	SaveRegistration(ctx context.Context, issuer, redirectURI string, c *Client) error
	// ForgetRegistration drops the client kept at issuer for
	// redirectURI if its id is clientID (the server said it does not
	// know it: invalid_client), so that the next flow registers again; a
	// newer registration, another replica's, is kept.
	ForgetRegistration(ctx context.Context, issuer, redirectURI, clientID string) error
}

// MemoryStore is a RegistrationStore in memory, for one process (the CLI)
// and tests. The zero value is ready.
type MemoryStore struct {
	mu sync.Mutex
	m  map[[2]string]Client
}

var _ RegistrationStore = (*MemoryStore)(nil)

// Registration returns the client kept for issuer and redirectURI.
func (s *MemoryStore) Registration(_ context.Context, issuer, redirectURI string) (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[[2]string{issuer, redirectURI}]
	if !ok {
		return nil, nil
	}
	return &c, nil
}

// SaveRegistration keeps a copy of c.
func (s *MemoryStore) SaveRegistration(_ context.Context, issuer, redirectURI string, c *Client) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[[2]string]Client{}
	}
	s.m[[2]string{issuer, redirectURI}] = *c
	return nil
}

// ForgetRegistration drops the client kept if its id is clientID.
func (s *MemoryStore) ForgetRegistration(_ context.Context, issuer, redirectURI, clientID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{issuer, redirectURI}
	if c, ok := s.m[k]; ok && c.ID == clientID {
		delete(s.m, k)
	}
	return nil
}

// Registrar picks the client httptools uses at an authorization server, in
// the specification's order: pre-registered, Client ID Metadata Document,
// dynamic registration.
type Registrar struct {
	Config *Config
	// PreRegistered finds the operator's clients; nil for none.
	PreRegistered PreRegistered
	// MetadataDocumentURL is the https URL of httptools' client metadata
	// document (its client_id where the server takes one); "" for none.
	MetadataDocumentURL string
	// Store keeps dynamic registrations; nil turns dynamic registration
	// off.
	Store RegistrationStore
	// ClientName is the client_name registered; "" means "httptools".
	ClientName string
}

// Register returns the client to use at d's authorization server for
// redirectURI, registering one dynamically when it must.
func (r *Registrar) Register(ctx context.Context, eg Egress, d *Discovery, redirectURI string) (*Client, error) {
	if r.PreRegistered != nil {
		if c, ok := r.PreRegistered.PreRegistered(d); ok {
			return c, nil
		}
	}
	if r.MetadataDocumentURL != "" && d.Server.ClientIDMetadataDocumentSupported {
		return &Client{ID: r.MetadataDocumentURL, AuthMethod: AuthNone, How: HowMetadataDocument}, nil
	}
	if r.Store != nil && d.Server.RegistrationEndpoint != "" {
		c, err := r.Store.Registration(ctx, d.Issuer, redirectURI)
		if err != nil || c != nil {
			return c, err
		}
		if c, err = r.register(ctx, eg, d, redirectURI); err != nil {
			return nil, err
		}
		return c, r.Store.SaveRegistration(ctx, d.Issuer, redirectURI, c)
	}
	return nil, r.unregistered(d, redirectURI)
}

// unregistered says what the operator must register.
func (r *Registrar) unregistered(d *Discovery, redirectURI string) error {
	var took []string
	if d.Server.ClientIDMetadataDocumentSupported {
		took = append(took, "a client metadata document (serve publishes one when --public-url is https)")
	}
	if d.Server.RegistrationEndpoint != "" {
		took = append(took, "dynamic registration (turned off here)")
	}
	msg := "the authorization server " + d.Issuer + " takes no registration httptools can make"
	if len(took) > 0 {
		msg = "the authorization server " + d.Issuer + " takes " + strings.Join(took, " or ") + ", which httptools cannot use here"
	}
	return errorf(ReasonUnregistered, d.Issuer, nil, "%s: register a client there with redirect URI %s and add it to apps.json (its tokenURL %s), or give --oauth-client-id", msg, redirectURI, d.Server.TokenEndpoint)
}

// register makes a dynamic registration (RFC 7591) and checks that the
// answer is for the client asked.
func (r *Registrar) register(ctx context.Context, eg Egress, d *Discovery, redirectURI string) (*Client, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Config.timeout())
	defer cancel()
	name := r.ClientName
	if name == "" {
		name = "httptools"
	}
	asked := registrationMethod(d.Server.TokenEndpointAuthMethodsSupported)
	body, _ := json.Marshal(&oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirectURI}, TokenEndpointAuthMethod: asked, ClientName: name,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	})
	u := d.Server.RegistrationEndpoint
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, errorf(ReasonRegistrationRefused, u, err, "the registration endpoint is not one a request can be made to")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := r.Config.httpClient(eg).Do(req)
	if err != nil {
		return nil, errorf(ReasonRegistrationRefused, u, err, "dynamic registration failed")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return nil, errorf(ReasonRegistrationRefused, u, nil, "dynamic registration answered %d: register a client by hand and add it to apps.json", resp.StatusCode)
	}
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, errorf(ReasonRegistrationRefused, u, err, "reading the registration answer failed")
	}
	var got oauthex.ClientRegistrationResponse
	if err := json.Unmarshal(answer, &got); err != nil {
		return nil, errorf(ReasonRegistrationRefused, u, err, "the registration answer is not the JSON object expected")
	}
	return checkRegistration(&got, asked, redirectURI, u)
}

// checkRegistration refuses an answer that is for another client: no
// client_id, redirect URIs that are not the one asked, or an
// authentication method that needs a secret it does not give.
func checkRegistration(got *oauthex.ClientRegistrationResponse, asked, redirectURI, u string) (*Client, error) {
	if got.ClientID == "" {
		return nil, errorf(ReasonRegistrationRefused, u, nil, "the registration answer has no client_id")
	}
	if len(got.RedirectURIs) > 0 && !slices.Equal(got.RedirectURIs, []string{redirectURI}) {
		return nil, errorf(ReasonRegistrationRefused, u, nil, "the registration answer is for redirect URIs %q, not %q: it describes another client", got.RedirectURIs, redirectURI)
	}
	method := got.TokenEndpointAuthMethod
	if method == "" {
		method = asked
	}
	if method == "" {
		method = AuthBasic
	}
	switch {
	case method != AuthBasic && method != AuthPost && method != AuthNone:
		return nil, errorf(ReasonRegistrationRefused, u, nil, "the registration answer's token_endpoint_auth_method %q is none httptools speaks", method)
	case method != AuthNone && got.ClientSecret == "":
		return nil, errorf(ReasonRegistrationRefused, u, nil, "the registration answer asks for %s but gives no client_secret", method)
	}
	return &Client{ID: got.ClientID, Secret: got.ClientSecret, AuthMethod: method, How: HowDynamic}, nil
}

// registrationMethod is the authentication asked at registration: none (a
// public client, the CLI's case) where the server takes it, else one with a
// secret; "" (the server's default) when it lists none.
func registrationMethod(supported []string) string {
	for _, m := range []string{AuthNone, AuthBasic, AuthPost} {
		if slices.Contains(supported, m) {
			return m
		}
	}
	return ""
}
