package openapi

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// Security schemes: the simplest to hold becomes the tool's authorization.

// security makes the simplest requirement the format can send the tool's
// authorization. A requirement is the schemes that must all be sent
// together; the format sends one credential, in a header (a bearer, a
// named header, a connection's token, basic auth). OAuth 2 schemes of one
// authorization server required together are one token (Google's Oauth2
// and Oauth2c). When no alternative can be sent — two credentials at
// once, an API key in the query or a cookie, a scheme of no kind the
// format knows — the operation is skipped: its tool could never be called,
// unless Options.AuthScheme names the scheme to send instead.
func (im *importer) security(method, path string, op *openapi3.Operation, t *tool, spec *httpspec.Spec) error {
	reqs := im.doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if len(reqs) == 0 {
		return nil
	}
	// The alternatives are ranked, simplest to hold first: a bearer
	// token, an API key header, an OAuth connection, then basic auth.
	var why []string
	best, bestRank := "", 0
	var scopes []string
	for _, req := range reqs {
		if len(req) == 0 {
			return nil // anonymous access is one of the options
		}
		names := sortedKeys(req)
		name := names[0]
		if len(names) > 1 && !im.oneOAuthServer(names) {
			why = append(why, strings.Join(names, " and ")+" together (a tool sends one credential)")
			continue
		}
		s := im.scheme(name)
		rank := schemeRank(s)
		switch {
		case rank > 0:
		case s == nil:
			why = append(why, name+" (not defined in components.securitySchemes)")
		case s.Type == "apiKey":
			why = append(why, fmt.Sprintf("%s (an API key in the %s parameter %q: a tool sends its credential in a header)", name, s.In, s.Name))
		default:
			why = append(why, fmt.Sprintf("%s (%s %s)", name, s.Type, s.In+s.Scheme))
		}
		if rank > bestRank {
			best, bestRank, scopes = name, rank, nil
			for _, n := range names {
				for _, sc := range req[n] {
					if !slices.Contains(scopes, sc) {
						scopes = append(scopes, sc)
					}
				}
			}
		}
	}
	if im.opts.AuthScheme != "" {
		// The operator's choice, for every operation that needs a
		// credential: counted where the document does not offer it.
		best, bestRank = im.opts.AuthScheme, schemeRank(im.scheme(im.opts.AuthScheme))
		var ok bool
		if scopes, ok = im.offered(reqs, best); !ok {
			im.unpromised++
		}
	}
	if best == "" {
		hint := ""
		if can := im.sendable(); len(can) > 0 {
			hint = fmt.Sprintf(" (if the API takes %s there too, --auth-scheme sends it)", strings.Join(can, " or "))
		}
		return skipf(SkipCredential, "its security cannot be sent by a tool: %s%s", strings.Join(why, "; "), hint)
	}
	return im.authorize(best, bestRank, scopes, t, spec)
}

// authorize makes scheme name, of rank rank, the tool's authorization.
func (im *importer) authorize(best string, rank int, scopes []string, t *tool, spec *httpspec.Spec) error {
	s := im.doc.Components.SecuritySchemes[best].Value
	secret := &synth.SecretRef{EnvName: im.opts.EnvName, Name: envName(best)}
	switch rank {
	case 4:
		spec.Authorization = &httpspec.Authorization{Kind: httpspec.AuthBearer, SecretRef: secret}
	case 3:
		spec.Authorization = &httpspec.Authorization{Kind: httpspec.AuthHeader, HeaderName: s.Name, SecretRef: secret}
	case 2:
		conn := connName(best)
		if scopes == nil {
			scopes = []string{}
		}
		t.NeedsSpec = &synth.NeedsSpec{Connections: map[string]synth.ConnectionNeed{conn: {App: im.opts.Prefix, Permissions: scopes, As: synth.AsPerson}}}
		spec.Authorization = &httpspec.Authorization{Kind: httpspec.AuthConnection, Connection: conn}
	case 1:
		// The secret holds the whole header value: "Basic " and the
		// base64 of user:password.
		spec.Authorization = &httpspec.Authorization{Kind: httpspec.AuthHeader, HeaderName: "Authorization", SecretRef: secret}
		if !im.noted[best] {
			im.noted[best] = true
			im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("security scheme %s is HTTP basic auth: its tools send secret %s/%s as the whole Authorization value: store \"Basic \" followed by the base64 of user:password", best, im.opts.EnvName, envName(best)))
		}
	}
	return nil
}

// offered says whether reqs offer scheme name alone (or with OAuth 2
// schemes of its server), and its scopes there.
func (im *importer) offered(reqs openapi3.SecurityRequirements, name string) ([]string, bool) {
	for _, req := range reqs {
		if _, ok := req[name]; ok && (len(req) == 1 || im.oneOAuthServer(sortedKeys(req))) {
			var scopes []string
			for _, n := range sortedKeys(req) {
				scopes = append(scopes, req[n]...)
			}
			return scopes, true
		}
	}
	return nil, false
}

// oneOAuthServer says whether schemes, required together, are OAuth 2
// schemes of one authorization server: one access token satisfies them
// all (Google's Oauth2, an implicit flow, and Oauth2c, an authorization
// code flow, both at accounts.google.com).
func (im *importer) oneOAuthServer(names []string) bool {
	hosts := map[string]bool{}
	for _, n := range names {
		s := im.scheme(n)
		if s == nil || s.Type != "oauth2" || s.Flows == nil {
			return false
		}
		for _, f := range []*openapi3.OAuthFlow{s.Flows.Implicit, s.Flows.Password, s.Flows.ClientCredentials, s.Flows.AuthorizationCode} {
			if f == nil {
				continue
			}
			for _, u := range []string{f.AuthorizationURL, f.TokenURL} {
				if pu, err := url.Parse(u); err == nil && pu.Host != "" {
					hosts[strings.ToLower(pu.Host)] = true
				}
			}
		}
	}
	return len(hosts) == 1
}

// sendable are the document's security schemes a tool can send alone.
func (im *importer) sendable() []string {
	var can []string
	if im.doc.Components != nil {
		for _, n := range sortedKeys(im.doc.Components.SecuritySchemes) {
			if schemeRank(im.scheme(n)) > 0 {
				can = append(can, n)
			}
		}
	}
	return can
}

// checkAuthScheme refuses an Options.AuthScheme the document does not
// define or a tool cannot send, naming the ones it can.
func (im *importer) checkAuthScheme() error {
	name := im.opts.AuthScheme
	if name == "" {
		return nil
	}
	if schemeRank(im.scheme(name)) > 0 {
		return nil
	}
	can := im.sendable()
	what := "is not a security scheme of the document"
	if im.scheme(name) != nil {
		what = "is a scheme a tool cannot send (a tool sends one credential in a header)"
	}
	return fmt.Errorf("--auth-scheme %s %s: name one of components.securitySchemes a tool can send: %s", name, what, strings.Join(can, ", "))
}

// scheme is the security scheme the document names name, nil for none.
func (im *importer) scheme(name string) *openapi3.SecurityScheme {
	if im.doc.Components == nil {
		return nil
	}
	if ref := im.doc.Components.SecuritySchemes[name]; ref != nil {
		return ref.Value
	}
	return nil
}

// schemeRank ranks a scheme a tool can send on its own, in a header,
// simplest to hold first: a bearer token 4, an API key header 3, an OAuth
// connection 2, basic auth 1; 0 for one it cannot send (a key in the
// query or a cookie, another kind, none).
func schemeRank(s *openapi3.SecurityScheme) int {
	switch {
	case s == nil:
		return 0
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		return 4
	case s.Type == "apiKey" && s.In == "header":
		return 3
	case s.Type == "oauth2" || s.Type == "openIdConnect":
		return 2
	case s.Type == "http" && strings.EqualFold(s.Scheme, "basic"):
		return 1
	}
	return 0
}

// headerCredential says the operation's security has an alternative a
// tool sends in a header: one scheme that schemeRank ranks.
func (im *importer) headerCredential(op *openapi3.Operation) bool {
	reqs := im.doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if im.opts.AuthScheme != "" && len(reqs) > 0 {
		return true // the operator's scheme, sent in a header
	}
	for _, req := range reqs {
		names := sortedKeys(req)
		if len(names) == 0 || len(names) > 1 && !im.oneOAuthServer(names) {
			continue
		}
		if schemeRank(im.scheme(names[0])) > 0 {
			return true
		}
	}
	return false
}
