package openapi

import (
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// Security schemes: the simplest to hold becomes the tool's authorization.

// security makes the simplest requirement the format can send the tool's
// authorization. A requirement is the schemes that must all be sent
// together; the format sends one credential, in a header (a bearer, a
// named header, a connection's token, basic auth). When no alternative
// can be sent — two credentials at once, an API key in the query or a
// cookie, a scheme of no kind the format knows — the operation is skipped:
// its tool could never be called.
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
	var bestReq openapi3.SecurityRequirement
	for _, req := range reqs {
		if len(req) == 0 {
			return nil // anonymous access is one of the options
		}
		names := sortedKeys(req)
		if len(names) > 1 {
			why = append(why, strings.Join(names, " and ")+" together (a tool sends one credential)")
			continue
		}
		name := names[0]
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
			best, bestRank, bestReq = name, rank, req
		}
	}
	if best == "" {
		return skipf(SkipCredential, "its security cannot be sent by a tool: %s", strings.Join(why, "; "))
	}
	s := im.doc.Components.SecuritySchemes[best].Value
	secret := &synth.SecretRef{EnvName: im.opts.EnvName, Name: envName(best)}
	switch bestRank {
	case 4:
		spec.Authorization = &httpspec.Authorization{Kind: httpspec.AuthBearer, SecretRef: secret}
	case 3:
		spec.Authorization = &httpspec.Authorization{Kind: httpspec.AuthHeader, HeaderName: s.Name, SecretRef: secret}
	case 2:
		conn := connName(best)
		scopes := bestReq[best]
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
	for _, req := range reqs {
		if len(req) != 1 {
			continue
		}
		for name := range req {
			if schemeRank(im.scheme(name)) > 0 {
				return true
			}
		}
	}
	return false
}
