package openapi

import (
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// credentialsMet says how the request meets none of the operation's
// security requirements, "" when it meets one (or needs none).
func credentialsMet(doc *openapi3.T, op *openapi3.Operation, w *wire, authScheme string) string {
	reqs := doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if len(reqs) == 0 {
		return ""
	}
	if authScheme != "" && !slices.ContainsFunc(reqs, func(r openapi3.SecurityRequirement) bool { return len(r) == 0 }) {
		// The operator's scheme (--auth-scheme), for every operation
		// that needs a credential.
		reqs = openapi3.SecurityRequirements{{authScheme: {}}}
	}
	var wanted []string
	for _, req := range reqs {
		if len(req) == 0 {
			return ""
		}
		met := true
		for name := range req {
			var s *openapi3.SecurityScheme
			if doc.Components != nil && doc.Components.SecuritySchemes[name] != nil {
				s = doc.Components.SecuritySchemes[name].Value
			}
			if s == nil {
				met = false
				continue
			}
			switch {
			case s.Type == "apiKey" && s.In == "header":
				if _, ok := w.header(s.Name); !ok {
					met = false
				}
			case s.Type == "apiKey":
				met = false // in the query or a cookie: a tool cannot send it
			default: // http, oauth2, openIdConnect: the Authorization header
				if _, ok := w.header("Authorization"); !ok {
					met = false
				}
			}
		}
		if met {
			return ""
		}
		wanted = append(wanted, strings.Join(sortedKeys(req), "+"))
	}
	return "sends none of the credentials the operation asks for (" + strings.Join(wanted, " or ") + ")"
}
