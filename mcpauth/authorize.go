package mcpauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
)

// Pending is an authorization under way: the URL the person is sent to and
// what checks the answer. It is used once.
type Pending struct {
	// URL is the authorization URL: PKCE S256, the resource indicator, the
	// state and the scopes.
	URL string
	// State is the request's state, which the answer must carry back.
	State string
	// Scopes are the scopes asked, nil when none were.
	Scopes []string

	d        *Discovery
	client   *Client
	verifier string
	conf     *oauth2.Config
}

// Begin builds the authorization request of client at d's authorization
// server, answered at redirectURI.
func Begin(d *Discovery, client *Client, redirectURI string, scopes []string) *Pending {
	p := &Pending{State: rand.Text(), Scopes: scopes, d: d, client: client, verifier: oauth2.GenerateVerifier()}
	p.conf = oauthConfig(d, client, redirectURI, scopes)
	p.URL = p.conf.AuthCodeURL(p.State, oauth2.S256ChallengeOption(p.verifier), oauth2.SetAuthURLParam("resource", d.Resource))
	return p
}

// oauthConfig is x/oauth2's view of the client at d's server.
func oauthConfig(d *Discovery, c *Client, redirectURI string, scopes []string) *oauth2.Config {
	style, secret := oauth2.AuthStyleInParams, c.Secret
	switch c.AuthMethod {
	case AuthBasic:
		style = oauth2.AuthStyleInHeader
	case AuthNone:
		secret = "" // a public client sends its client_id only
	}
	return &oauth2.Config{
		ClientID: c.ID, ClientSecret: secret, RedirectURL: redirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: d.Server.AuthorizationEndpoint, TokenURL: d.Server.TokenEndpoint, AuthStyle: style},
	}
}

// Exchange checks the authorization response (the query of the redirect:
// its error, state and iss) and trades its code for a token, which it
// checks is for d's resource.
func (p *Pending) Exchange(ctx context.Context, cfg *Config, eg Egress, answer url.Values) (*oauth2.Token, error) {
	if e := answer.Get("error"); e != "" {
		return nil, errorf(ReasonAuthorizationDenied, p.d.Issuer, nil, "the authorization server answered error %q: authorize again", clip(e))
	}
	if answer.Get("state") != p.State {
		return nil, errorf(ReasonAuthorizationDenied, p.d.Issuer, nil, "the authorization response's state is not the request's: it answers another request, so its code is not used")
	}
	if err := checkIssuer(answer.Get("iss"), p.d); err != nil {
		return nil, err
	}
	code := answer.Get("code")
	if code == "" {
		return nil, errorf(ReasonAuthorizationDenied, p.d.Issuer, nil, "the authorization response has no code")
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout())
	defer cancel()
	tok, err := p.conf.Exchange(cfg.oauthContext(ctx, eg), code, oauth2.VerifierOption(p.verifier), oauth2.SetAuthURLParam("resource", p.d.Resource))
	if err != nil {
		return nil, errorf(ReasonTokenRefused, p.d.Server.TokenEndpoint, tokenCause(err), "the token endpoint refused the authorization code")
	}
	return tok, checkToken(tok, p.d)
}

// oauthContext gives x/oauth2 the guarded client, under eg.
func (c *Config) oauthContext(ctx context.Context, eg Egress) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.httpClient(eg))
}

// tokenCause keeps the OAuth error code of a token endpoint's refusal and
// drops its body, which may echo what was sent.
func tokenCause(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return fmt.Errorf("error %q", clip(re.ErrorCode))
		}
		if re.Response != nil {
			return fmt.Errorf("status %d", re.Response.StatusCode)
		}
	}
	return err
}

// checkIssuer applies RFC 9207: a server that says it sends iss must send
// its issuer; an iss sent unasked must still be the issuer.
func checkIssuer(iss string, d *Discovery) error {
	switch {
	case iss == "" && d.Server.AuthorizationResponseIssParameterSupported:
		return errorf(ReasonAuthorizationDenied, d.Issuer, nil, "the authorization response has no iss though the server says it sends one (RFC 9207): it may come from another server")
	case iss != "" && strings.TrimSuffix(iss, "/") != strings.TrimSuffix(d.Server.Issuer, "/"):
		return errorf(ReasonAuthorizationDenied, d.Issuer, nil, "the authorization response's iss %q is not the issuer %q (RFC 9207): a mix-up, so its code is not used", clip(iss), d.Server.Issuer)
	}
	return nil
}

// checkToken refuses a token that says it is for another resource: its
// response's resource or aud, or the aud of a JWT access token.
func checkToken(tok *oauth2.Token, d *Discovery) error {
	if tok.AccessToken == "" {
		return errorf(ReasonTokenRefused, d.Server.TokenEndpoint, nil, "the token response has no access_token")
	}
	if t := tok.Type(); !strings.EqualFold(t, "bearer") {
		return errorf(ReasonTokenRefused, d.Server.TokenEndpoint, nil, "the token is of type %q, not Bearer", clip(t))
	}
	var claims []string
	if r, ok := tok.Extra("resource").(string); ok {
		claims = append(claims, r)
	}
	claims = append(claims, audience(tok.Extra("aud"))...)
	claims = append(claims, jwtAudience(tok.AccessToken)...)
	for _, c := range claims {
		if strings.TrimSuffix(c, "/") == strings.TrimSuffix(d.Resource, "/") {
			return nil
		}
	}
	if len(claims) > 0 {
		return errorf(ReasonTokenRefused, d.Server.TokenEndpoint, nil, "the token is for %q, not for the resource %q: it is not used", clip(strings.Join(claims, " ")), d.Resource)
	}
	return nil
}

// audience reads an aud claim: a string or an array of strings.
func audience(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, x := range a {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// jwtAudience reads the aud of an access token that is a JWT (its payload
// only: the resource server checks the signature); nil for an opaque token.
func jwtAudience(tok string) []string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || len(parts[1]) > 16<<10 {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var payload struct {
		Aud any `json:"aud"`
	}
	if json.Unmarshal(raw, &payload) != nil {
		return nil
	}
	return audience(payload.Aud)
}

// clip cuts a server's text to what a message should hold.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
