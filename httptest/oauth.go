// Package httptest has test helpers for pack authors and for httptools' own
// tests: case files (NAME.cases.json beside NAME.json) and their runner
// (Run, RunCases), a recording fake upstream that answers every host
// (Upstream), and a fake OAuth provider (OAuthProvider).
//
// Import it next to net/http/httptest with an alias:
//
//	import (
//		"net/http/httptest"
//		toolstest "github.com/httptools/httptools/httptest"
//	)
package httptest

import (
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
)

// OAuthProvider is a fake OAuth 2.0 authorization server on a local
// httptest server. /authorize approves at once and redirects back with a
// code; /token serves the authorization_code grant (checking PKCE S256) and
// the refresh_token grant. Tokens are "at-N" and "rt-N". Configure the fields
// before use; counters may be read at any time.
type OAuthProvider struct {
	*httptest.Server

	ClientID, ClientSecret string
	// AuthStyle is how the client authenticates: "params" or "header".
	AuthStyle string
	// AccessLifetime is the expires_in of issued tokens; 0 means one hour.
	AccessLifetime time.Duration
	// Rotate issues a new refresh token on every refresh and revokes the old.
	Rotate bool
	// RevokeFamilyOnReuse, with Rotate, answers a revoked refresh token
	// presented again by revoking every token descended from the same
	// grant, as RFC 9700 (4.14.2) recommends: the connection is lost.
	RevokeFamilyOnReuse bool
	// Scope, when set, is the granted scope sent back (else the requested).
	Scope string
	// Delay slows the token endpoint down.
	Delay time.Duration

	// AuthCodeGrants and RefreshGrants count successful grants;
	// RevokedRefreshUses counts refresh requests that presented a revoked
	// token; InvalidGrants counts every invalid_grant answer.
	AuthCodeGrants, RefreshGrants, RevokedRefreshUses, InvalidGrants atomic.Int64

	mu       sync.Mutex
	next     int
	codes    map[string]codeGrant
	refresh  map[string]bool      // live refresh tokens
	revoked  map[string]bool      // revoked refresh tokens
	access   map[string]time.Time // access token → expiry
	failNext []string             // queued failures: "invalid_grant", "500"
	family   map[string]string    // refresh token → the first refresh token of its grant
}

type codeGrant struct {
	challenge, redirect, scope string
}

// NewOAuthProvider starts a provider with client "client-1"/"secret-1" and
// auth style "params".
func NewOAuthProvider() *OAuthProvider {
	p := NewUnstartedOAuthProvider()
	p.Start()
	return p
}

// NewUnstartedOAuthProvider is NewOAuthProvider's provider before it
// serves, as httptest.NewUnstartedServer is: set its fields, then Start
// it. Its URL is known once it has started.
func NewUnstartedOAuthProvider() *OAuthProvider {
	p := &OAuthProvider{ClientID: "client-1", ClientSecret: "secret-1", AuthStyle: "params",
		codes: map[string]codeGrant{}, refresh: map[string]bool{}, revoked: map[string]bool{}, access: map[string]time.Time{},
		family: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/authorize", p.authorize)
	mux.HandleFunc("/token", p.token)
	p.Server = httptest.NewUnstartedServer(mux)
	return p
}

// AuthURL and TokenURL are the provider's endpoints.
func (p *OAuthProvider) AuthURL() string  { return p.URL + "/authorize" }
func (p *OAuthProvider) TokenURL() string { return p.URL + "/token" }

// FailNext makes the next token requests fail, in order: "invalid_grant"
// (400) or "500".
func (p *OAuthProvider) FailNext(kinds ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext = append(p.failNext, kinds...)
}

// Issue creates a token pair directly, as if a person had connected.
func (p *OAuthProvider) Issue(lifetime time.Duration) (access, refresh string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.issueLocked(lifetime)
}

func (p *OAuthProvider) issueLocked(lifetime time.Duration) (string, string) {
	p.next++
	a, r := fmt.Sprintf("at-%d", p.next), fmt.Sprintf("rt-%d", p.next)
	p.access[a] = time.Now().Add(lifetime)
	p.refresh[r] = true
	return a, r
}

// ValidAccess reports whether an access token was issued and has not
// expired; a fake API checks bearer tokens with it.
func (p *OAuthProvider) ValidAccess(token string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	exp, ok := p.access[token]
	return ok && time.Now().Before(exp)
}

// ExpireAccess makes an access token invalid now (the provider revoked it).
func (p *OAuthProvider) ExpireAccess(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.access[token] = time.Time{}
}

// familyOf is the first refresh token of rt's grant.
func (p *OAuthProvider) familyOf(rt string) string {
	if f, ok := p.family[rt]; ok {
		return f
	}
	return rt
}

// revokeFamilyLocked revokes every live refresh token of rt's grant.
func (p *OAuthProvider) revokeFamilyLocked(rt string) {
	f := p.familyOf(rt)
	for t := range p.refresh {
		if p.familyOf(t) == f {
			delete(p.refresh, t)
			p.revoked[t] = true
		}
	}
}

// LiveRefreshToken reports whether a refresh token would be accepted.
func (p *OAuthProvider) LiveRefreshToken(token string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refresh[token]
}

func (p *OAuthProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.next++
	code := fmt.Sprintf("code-%d", p.next)
	p.codes[code] = codeGrant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), scope: q.Get("scope")}
	p.mu.Unlock()
	to, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// token is the token endpoint: after Delay, the client authenticated, any
// queued failure, then the grant the form asks for.
func (p *OAuthProvider) token(w http.ResponseWriter, r *http.Request) {
	if !p.waitDelay(r) {
		return
	}
	if err := r.ParseForm(); err != nil {
		tokenError(w, 400, "invalid_request")
		return
	}
	if !p.clientAuthenticated(r) {
		tokenError(w, 401, "invalid_client")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failLocked(w) {
		return
	}
	lifetime := p.AccessLifetime
	if lifetime <= 0 {
		lifetime = time.Hour
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		p.authCodeGrantLocked(w, r, lifetime)
	case "refresh_token":
		p.refreshGrantLocked(w, r, lifetime)
	default:
		tokenError(w, 400, "unsupported_grant_type")
	}
}

// waitDelay waits out p.Delay before a token answer, and reports false
// when r's context ends first.
func (p *OAuthProvider) waitDelay(r *http.Request) bool {
	p.mu.Lock()
	delay := p.Delay
	p.mu.Unlock()
	if delay <= 0 {
		return true
	}
	select {
	case <-time.After(delay):
		return true
	case <-r.Context().Done():
		return false
	}
}

// clientAuthenticated reports whether r carries p's client id and secret,
// in Basic auth or, with AuthStyle "params", in the form.
func (p *OAuthProvider) clientAuthenticated(r *http.Request) bool {
	id, secret, basic := r.BasicAuth()
	if p.AuthStyle == "params" {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	} else if !basic {
		return false
	}
	return id == p.ClientID && secret == p.ClientSecret
}

// failLocked answers with the next failure FailNext queued, if any, and
// reports whether it did.
func (p *OAuthProvider) failLocked(w http.ResponseWriter) bool {
	if len(p.failNext) == 0 {
		return false
	}
	kind := p.failNext[0]
	p.failNext = p.failNext[1:]
	if kind == "invalid_grant" {
		p.InvalidGrants.Add(1)
		tokenError(w, 400, "invalid_grant")
	} else {
		http.Error(w, "boom", http.StatusInternalServerError)
	}
	return true
}

// authCodeGrantLocked exchanges a code (used once, checked against its PKCE
// challenge and redirect URI) for a new token pair.
func (p *OAuthProvider) authCodeGrantLocked(w http.ResponseWriter, r *http.Request, lifetime time.Duration) {
	g, ok := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code"))
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || r.PostForm.Get("redirect_uri") != g.redirect {
		p.InvalidGrants.Add(1)
		tokenError(w, 400, "invalid_grant")
		return
	}
	p.AuthCodeGrants.Add(1)
	a, rt := p.issueLocked(lifetime)
	p.writeToken(w, a, rt, lifetime, g.scope)
}

// refreshGrantLocked exchanges a live refresh token for a new access token
// (and, with Rotate, a new refresh token, the old one revoked); the reuse of
// a revoked one is counted and, with RevokeFamilyOnReuse, revokes its
// family.
func (p *OAuthProvider) refreshGrantLocked(w http.ResponseWriter, r *http.Request, lifetime time.Duration) {
	rt := r.PostForm.Get("refresh_token")
	if p.revoked[rt] {
		p.RevokedRefreshUses.Add(1)
		if p.RevokeFamilyOnReuse {
			p.revokeFamilyLocked(rt)
		}
	}
	if !p.refresh[rt] {
		p.InvalidGrants.Add(1)
		tokenError(w, 400, "invalid_grant")
		return
	}
	p.RefreshGrants.Add(1)
	p.next++
	a := fmt.Sprintf("at-%d", p.next)
	p.access[a] = time.Now().Add(lifetime)
	newRT := ""
	if p.Rotate {
		delete(p.refresh, rt)
		p.revoked[rt] = true
		newRT = fmt.Sprintf("rt-%d", p.next)
		p.refresh[newRT] = true
		p.family[newRT] = p.familyOf(rt)
	}
	p.writeToken(w, a, newRT, lifetime, p.Scope)
}

func (p *OAuthProvider) writeToken(w http.ResponseWriter, access, refresh string, lifetime time.Duration, scope string) {
	if p.Scope != "" {
		scope = p.Scope
	}
	body := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(lifetime / time.Second)}
	if refresh != "" {
		body["refresh_token"] = refresh
	}
	if scope != "" {
		body["scope"] = scope
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
}

func tokenError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":%q}`, code)
}

// Scopes splits a space-separated scope string.
func Scopes(s string) []string { return strings.Fields(s) }
