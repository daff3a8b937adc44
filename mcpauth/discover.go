package mcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/httptools/httptools/fetch"
)

// Defaults of Config.
const (
	DefaultMaxDocumentBytes = 64 << 10
	DefaultTimeout          = 15 * time.Second
)

// Config is what every step fetches with. The zero value is not usable:
// Client is required.
type Config struct {
	// Client fetches every URL learned from a server or its metadata: its
	// SSRF guard, redirect rules and audit apply.
	Client *fetch.Client
	// PlainHTTP are the hosts (patterns as fetch.HostAllowed reads them)
	// whose authorization URLs may be plain http; every other must be
	// https.
	PlainHTTP []string
	// MaxDocumentBytes caps each metadata document and registration
	// answer; 0 means DefaultMaxDocumentBytes.
	MaxDocumentBytes int64
	// Timeout is the one deadline over discovery and registration (the
	// person's time at the authorization page is not in it); 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

// Egress is what the tool whose server is being authorized may reach: the
// learned URLs are fetched under its allowlist and audited with its id.
type Egress struct {
	Allowlist  []string
	Restricted bool
	Tool       string
	Tenant     string
}

func (c *Config) maxBytes() int64 {
	if c.MaxDocumentBytes > 0 {
		return c.MaxDocumentBytes
	}
	return DefaultMaxDocumentBytes
}

func (c *Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// Discovery is what a server's metadata says of how to authorize for it.
type Discovery struct {
	// Endpoint is the MCP endpoint that asked for authorization.
	Endpoint string
	// Resource is the canonical URI of the protected resource (the
	// metadata's resource): the resource indicator of every request, and
	// what a token is bound to.
	Resource string
	// ResourceMetadataURL is where the protected resource metadata was
	// found.
	ResourceMetadataURL string
	ResourceMetadata    *oauthex.ProtectedResourceMetadata
	// Issuer is the authorization server used: the first the resource
	// names.
	Issuer string
	Server *oauthex.AuthServerMeta
}

// Discover finds the protected resource metadata of the MCP endpoint (the
// challenge's resource_metadata URL, else the well-known URL at the
// endpoint's path, else at its root) and the metadata of the authorization
// server it names (RFC 8414 and OpenID discovery, in the specification's
// order). Everything is fetched under eg, within Config.Timeout.
func (c *Config) Discover(ctx context.Context, eg Egress, endpoint string, ch Challenge) (*Discovery, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	ep, err := c.checkURL(endpoint, "the MCP endpoint")
	if err != nil {
		return nil, err
	}
	d := &Discovery{Endpoint: endpoint}
	if err := c.discoverResource(ctx, eg, ep, ch, d); err != nil {
		return nil, err
	}
	if err := c.discoverServer(ctx, eg, d); err != nil {
		return nil, err
	}
	return d, nil
}

// resourceMetadataURLs are where the protected resource metadata of ep is
// looked for, in order (MCP 2025-11-25, "Protected Resource Metadata
// Discovery Requirements").
func resourceMetadataURLs(ep *url.URL, fromChallenge string) []string {
	var out []string
	if fromChallenge != "" {
		out = append(out, fromChallenge)
	}
	root := url.URL{Scheme: ep.Scheme, Host: ep.Host, Path: "/.well-known/oauth-protected-resource"}
	if p := strings.Trim(ep.Path, "/"); p != "" {
		at := root
		at.Path += "/" + p
		out = append(out, at.String())
	}
	return append(out, root.String())
}

func (c *Config) discoverResource(ctx context.Context, eg Egress, ep *url.URL, ch Challenge, d *Discovery) error {
	for _, u := range resourceMetadataURLs(ep, ch.ResourceMetadata) {
		if _, err := c.checkURL(u, "the protected resource metadata URL"); err != nil {
			return err
		}
		var prm oauthex.ProtectedResourceMetadata
		found, err := c.getJSON(ctx, eg, u, &prm)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		if err := checkResource(ep, prm.Resource, u); err != nil {
			return err
		}
		if len(prm.AuthorizationServers) == 0 {
			return errorf(ReasonBadMetadata, u, nil, "the protected resource metadata names no authorization server")
		}
		d.Resource, d.ResourceMetadataURL, d.ResourceMetadata = prm.Resource, u, &prm
		return nil
	}
	return errorf(ReasonNoMetadata, ep.String(), nil, "the MCP server asks for OAuth but publishes no protected resource metadata (RFC 9728) at its resource_metadata URL or the well-known URLs")
}

// checkResource refuses metadata that speaks for another resource than the
// endpoint: its resource must be the endpoint's origin and a path the
// endpoint lies under, so that a token for it is sent nowhere else.
func checkResource(ep *url.URL, resource, from string) error {
	r, err := url.Parse(resource)
	if err != nil || r.Fragment != "" || !strings.EqualFold(r.Scheme, ep.Scheme) || !strings.EqualFold(r.Host, ep.Host) {
		return errorf(ReasonForeignMetadata, from, nil, "the protected resource metadata is for resource %q, not for the MCP endpoint's origin %s://%s", resource, ep.Scheme, ep.Host)
	}
	rp, epp := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(ep.Path, "/")
	if rp != "" && rp != epp && !strings.HasPrefix(epp, rp+"/") {
		return errorf(ReasonForeignMetadata, from, nil, "the protected resource metadata is for resource %q, which the MCP endpoint %s is not under", resource, ep.Path)
	}
	return nil
}

// serverMetadataURLs are where an issuer's metadata is looked for, in order
// (MCP 2025-11-25, "Authorization Server Metadata Discovery").
func serverMetadataURLs(iss *url.URL) []string {
	base := url.URL{Scheme: iss.Scheme, Host: iss.Host}
	at := func(p string) string { u := base; u.Path = p; return u.String() }
	p := strings.Trim(iss.Path, "/")
	if p == "" {
		return []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	}
	return []string{
		at("/.well-known/oauth-authorization-server/" + p),
		at("/.well-known/openid-configuration/" + p),
		at("/" + p + "/.well-known/openid-configuration"),
	}
}

func (c *Config) discoverServer(ctx context.Context, eg Egress, d *Discovery) error {
	issuer := d.ResourceMetadata.AuthorizationServers[0]
	iss, err := c.checkURL(issuer, "the authorization server")
	if err != nil {
		return err
	}
	for _, u := range serverMetadataURLs(iss) {
		var asm oauthex.AuthServerMeta
		found, err := c.getJSON(ctx, eg, u, &asm)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		if strings.TrimSuffix(asm.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return errorf(ReasonForeignMetadata, u, nil, "the authorization server metadata is for issuer %q, not %q, the one the protected resource names", asm.Issuer, issuer)
		}
		if err := c.checkServer(&asm, u); err != nil {
			return err
		}
		d.Issuer, d.Server = issuer, &asm
		return nil
	}
	return errorf(ReasonNoMetadata, issuer, nil, "the authorization server publishes no metadata (RFC 8414 or OpenID discovery) at its well-known URLs")
}

// checkServer refuses authorization server metadata that lacks its
// endpoints or PKCE S256, or whose endpoints are not https.
func (c *Config) checkServer(asm *oauthex.AuthServerMeta, from string) error {
	if asm.AuthorizationEndpoint == "" || asm.TokenEndpoint == "" {
		return errorf(ReasonBadMetadata, from, nil, "the authorization server metadata lacks authorization_endpoint or token_endpoint")
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return errorf(ReasonBadMetadata, from, nil, "the authorization server does not list S256 in code_challenge_methods_supported: PKCE is required, so httptools does not proceed")
	}
	for what, u := range map[string]string{"authorization_endpoint": asm.AuthorizationEndpoint, "token_endpoint": asm.TokenEndpoint, "registration_endpoint": asm.RegistrationEndpoint} {
		if u == "" {
			continue
		}
		if _, err := c.checkURL(u, "the authorization server's "+what); err != nil {
			return err
		}
	}
	return nil
}

// checkURL parses a URL learned from a server: absolute, no credentials in
// it, https unless its host is one Config.PlainHTTP names.
func (c *Config) checkURL(raw, what string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return nil, errorf(ReasonInsecureURL, raw, nil, "%s is not an absolute URL without credentials or fragment", what)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return u, nil
	case "http":
		if fetch.HostAllowed(c.PlainHTTP, u.Hostname()) {
			return u, nil
		}
	}
	return nil, errorf(ReasonInsecureURL, raw, nil, "%s must be https (a host the operator lets use plain http aside)", what)
}

// httpClient is the guarded client under eg (fetch's session client: the
// SSRF guard and the allowlist on every hop, each answer capped at
// MaxDocumentBytes) whose every redirect hop must also be a URL checkURL
// takes: no hop from https down to plain http.
func (c *Config) httpClient(eg Egress) *http.Client {
	hc := c.Client.SessionClient(fetch.Session{Allowlist: eg.Allowlist, Restricted: eg.Restricted, Tool: eg.Tool, Tenant: eg.Tenant, MaxBody: c.maxBytes()})
	guard := hc.CheckRedirect
	hc.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if _, err := c.checkURL(r.URL.String(), "a redirect"); err != nil {
			return err
		}
		return guard(r, via)
	}
	return hc
}

// getJSON fetches one metadata document into v under eg and the size cap;
// found is false for a 4xx, which sends discovery to the next URL.
func (c *Config) getJSON(ctx context.Context, eg Egress, u string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, errorf(ReasonInsecureURL, u, err, "the metadata URL is not one a request can be made to")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.httpClient(eg).Do(req)
	if err != nil {
		return false, c.fetchError(u, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return false, nil
	case resp.StatusCode != http.StatusOK:
		return false, errorf(ReasonNoMetadata, u, nil, "the metadata URL answered %d", resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, c.fetchError(u, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return false, errorf(ReasonBadMetadata, u, err, "the metadata document is not the JSON object expected")
	}
	return true, nil
}

// fetchError words a failed metadata request: over the cap, a redirect
// checkURL refused, or anything else (the guard's refusal, the deadline).
func (c *Config) fetchError(u string, err error) error {
	var e *Error
	switch {
	case errors.Is(err, fetch.ErrTooLarge):
		return errorf(ReasonBadMetadata, u, err, "the metadata document is over the %d-byte cap", c.maxBytes())
	case errors.As(err, &e):
		return e
	}
	return errorf(ReasonNoMetadata, u, err, "fetching metadata failed")
}
