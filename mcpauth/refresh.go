package mcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Refresh renews tok with its refresh token, for the same resource: the
// request carries the resource indicator, which the MCP specification asks
// of every token request and x/oauth2's refresh cannot send, so it is made
// here, authenticated as the client's method says. The new token is checked
// as a first one is; a server that sends no new refresh token leaves the
// old one in use (RFC 6749 §6).
func (c *Config) Refresh(ctx context.Context, eg Egress, d *Discovery, client *Client, tok *oauth2.Token) (*oauth2.Token, error) {
	u := d.Server.TokenEndpoint
	if tok.RefreshToken == "" {
		return nil, errorf(ReasonTokenRefused, u, nil, "the token has no refresh token: authorize again")
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "resource": {d.Resource}}
	if client.AuthMethod != AuthBasic {
		form.Set("client_id", client.ID)
	}
	if client.AuthMethod == AuthPost {
		form.Set("client_secret", client.Secret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, errorf(ReasonTokenRefused, u, err, "the token endpoint is not one a request can be made to")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if client.AuthMethod == AuthBasic {
		req.SetBasicAuth(url.QueryEscape(client.ID), url.QueryEscape(client.Secret)) // RFC 6749 §2.3.1
	}
	resp, err := c.httpClient(eg).Do(req)
	if err != nil {
		return nil, errorf(ReasonTokenRefused, u, err, "the refresh failed")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, errorf(ReasonTokenRefused, u, err, "reading the refresh's answer failed")
	}
	nt, err := parseToken(body, resp.StatusCode)
	if err != nil {
		return nil, errorf(ReasonTokenRefused, u, err, "the token endpoint refused the refresh: authorize again")
	}
	if nt.RefreshToken == "" {
		nt.RefreshToken = tok.RefreshToken
	}
	return nt, checkToken(nt, d)
}

// parseToken reads a token endpoint's JSON answer (RFC 6749 §5.1), its
// members kept as the token's extras; an error answer (§5.2) gives its code
// only, never the body, which may echo what was sent.
func parseToken(body []byte, status int) (*oauth2.Token, error) {
	var t struct {
		AccessToken  string      `json:"access_token"`
		TokenType    string      `json:"token_type"`
		RefreshToken string      `json:"refresh_token"`
		ExpiresIn    json.Number `json:"expires_in"`
		Error        string      `json:"error"`
	}
	err := json.Unmarshal(body, &t)
	switch {
	case status != http.StatusOK && t.Error != "":
		return nil, &tokenError{code: clip(t.Error)}
	case status != http.StatusOK:
		return nil, fmt.Errorf("status %d", status)
	case err != nil:
		return nil, fmt.Errorf("the answer is not the JSON object of a token: %w", err)
	}
	var extra map[string]any
	json.Unmarshal(body, &extra)
	tok := &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken}
	if n := seconds(t.ExpiresIn); n > 0 {
		tok.ExpiresIn = n
		tok.Expiry = time.Now().Add(time.Duration(n) * time.Second)
	}
	return tok.WithExtra(extra), nil
}

// seconds reads expires_in: a JSON number, or a string of digits.
func seconds(v any) int64 {
	switch n := v.(type) {
	case float64:
		return int64(n)
	case string:
		var i int64
		if _, err := fmt.Sscan(n, &i); err == nil {
			return i
		}
	}
	return 0
}

// tokenError is a token endpoint's error answer: its code only.
type tokenError struct{ code string }

func (e *tokenError) Error() string { return fmt.Sprintf("error %q", e.code) }

// invalidClient says whether err is a token endpoint's invalid_client
// answer (RFC 6749 §5.2): the server does not know the client, or not its
// credentials.
func invalidClient(err error) bool {
	var te *tokenError
	var re *oauth2.RetrieveError
	return errors.As(err, &te) && te.code == "invalid_client" || errors.As(err, &re) && re.ErrorCode == "invalid_client"
}
