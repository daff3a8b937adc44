package openapi

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The server an operation is sent to, and so the tool's allowlist.

// server is a base URL an operation is sent to.
type server struct {
	url  string // no trailing slash
	host string
}

// absServer returns the first absolute http(s) URL among servers, with
// its variables' defaults filled in.
func absServer(servers openapi3.Servers) (server, bool) {
	for _, s := range servers {
		if s == nil {
			continue
		}
		u := s.URL
		for name, v := range s.Variables {
			if v != nil {
				u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
			}
		}
		if pu, err := url.Parse(u); err == nil && (pu.Scheme == "https" || pu.Scheme == "http") && pu.Host != "" && !strings.ContainsAny(pu.Host, "{}") {
			return server{url: strings.TrimRight(u, "/"), host: pu.Hostname()}, true
		}
	}
	return server{}, false
}

// baseServer is --server, else the document's first absolute server.
func (im *importer) baseServer() (server, error) {
	if im.opts.Server != "" {
		if s, ok := absServer(openapi3.Servers{{URL: im.opts.Server}}); ok {
			// --server names the host; a document whose servers are all
			// relative ("/v1.45", Docker's) keeps its path below it,
			// unless --server has a path of its own.
			if u, _ := url.Parse(s.url); u != nil && (u.Path == "" || u.Path == "/") {
				if _, abs := absServer(im.doc.Servers); !abs && len(im.doc.Servers) > 0 && im.doc.Servers[0] != nil {
					if rel := strings.TrimRight(im.doc.Servers[0].URL, "/"); strings.HasPrefix(rel, "/") && !strings.ContainsAny(rel, "{}") {
						s.url = strings.TrimRight(s.url, "/") + rel
					}
				}
			}
			return s, nil
		}
		return server{}, fmt.Errorf("server %q is not an absolute http(s) URL: pass --server https://api.example.com", im.opts.Server)
	}
	if s, ok := absServer(im.doc.Servers); ok {
		return s, nil
	}
	if len(im.doc.Servers) > 0 && im.doc.Servers[0] != nil {
		return server{}, fmt.Errorf("server %q is not an absolute http(s) URL, and no other is: pass --server https://api.example.com", im.doc.Servers[0].URL)
	}
	return server{}, errors.New("the document names no server: pass --server https://api.example.com")
}

// serverFor is the operation's own server, else its path's, else base.
func (im *importer) serverFor(base server, item *openapi3.PathItem, op *openapi3.Operation) (server, error) {
	if im.opts.Server != "" {
		return base, nil
	}
	// The operation's own servers, else its path's: when they are given
	// and none is one a tool can name (a variable with no default, "https://{your-agent-url}"),
	// the operation is served elsewhere than the document's base, and its
	// tool would send to the wrong host.
	for _, own := range []openapi3.Servers{derefServers(op.Servers), item.Servers} {
		if len(own) == 0 {
			continue
		}
		if s, ok := absServer(own); ok {
			return s, nil
		}
		return server{}, skipf(SkipServer, "its server %s is not an absolute http(s) URL a tool can name (a variable without a default?): import it alone with --server", own[0].URL)
	}
	return base, nil
}

func derefServers(s *openapi3.Servers) openapi3.Servers {
	if s == nil {
		return nil
	}
	return *s
}
