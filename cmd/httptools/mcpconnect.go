package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/mcpauth"
	"github.com/httptools/httptools/server"
	"github.com/httptools/httptools/synth"
)

// Remote MCP servers behind OAuth, in serve: a manifest whose connection's
// app is a discovered one (connections.DiscoveredPrefix and the server's
// URL) is connected per person or company like any other, with the
// authorization server and the client found by package mcpauth: the
// operator's apps.json client for that issuer, else serve's client
// metadata document (at <public-url>/oauth/client-metadata.json, when the
// public URL is https), else dynamic registration, kept per authorization
// server in the store, encrypted as secrets are.

// clientMetadataPath is where serve publishes its client metadata document.
const clientMetadataPath = "/oauth/client-metadata.json"

// registrationTenant holds the dynamic registrations among the secrets: a
// tenant no key can name.
const registrationTenant = "\x1fmcp-registrations" // a control character: CreateAPIKey refuses it, and PostgreSQL text holds it

// usesDiscovered says whether a tool of ts connects to a discovered app.
func usesDiscovered(ts *server.Toolset) bool {
	for _, t := range ts.Manifests() {
		if m := t.Manifest(); m.NeedsSpec != nil {
			for _, need := range m.NeedsSpec.Connections {
				if connections.IsDiscovered(need.App) {
					return true
				}
			}
		}
	}
	return false
}

// connector is the discovery of serve's connections manager.
func connector(client *fetch.Client, plain []string, apps connections.Apps, store *sqlstore.SQLStore, public string, tools func() *server.Toolset) *mcpauth.Connector {
	cfg := &mcpauth.Config{Client: client, PlainHTTP: plain}
	reg := &mcpauth.Registrar{Config: cfg, PreRegistered: mcpauth.Apps(apps), Store: secretRegistrations{store}, ClientName: "httptools"}
	if strings.HasPrefix(public, "https://") {
		reg.MetadataDocumentURL = public + clientMetadataPath
	}
	return &mcpauth.Connector{Config: cfg, Registrar: reg, RedirectURI: public + "/v1/oauth/callback",
		Egress: func(app string) mcpauth.Egress { return egressOf(tools(), app) }}
}

// egressOf is what the tools that connect to app may reach: the first such
// tool's allowlist (a pack names one server's tools alike).
func egressOf(ts *server.Toolset, app string) mcpauth.Egress {
	for id, t := range ts.Manifests() {
		m := t.Manifest()
		if m.NeedsSpec == nil {
			continue
		}
		for _, need := range m.NeedsSpec.Connections {
			if need.App != app {
				continue
			}
			eg := mcpauth.Egress{Tool: id}
			if n := m.Network; n != nil && n.Kind == synth.NetworkAllowlist {
				eg.Allowlist, eg.Restricted = n.Hosts, true
			}
			return eg
		}
	}
	return mcpauth.Egress{Restricted: true} // no tool uses it: nothing is reached
}

// metadataDocument serves the client metadata document before handler.
func metadataDocument(public string, handler http.Handler) http.Handler {
	if !strings.HasPrefix(public, "https://") {
		return handler
	}
	doc := mcpauth.ClientMetadataDocument(public+clientMetadataPath, "httptools", []string{public + "/v1/oauth/callback"})
	mux := http.NewServeMux()
	mux.Handle("GET "+clientMetadataPath, mcpauth.MetadataHandler(doc))
	mux.Handle("/", handler)
	return mux
}

// secretRegistrations keeps dynamic registrations as secrets of a tenant
// no key names: encrypted, one per authorization server and redirect URI.
type secretRegistrations struct{ store *sqlstore.SQLStore }

func registrationRef(issuer, redirectURI string) synth.SecretRef {
	sum := sha256.Sum256([]byte(issuer + "\n" + redirectURI))
	return synth.SecretRef{EnvName: "mcp", Name: "REG_" + strings.ToUpper(hex.EncodeToString(sum[:12]))}
}

func (s secretRegistrations) Registration(ctx context.Context, issuer, redirectURI string) (*mcpauth.Client, error) {
	v, err := s.store.Secret(ctx, registrationTenant, registrationRef(issuer, redirectURI))
	if errors.Is(err, synth.ErrSecretNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c mcpauth.Client
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return nil, nil // unreadable: register again
	}
	return &c, nil
}

func (s secretRegistrations) SaveRegistration(ctx context.Context, issuer, redirectURI string, c *mcpauth.Client) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.store.PutSecret(ctx, registrationTenant, registrationRef(issuer, redirectURI), string(b))
}

// ForgetRegistration deletes the registration kept if it is clientID's,
// and only the one it read (DeleteSecretIf): a registration another
// replica saved meanwhile is kept.
func (s secretRegistrations) ForgetRegistration(ctx context.Context, issuer, redirectURI, clientID string) error {
	_, err := s.store.DeleteSecretIf(ctx, registrationTenant, registrationRef(issuer, redirectURI), func(v string) bool {
		var c mcpauth.Client
		return json.Unmarshal([]byte(v), &c) == nil && c.ID == clientID
	})
	return err
}
