package openapi

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/httptools/httptools/httpspec"
)

// Parameters: path and query into the URL template, headers into the
// manifest's headers, each an input member; credentials never.

// inputs are what an operation's parameters and body make of the tool's
// input, URL and headers, as they are built.
type inputs struct {
	in       *converter
	props    map[string]any // the input's members
	required []string
	query    []string // the URL template's query variables
	headers  []httpspec.Header
	params   map[string]*openapi3.Parameter // by "in:name"
	path     string                         // the path, its variables in RFC 6570 form
}

// parameters makes the path's and the operation's parameters input
// members: path and query ones variables of the URL template, required
// headers headers filled from the input. A credential, and a parameter in
// a cookie, is left out with a warning.
func (im *importer) parameters(method string, op *openapi3.Operation, item *openapi3.PathItem, x *inputs) error {
	for _, key := range mergeParams(x.params, item, op) {
		p := x.params[key]
		if p.In != "path" && im.isCredential(p) {
			im.warn(method, x.path, op, fmt.Sprintf("%s parameter %q left out: it carries a credential, which a tool takes from its authorization, never from the model's input", p.In, p.Name))
			continue
		}
		var err error
		switch p.In {
		case "path":
			err = pathParameter(p, x)
		case "query":
			err = im.queryParameter(method, op, p, x)
		case "header":
			err = headerParameter(p, x)
		default:
			im.warn(method, x.path, op, fmt.Sprintf("%s parameter %q left out: only path, query and header parameters are filled from the input", p.In, p.Name))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// headerParameter makes header parameter p a header filled from an input
// member of its own (x_request_id for X-Request-Id), required if p is;
// Idempotency-Key is filled with the kernel's idempotency key of the
// call, stable across retries and re-runs.
func headerParameter(p *openapi3.Parameter, x *inputs) error {
	if strings.EqualFold(p.Name, "Idempotency-Key") {
		x.headers = append(x.headers, httpspec.Header{Name: "Idempotency-Key", Value: ""})
		return nil
	}
	v := headerVar(p.Name)
	if _, clash := x.props[v]; clash {
		return skipf(SkipParameter, "header parameter %q: its input name %q is taken", p.Name, v)
	}
	x.headers = append(x.headers, httpspec.Header{Name: p.Name, Value: "{" + v + "}"})
	sch := x.in.inline(p.Schema, 0)
	if sch["type"] == nil && sch["$ref"] == nil {
		sch["type"] = "string"
	}
	sch["description"] = strings.TrimSpace(plainText(p.Description) + " (sent as the " + p.Name + " header)")
	if !p.Required {
		serverDefault(sch)
	}
	x.props[v] = sch
	if p.Required {
		// An optional one is left out when the input lacks it.
		x.required = append(x.required, v)
	}
	return nil
}

// pathParameter writes path parameter p into the path as an RFC 6570
// variable of its style (simple, label or matrix), a required member.
func pathParameter(p *openapi3.Parameter, x *inputs) error {
	op := ""
	switch p.Style {
	case "", "simple":
	case "label":
		op = "."
	case "matrix":
		op = ";"
	default:
		return skipf(SkipParameter, "path parameter %q: style %s has no RFC 6570 form", p.Name, p.Style)
	}
	explode := p.Explode != nil && *p.Explode
	star := ""
	if explode {
		star = "*"
	}
	if !strings.Contains(x.path, "{"+p.Name+"}") {
		return skipf(SkipParameter, "path parameter %q does not appear in the path", p.Name)
	}
	x.path = strings.ReplaceAll(x.path, "{"+p.Name+"}", "{"+op+templateName(p.Name)+star+"}")
	addParameter(p, x, explode)
	return nil
}

// addParameter makes path or query parameter p an input member of its
// name, with its schema and description; a query one a variable of the
// URL's query too, exploded where a list or an object is.
func addParameter(p *openapi3.Parameter, x *inputs, explode bool) {
	// A name RFC 6570 cannot spell is written percent-encoded: sent so
	// (servers decode it), read from the input member of its name.
	v := templateName(p.Name)
	sch := x.in.inline(p.Schema, 0)
	if p.Description != "" {
		if _, ok := sch["description"]; !ok {
			sch["description"] = plainText(p.Description)
		}
	}
	if !p.Required && p.In == "query" {
		serverDefault(sch)
	}
	x.props[p.Name] = sch
	if p.Required || p.In == "path" {
		x.required = append(x.required, p.Name)
	}
	if p.In == "query" {
		if (isArray(p.Schema) || isObject(p.Schema) || mayBeArray(p.Schema, 0)) && explode {
			x.query = append(x.query, v+"*")
		} else {
			x.query = append(x.query, v)
		}
	}
}

// serverDefault moves an optional parameter's default into its
// description: the tool fills a schema's defaults into the input, so a
// default would be sent though the caller never gave it (Cloudflare's
// page=1 on every list), where the API applies it itself when the
// parameter is left out.
func serverDefault(sch map[string]any) {
	d, ok := sch["default"]
	if !ok {
		return
	}
	delete(sch, "default")
	note := "Default (the API's, when left out): " + jsonText(d) + "."
	if desc, _ := sch["description"].(string); desc != "" {
		note = strings.TrimRight(desc, " ") + " " + note
	}
	sch["description"] = note
}

// mergeParams puts the parameters of a path item and of its operation in
// params, keyed "in:name" (the operation's win), and returns the keys in
// the order first seen.
func mergeParams(params map[string]*openapi3.Parameter, item *openapi3.PathItem, op *openapi3.Operation) []string {
	var order []string
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				continue
			}
			key := pr.Value.In + ":" + pr.Value.Name
			if _, seen := params[key]; !seen {
				order = append(order, key)
			}
			params[key] = pr.Value
		}
	}
	return order
}

// credentialNames are parameter names that carry a credential.
var credentialNames = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "api-key": true, "access_token": true, "oauth_token": true,
	"token": true, "auth_token": true, "client_secret": true, "password": true, "authorization": true,
	"x-api-key": true,
}

// isCredential reports whether a parameter carries a credential: the
// document's own apiKey schemes name it, or its name is one APIs use.
func (im *importer) isCredential(p *openapi3.Parameter) bool {
	if credentialNames[strings.ToLower(p.Name)] {
		return true
	}
	if im.doc.Components != nil {
		for _, ref := range im.doc.Components.SecuritySchemes {
			if ref != nil && ref.Value != nil && ref.Value.Type == "apiKey" && ref.Value.In == p.In && strings.EqualFold(ref.Value.Name, p.Name) {
				return true
			}
		}
	}
	return false
}

// headerVar is the input name of a header parameter: X-Request-Id →
// x_request_id.
func headerVar(name string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "_"), "_")
}

// escapeLiterals percent-encodes the characters of a path, outside its
// {expressions}, that RFC 6570 does not allow in a literal.
func escapeLiterals(path string) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c == '{':
			depth++
		case c == '}' && depth > 0:
			depth--
		case depth == 0 && (c <= ' ' || c >= 0x7f || strings.IndexByte("\"'<>\\^`|", c) >= 0):
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		case depth == 0 && c == '%' && !(i+2 < len(path) && isHex(path[i+1]) && isHex(path[i+2])):
			b.WriteString("%25")
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// templateName spells a parameter's name as an RFC 6570 variable: letters,
// digits and _ as they are, anything else percent-encoded (max-keys →
// max%2Dkeys, $filter → %24filter, assignee.any → assignee%2Eany).
func templateName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// isScalar: a schema whose every value is a string, number, boolean or
// null, which one RFC 6570 variable spells as one value.
func isScalar(ref *openapi3.SchemaRef) bool {
	if ref == nil || ref.Value == nil {
		return false
	}
	v := ref.Value
	if isObject(ref) || isArray(ref) || len(v.Properties) > 0 || v.Items != nil || len(v.AllOf) > 0 {
		return false
	}
	for _, b := range append(append(openapi3.SchemaRefs{}, v.AnyOf...), v.OneOf...) {
		if !isScalar(b) {
			return false
		}
	}
	return true
}

func isArray(ref *openapi3.SchemaRef) bool {
	return ref != nil && ref.Value != nil && ref.Value.Type != nil && ref.Value.Type.Is("array")
}

// mayBeArray says whether one of a schema's alternatives (oneOf, anyOf,
// through allOf) is an array: Elasticsearch's stats, a string or a list
// of them. Exploded, a list is sent as the key repeated and a string as
// one pair, as the form style says for each.
func mayBeArray(ref *openapi3.SchemaRef, depth int) bool {
	if ref == nil || ref.Value == nil || depth > maxDepth {
		return false
	}
	for _, alts := range []openapi3.SchemaRefs{ref.Value.OneOf, ref.Value.AnyOf, ref.Value.AllOf} {
		for _, a := range alts {
			if isArray(a) || mayBeArray(a, depth+1) {
				return true
			}
		}
	}
	return false
}

func isObject(ref *openapi3.SchemaRef) bool {
	return ref != nil && ref.Value != nil && ref.Value.Type != nil && ref.Value.Type.Is("object")
}
