package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/sync/singleflight"
)

// Issuer is an OpenID Connect issuer whose access tokens the service takes
// beside API keys (the MCP authorization specification, 2025-11-25: the
// service is an OAuth 2.1 resource server). A token's sub is its person;
// its tenant is Tenant, or the value of the claim TenantClaim.
type Issuer struct {
	URL         string   `json:"url"`
	Tenant      string   `json:"tenant,omitempty"`
	TenantClaim string   `json:"tenantClaim,omitempty"`
	Scopes      []string `json:"scopes,omitempty"` // every token must grant these
}

// OIDC is the resource server's configuration: the issuers, and the
// resource its tokens must be for (their audience): the MCP endpoint's URL.
type OIDC struct {
	Issuers  []Issuer
	Resource string // e.g. https://tools.example.com/mcp
	// HTTPClient sends discovery and key requests; nil means
	// http.DefaultClient. serve passes fetch's guarded client
	// (fetch.Client.HTTPClient).
	HTTPClient *http.Client
}

// LoadOIDC reads an issuers file, {"issuers": [{"url", "tenant" |
// "tenantClaim", "scopes"}]}, every problem with its field path.
func LoadOIDC(path, resource string) (*OIDC, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if ps := synth.CheckJSON(src); ps != nil {
		return nil, fmt.Errorf("%s: %s", path, ps[0])
	}
	var doc struct {
		Issuers []Issuer `json:"issuers"`
	}
	dec := json.NewDecoder(strings.NewReader(string(src)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	var problems []string
	for i, is := range doc.Issuers {
		p := fmt.Sprintf("issuers[%d]", i)
		if !strings.HasPrefix(is.URL, "https://") && !strings.HasPrefix(is.URL, "http://") {
			problems = append(problems, p+".url: must be the issuer's http(s) URL")
		}
		if (is.Tenant == "") == (is.TenantClaim == "") {
			problems = append(problems, p+": give either tenant (every token is that tenant's) or tenantClaim (the claim that names it)")
		}
	}
	if len(doc.Issuers) == 0 {
		problems = append(problems, "issuers: is required: list at least one issuer")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", path, strings.Join(problems, "; "))
	}
	return &OIDC{Issuers: doc.Issuers, Resource: resource}, nil
}

// metadataPath is where RFC 9728 puts the metadata of the resource /mcp.
const metadataPath = "/.well-known/oauth-protected-resource"

// resourceMetadata serves the protected resource metadata: the resource,
// the authorization servers of every configured issuer, their scopes.
func (s *Server) resourceMetadata() http.Handler {
	o := s.cfg.OIDC
	md := &oauthex.ProtectedResourceMetadata{Resource: o.Resource, BearerMethodsSupported: []string{"header"}, ResourceName: "httptools"}
	for _, is := range o.Issuers {
		md.AuthorizationServers = append(md.AuthorizationServers, is.URL)
		for _, sc := range is.Scopes {
			if !slices.Contains(md.ScopesSupported, sc) {
				md.ScopesSupported = append(md.ScopesSupported, sc)
			}
		}
	}
	return mcpauth.ProtectedResourceMetadataHandler(md)
}

// metadataURL is the URL of the resource metadata, for WWW-Authenticate
// (RFC 9728: the well-known path, then the resource's path).
func (s *Server) metadataURL() string {
	u, err := url.Parse(s.cfg.OIDC.Resource)
	if err != nil {
		return metadataPath
	}
	u.Path = metadataPath + strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// challenge sets the WWW-Authenticate of a 401 (RFC 6750, RFC 9728): where
// the resource metadata is, and why the token was refused, if one was sent.
func (s *Server) challenge(w http.ResponseWriter, oauthErr, desc string) {
	if s.cfg.OIDC == nil {
		return
	}
	v := fmt.Sprintf("Bearer resource_metadata=%q", s.metadataURL())
	if oauthErr != "" {
		v += fmt.Sprintf(", error=%q, error_description=%q", oauthErr, desc)
	}
	w.Header().Set("WWW-Authenticate", v)
}

// errBadToken is a bearer token that is not a valid access token here.
type errBadToken struct{ why string }

func (e *errBadToken) Error() string { return e.why }

// oidcVerifiers caches one verifier per issuer (discovery and the JWKS are
// fetched once, the keys refreshed by go-oidc as they rotate). Discovery
// runs outside any lock, once at a time per issuer; a failure is remembered
// for a few seconds so that a down issuer is not asked on every request.
type oidcVerifiers struct {
	m      sync.Map // issuer → *oidc.IDTokenVerifier
	failed sync.Map // issuer → time.Time until which discovery is not retried
	group  singleflight.Group
}

func (s *Server) verifier(ctx context.Context, issuer string) (*oidc.IDTokenVerifier, error) {
	v := &s.oidcVerifiers
	if got, ok := v.m.Load(issuer); ok {
		return got.(*oidc.IDTokenVerifier), nil
	}
	if until, ok := v.failed.Load(issuer); ok && time.Now().Before(until.(time.Time)) {
		return nil, fmt.Errorf("the issuer %s could not be reached for its keys a moment ago", issuer)
	}
	got, err, _ := v.group.Do(issuer, func() (any, error) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if c := s.cfg.OIDC.HTTPClient; c != nil {
			dctx = oidc.ClientContext(dctx, c)
		}
		p, err := oidc.NewProvider(dctx, issuer)
		if err != nil {
			v.failed.Store(issuer, time.Now().Add(5*time.Second))
			return nil, fmt.Errorf("the issuer %s cannot be reached for its keys: %v", issuer, err)
		}
		ver := p.Verifier(&oidc.Config{ClientID: s.cfg.OIDC.Resource, SupportedSigningAlgs: []string{"RS256", "ES256", "PS256", "EdDSA"}})
		v.m.Store(issuer, ver)
		return ver, nil
	})
	if err != nil {
		return nil, err
	}
	return got.(*oidc.IDTokenVerifier), nil
}

// verifyToken checks an access token from a configured issuer: signature
// (the issuer's JWKS), audience (the MCP resource), expiry and scopes; sub
// is the person, the issuer (or a claim) the tenant.
func (s *Server) verifyToken(ctx context.Context, raw string) (*auth.APIKey, error) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.PS256, jose.EdDSA})
	if err != nil {
		return nil, &errBadToken{"not an API key, and not a signed access token"}
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, &errBadToken{"the token's claims do not parse"}
	}
	var is *Issuer
	for i := range s.cfg.OIDC.Issuers {
		if s.cfg.OIDC.Issuers[i].URL == unverified.Issuer {
			is = &s.cfg.OIDC.Issuers[i]
		}
	}
	if is == nil {
		return nil, &errBadToken{"the token's issuer is not one this service trusts"}
	}
	ver, err := s.verifier(ctx, is.URL)
	if err != nil {
		return nil, err // the issuer is down: not the token's fault
	}
	idt, err := ver.Verify(ctx, raw)
	if err != nil {
		return nil, &errBadToken{"the token is not valid for " + s.cfg.OIDC.Resource + ": " + oidcReason(err)}
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, &errBadToken{"the token's claims do not parse"}
	}
	granted := scopesOf(claims)
	for _, want := range is.Scopes {
		if !slices.Contains(granted, want) {
			return nil, &errBadToken{"the token lacks the scope " + want}
		}
	}
	tenant := is.Tenant
	if is.TenantClaim != "" {
		tenant, _ = claims[is.TenantClaim].(string)
	}
	if tenant == "" || idt.Subject == "" {
		return nil, &errBadToken{"the token names no tenant or no subject"}
	}
	return &auth.APIKey{ID: "oidc:" + is.URL, Tenant: tenant, Role: auth.RolePerson, Person: idt.Subject}, nil
}

func oidcReason(err error) string {
	var exp *oidc.TokenExpiredError
	switch {
	case errors.As(err, &exp):
		return "it expired"
	case strings.Contains(err.Error(), "audience"):
		return "its audience is another resource"
	case strings.Contains(err.Error(), "signature"):
		return "its signature does not verify"
	}
	return "it does not verify"
}

// scopesOf reads "scope" (a space-separated string) or "scp" (a list).
func scopesOf(claims map[string]any) []string {
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	var out []string
	if l, ok := claims["scp"].([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
