package httptest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// OIDCProvider is a fake OpenID Connect / OAuth 2.1 authorization server on
// a local httptest server, for the MCP authorization flow: discovery
// (/.well-known/openid-configuration and
// /.well-known/oauth-authorization-server), a JWKS, dynamic client
// registration (/register), /authorize (approves at once as Subject, with
// PKCE S256) and /token (the authorization code for an RS256-signed JWT
// access token whose audience is the RFC 8707 resource asked for). Tokens
// can also be minted directly with Token.
type OIDCProvider struct {
	*httptest.Server

	// Subject is who /authorize approves as; "user-1" by default.
	Subject string
	// Scopes are granted on /token when the request names none.
	Scopes []string
	// Claims are added to every access token (a tenant claim, say).
	Claims map[string]any
	// Lifetime of access tokens; one hour by default.
	Lifetime time.Duration

	// Tokens counts access tokens issued by /token.
	Tokens atomic.Int64

	key   *rsa.PrivateKey
	mu    sync.Mutex
	codes map[string]oidcCode
}

type oidcCode struct {
	challenge, redirect, resource, scope string
}

// NewOIDCProvider starts a provider with a fresh RSA key.
func NewOIDCProvider() *OIDCProvider {
	p := NewUnstartedOIDCProvider()
	p.Start()
	return p
}

// NewUnstartedOIDCProvider is NewOIDCProvider's provider before it serves,
// as httptest.NewUnstartedServer is: set its fields, then Start it. Its
// URL (the issuer) is known once it has started.
func NewUnstartedOIDCProvider() *OIDCProvider {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	p := &OIDCProvider{Subject: "user-1", key: key, codes: map[string]oidcCode{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("POST /register", p.register)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.Server = httptest.NewUnstartedServer(mux)
	return p
}

// config is a copy of the fields the handlers read.
func (p *OIDCProvider) config() (subject string, scopes []string, claims map[string]any, lifetime time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Subject, p.Scopes, p.Claims, p.lifetime()
}

// Issuer is the provider's issuer URL.
func (p *OIDCProvider) Issuer() string { return p.URL }

func (p *OIDCProvider) discovery(w http.ResponseWriter, r *http.Request) {
	_, scopes, _, _ := p.config()
	writeJSON(w, map[string]any{
		"issuer":                                p.URL,
		"authorization_endpoint":                p.URL + "/authorize",
		"token_endpoint":                        p.URL + "/token",
		"registration_endpoint":                 p.URL + "/register",
		"jwks_uri":                              p.URL + "/jwks",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_post"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      scopes,
	})
}

func (p *OIDCProvider) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
}

func (p *OIDCProvider) register(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	json.NewDecoder(r.Body).Decode(&req)
	req["client_id"] = fmt.Sprintf("client-%d", time.Now().UnixNano())
	req["client_id_issued_at"] = time.Now().Unix()
	req["token_endpoint_auth_method"] = "none"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(req)
}

func (p *OIDCProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	}
	code := newCode()
	p.mu.Lock()
	p.codes[code] = oidcCode{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), resource: q.Get("resource"), scope: q.Get("scope")}
	p.mu.Unlock()
	u, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("redirect_uri") == "" {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	v.Set("iss", p.URL)
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (p *OIDCProvider) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	p.mu.Lock()
	g, ok := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code"))
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if r.PostForm.Get("grant_type") != "authorization_code" || !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		tokenError(w, 400, "invalid_grant")
		return
	}
	resource := g.resource
	if res := r.PostForm.Get("resource"); res != "" {
		resource = res
	}
	subject, granted, _, lifetime := p.config()
	scopes := strings.Fields(g.scope)
	if len(scopes) == 0 {
		scopes = granted
	}
	tok, err := p.Token(subject, resource, scopes...)
	if err != nil {
		tokenError(w, 500, "server_error")
		return
	}
	p.Tokens.Add(1)
	writeJSON(w, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(lifetime.Seconds()), "scope": strings.Join(scopes, " ")})
}

func (p *OIDCProvider) lifetime() time.Duration {
	if p.Lifetime > 0 {
		return p.Lifetime
	}
	return time.Hour
}

// Token mints an RS256 access token for sub with audience aud and scopes,
// valid for the provider's lifetime, with the provider's extra Claims.
func (p *OIDCProvider) Token(sub, aud string, scopes ...string) (string, error) {
	_, _, _, lifetime := p.config()
	return p.TokenExpiring(sub, aud, time.Now().Add(lifetime), scopes...)
}

// TokenExpiring is Token with an expiry of its own (one in the past makes
// an expired token).
func (p *OIDCProvider) TokenExpiring(sub, aud string, exp time.Time, scopes ...string) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: p.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		return "", err
	}
	claims := map[string]any{
		"iss": p.URL, "sub": sub, "aud": aud,
		"iat": time.Now().Unix(), "exp": exp.Unix(),
		"scope": strings.Join(scopes, " "),
	}
	_, _, extra, _ := p.config()
	for k, v := range extra {
		claims[k] = v
	}
	return jwt.Signed(signer).Claims(claims).Serialize()
}

func newCode() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
