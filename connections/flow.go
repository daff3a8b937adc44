package connections

import (
	"context"
	"errors"
	"fmt"
	"github.com/httptools/httptools/internal/ids"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// ErrBadState is a callback whose state is unknown, used already, or
// expired.
var ErrBadState = errors.New("unknown, used or expired state: start the connection again")

// Authorize starts the connect flow for owner's account at app: it stores a
// single-use state (10 minutes, bound to tenant, owner and app) with a PKCE
// verifier and returns the provider's authorization URL, asking for every
// scope the app's permissions name.
func (m *Manager) Authorize(ctx context.Context, tenant, appID, own string) (string, error) {
	url, _, err := m.AuthorizeState(ctx, tenant, appID, own)
	return url, err
}

// AuthorizeState is Authorize that also returns the flow's single-use
// state (an MCP URL elicitation's id).
func (m *Manager) AuthorizeState(ctx context.Context, tenant, appID, own string) (string, string, error) {
	app, ok := m.Apps[appID]
	var p Provider
	if !ok && IsDiscovered(appID) {
		var err error
		if p, err = m.provider(ctx, appID); err != nil {
			return "", "", err
		}
	} else if !ok {
		return "", "", fmt.Errorf("app %q is not configured in apps.json", appID)
	}
	st := &State{
		State:    ids.New("st_"),
		Tenant:   tenant,
		App:      appID,
		Owner:    own,
		Verifier: oauth2.GenerateVerifier(),
		Expires:  m.sharedNow(ctx).Add(StateLifetime), // the store's clock: the callback may come to another replica
	}
	if err := m.States.PutState(ctx, st); err != nil {
		return "", "", err
	}
	if p != nil {
		return p.AuthCodeURL(st.State, st.Verifier, m.askedScopes(ctx, tenant, appID, own)), st.State, nil
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(st.Verifier)}
	for k, v := range app.AuthParams {
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	return app.oauthConfig(m.RedirectURL, app.scopes(nil)).AuthCodeURL(st.State, opts...), st.State, nil
}

// Callback finishes the flow: it takes the state (once), exchanges the code
// with the PKCE verifier, maps the granted scopes back to permission keys and
// stores the connection, active.
func (m *Manager) Callback(ctx context.Context, state, code string) (*Record, error) {
	return m.CallbackIss(ctx, state, code, "")
}

// CallbackIss is Callback with the answer's iss parameter (RFC 9207, ""
// when it had none), which a discovered app's authorization server may be
// required to send.
func (m *Manager) CallbackIss(ctx context.Context, state, code, iss string) (*Record, error) {
	st, err := m.States.TakeState(ctx, state)
	if errors.Is(err, ErrNotFound) {
		return nil, ErrBadState
	}
	if err != nil {
		return nil, err
	}
	if m.sharedNow(ctx).After(st.Expires) {
		return nil, ErrBadState
	}
	tok, requested, grants, err := m.exchange(ctx, st, code, iss)
	if err != nil {
		return nil, err
	}
	if err := bearerOnly(tok); err != nil {
		return nil, fmt.Errorf("exchanging the code at %s: %w", st.App, err)
	}
	scopes := requested
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		scopes = strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
	}
	issued := m.now()
	expiry := tok.Expiry
	if tok.ExpiresIn > 0 {
		expiry = issued.Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	rec, err := m.Connections.SaveConnection(ctx, &Record{
		Tenant: st.Tenant, App: st.App, Owner: st.Owner,
		Permissions: grants(scopes), Scopes: scopes,
		AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: expiry,
		Status: StatusActive, LastRefresh: issued,
	})
	if err != nil {
		return nil, err
	}
	m.cache.Delete(cacheKey(rec.Tenant, rec.App, rec.Owner))
	return rec, nil
}

// exchange trades the code of st's flow for a token at its app: the
// scopes asked, and what maps the granted scopes to permissions (a
// discovered app's permissions are its scopes).
func (m *Manager) exchange(ctx context.Context, st *State, code, iss string) (*oauth2.Token, []string, func([]string) []string, error) {
	if app, ok := m.Apps[st.App]; ok {
		requested := app.scopes(nil)
		tctx, cancel := context.WithTimeout(m.tokenContext(ctx), m.refreshTimeout())
		defer cancel()
		tok, err := app.oauthConfig(m.RedirectURL, requested).Exchange(tctx, code, oauth2.VerifierOption(st.Verifier))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("exchanging the code at %s: %s", st.App, describeTokenError(err))
		}
		return tok, requested, app.grantedPermissions, nil
	}
	if !IsDiscovered(st.App) {
		return nil, nil, nil, fmt.Errorf("app %q is no longer configured", st.App)
	}
	p, err := m.provider(ctx, st.App)
	if err != nil {
		return nil, nil, nil, err
	}
	tctx, cancel := context.WithTimeout(ctx, m.refreshTimeout())
	defer cancel()
	tok, err := p.Exchange(tctx, code, st.Verifier, iss)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("exchanging the code at %s: %w", st.App, err)
	}
	return tok, p.Scopes(), slices.Clone[[]string], nil
}

func (m *Manager) refreshTimeout() time.Duration {
	if m.RefreshTimeout > 0 {
		return m.RefreshTimeout
	}
	return DefaultRefreshTimeout
}

// Revoke marks a tenant's connection revoked and forgets its cached token.
func (m *Manager) Revoke(ctx context.Context, tenant, id string) error {
	recs, err := m.Connections.Connections(ctx, tenant)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.ID == id {
			m.cache.Delete(cacheKey(r.Tenant, r.App, r.Owner))
		}
	}
	return m.Connections.RevokeConnection(ctx, tenant, id)
}

// bearerOnly refuses a token that is not a bearer token (RFC 6750): tools
// send "Authorization: Bearer <token>", and a token of another type (mac,
// which must sign each request) sent so would be a credential given away
// in a form its provider does not accept.
func bearerOnly(tok *oauth2.Token) error {
	if typ := tok.Type(); typ != "Bearer" {
		return fmt.Errorf("the provider issued a token of type %q; httptools sends bearer tokens only (RFC 6750): configure the app to issue bearer tokens", tok.TokenType)
	}
	return nil
}
