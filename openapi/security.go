package openapi

import (
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// Security schemes: the simplest to hold becomes the tool's authorization.

// security maps the first usable security requirement to auth.
func (im *importer) security(method, path string, op *openapi3.Operation, t *tool, spec *httpspec.Spec) {
	reqs := im.doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if len(reqs) == 0 {
		return
	}
	// The alternatives are ranked, simplest to hold first: a bearer
	// token, an API key header, an OAuth connection, then basic auth.
	var skipped []string
	best, bestRank := "", 0
	var bestReq openapi3.SecurityRequirement
	for _, req := range reqs {
		if len(req) == 0 {
			return // anonymous access is one of the options
		}
		for _, name := range sortedKeys(req) {
			if im.doc.Components == nil {
				break
			}
			ref := im.doc.Components.SecuritySchemes[name]
			if ref == nil || ref.Value == nil {
				continue
			}
			s := ref.Value
			rank := 0
			switch {
			case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
				rank = 4
			case s.Type == "apiKey" && s.In == "header":
				rank = 3
			case s.Type == "oauth2" || s.Type == "openIdConnect":
				rank = 2
			case s.Type == "http" && strings.EqualFold(s.Scheme, "basic"):
				rank = 1
			case s.Type == "apiKey" && s.In == "query":
				skipped = append(skipped, fmt.Sprintf("%s (an API key in the query parameter %q, which a tool cannot send from a secret)", name, s.Name))
			default:
				skipped = append(skipped, fmt.Sprintf("%s (%s %s)", name, s.Type, s.In+s.Scheme))
			}
			if rank > bestRank {
				best, bestRank, bestReq = name, rank, req
			}
		}
	}
	if best != "" {
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
		return
	}
	im.warn(method, path, op, "no supported security scheme ("+strings.Join(skipped, ", ")+"): the tool sends no credentials; add authorization by hand")
}
