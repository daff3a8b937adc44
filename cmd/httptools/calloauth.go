package main

import (
	"fmt"
	"io"
	"os"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/mcpauth"
)

// oauthFlags are call's flags for remote MCP servers behind OAuth.
type oauthFlags struct {
	clientID, secretEnv, metadataURL, apps string
}

func (o *oauthFlags) register(fs *command) {
	fs.StringVar(&o.clientID, "oauth-client-id", "", "a client registered by hand at the MCP server's authorization server (its secret in --oauth-client-secret-env); used before any other registration")
	fs.StringVar(&o.secretEnv, "oauth-client-secret-env", "", "the environment variable that holds --oauth-client-id's secret")
	fs.StringVar(&o.metadataURL, "oauth-client-metadata-url", "", "the https URL of httptools' client metadata document, used as client_id where the authorization server takes one")
	fs.StringVar(&o.apps, "apps", "", "apps.json: an app whose tokenURL is the authorization server's token endpoint is the pre-registered client")
}

// authorizer is the OAuth flow of one `httptools call`: a token for a
// remote MCP server that asks for one, found by discovery, registered
// (pre-registered, client metadata document, else dynamically, kept in
// memory), authorized through a callback listener on 127.0.0.1 (Headless:
// a server that redirects at once is followed, else the URL is printed on
// prompt). Close stops the listener.
func (o *oauthFlags) authorizer(client *fetch.Client, plain []string, prompt io.Writer) (*mcpauth.Flow, func(), error) {
	cfg := &mcpauth.Config{Client: client, PlainHTTP: plain}
	reg := &mcpauth.Registrar{Config: cfg, MetadataDocumentURL: o.metadataURL, Store: &mcpauth.MemoryStore{}}
	var pre multiPre
	if o.clientID != "" {
		pre = append(pre, mcpauth.StaticClient{ID: o.clientID, Secret: os.Getenv(o.secretEnv)})
	}
	if o.apps != "" {
		apps, err := connections.LoadApps(o.apps)
		if err != nil {
			return nil, nil, fmt.Errorf("--apps: %w", err)
		}
		pre = append(pre, mcpauth.Apps(apps))
	}
	if len(pre) > 0 {
		reg.PreRegistered = pre
	}
	h, err := mcpauth.ListenHeadless(cfg, prompt)
	if err != nil {
		return nil, nil, err
	}
	return &mcpauth.Flow{Config: cfg, Registrar: reg, Opener: h}, func() { h.Close() }, nil
}

// multiPre asks each source of pre-registered clients in turn.
type multiPre []mcpauth.PreRegistered

func (m multiPre) PreRegistered(d *mcpauth.Discovery) (*mcpauth.Client, bool) {
	for _, p := range m {
		if c, ok := p.PreRegistered(d); ok {
			return c, true
		}
	}
	return nil, false
}
