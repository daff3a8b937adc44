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
// headers headers filled from the input.
func (im *importer) parameters(method string, op *openapi3.Operation, item *openapi3.PathItem, x *inputs) error {
	in, props, params, path := x.in, x.props, x.params, x.path
	var required, query []string
	var headers []httpspec.Header
	defer func() { x.required, x.query, x.headers, x.path = required, query, headers, path }()
	order := mergeParams(params, item, op)
	for _, key := range order {
		p := params[key]
		if p.In != "path" && im.isCredential(p) {
			im.warn(method, path, op, fmt.Sprintf("%s parameter %q left out: it carries a credential, which a tool takes from its authorization, never from the model's input", p.In, p.Name))
			continue
		}
		switch p.In {
		case "path", "query":
		case "header":
			if strings.EqualFold(p.Name, "Idempotency-Key") {
				// Filled with the kernel's idempotency key of the call,
				// stable across retries and re-runs.
				headers = append(headers, httpspec.Header{Name: "Idempotency-Key", Value: ""})
				continue
			}
			v := headerVar(p.Name)
			if _, clash := props[v]; clash {
				return skipf(SkipParameter, "header parameter %q: its input name %q is taken", p.Name, v)
			}
			headers = append(headers, httpspec.Header{Name: p.Name, Value: "{" + v + "}"})
			sch := in.inline(p.Schema, 0)
			if sch["type"] == nil && sch["$ref"] == nil {
				sch["type"] = "string"
			}
			sch["description"] = strings.TrimSpace(plainText(p.Description) + " (sent as the " + p.Name + " header)")
			if !p.Required {
				serverDefault(sch)
			}
			props[v] = sch
			if p.Required {
				// An optional one is left out when the input lacks it.
				required = append(required, v)
			}
			continue
		default:
			im.warn(method, path, op, fmt.Sprintf("%s parameter %q left out: only path, query and header parameters are filled from the input", p.In, p.Name))
			continue
		}
		// A name RFC 6570 cannot spell is written percent-encoded: sent so
		// (servers decode it), read from the input member of its name.
		v := templateName(p.Name)
		explode := p.Explode != nil && *p.Explode
		style := p.Style
		if p.In == "query" {
			if style == "" {
				style = "form"
			}
			if p.Explode == nil {
				explode = style == "form" // form style explodes by default
			}
			if clash := memberParams(p, params); style == "form" && explode && len(clash) > 0 && !p.Required {
				// Exploded, its members are query keys of their own: where
				// another parameter has one's name, both would be sent
				// (Cloudflare's egs-pagination.json beside page, per_page).
				im.warn(method, path, op, fmt.Sprintf("query parameter %q left out: its members %s are parameters of their own", p.Name, strings.Join(clash, ", ")))
				continue
			}
			if style == "deepObject" {
				vars, dropped, why := im.deepObject(p, in)
				if len(dropped) > 0 && why == "" {
					im.warn(method, path, op, fmt.Sprintf("query parameter %q: %s left out: a deepObject nested in a deepObject, or a list of objects, has no agreed spelling", p.Name, strings.Join(dropped, ", ")))
				}
				if why != "" {
					if p.Required {
						return skipf(SkipParameter, "required query parameter %q: %s", p.Name, why)
					}
					im.warn(method, path, op, fmt.Sprintf("query parameter %q left out: %s", p.Name, why))
					continue
				}
				for _, dv := range vars {
					if _, clash := props[dv.name]; clash {
						return skipf(SkipParameter, "query parameter %q: its input name %q is taken", p.Name, dv.name)
					}
					props[dv.name] = dv.schema
					if dv.required {
						required = append(required, dv.name)
					}
					query = append(query, dv.template)
				}
				continue
			}
			if (style == "pipeDelimited" || style == "spaceDelimited") && !explode && (isArray(p.Schema) || p.Schema == nil || p.Schema.Value == nil || len(p.Schema.Value.Type.Slice()) == 0) {
				// RFC 6570 has no join by | or space; a string of the
				// values so joined is sent as it is written (the | or
				// space percent-encoded, which the server decodes).
				sep, word := "|", "|"
				if style == "spaceDelimited" {
					sep, word = " ", "spaces"
				}
				sch := map[string]any{"type": "string"}
				if isArray(p.Schema) {
					if items := in.inline(p.Schema.Value.Items, 0); items != nil {
						if d, ok := items["description"].(string); ok && d != "" {
							sch["description"] = d
						}
					}
				}
				d := strings.TrimSpace(plainText(p.Description) + " (several values joined by " + word + ", e.g. a" + sep + "b)")
				if cur, ok := sch["description"].(string); ok {
					d = strings.TrimSpace(d + " " + cur)
				}
				sch["description"] = d
				props[p.Name] = sch
				if p.Required {
					required = append(required, p.Name)
				}
				query = append(query, v)
				continue
			}
			if style != "form" {
				why := fmt.Sprintf("its style %s has no RFC 6570 form", style)
				if p.Required {
					return skipf(SkipParameter, "required query parameter %q: %s", p.Name, why)
				}
				im.warn(method, path, op, fmt.Sprintf("query parameter %q left out: %s (form style, the default, does)", p.Name, why))
				continue
			}
		}
		if p.In == "path" {
			op := ""
			switch style {
			case "", "simple":
			case "label":
				op = "."
			case "matrix":
				op = ";"
			default:
				return skipf(SkipParameter, "path parameter %q: style %s has no RFC 6570 form", p.Name, style)
			}
			star := ""
			if explode {
				star = "*"
			}
			if !strings.Contains(path, "{"+p.Name+"}") {
				return skipf(SkipParameter, "path parameter %q does not appear in the path", p.Name)
			}
			path = strings.ReplaceAll(path, "{"+p.Name+"}", "{"+op+v+star+"}")
		}
		sch := in.inline(p.Schema, 0)
		if p.Description != "" {
			if _, ok := sch["description"]; !ok {
				sch["description"] = plainText(p.Description)
			}
		}
		if !p.Required && p.In == "query" {
			serverDefault(sch)
		}
		props[p.Name] = sch
		if p.Required || p.In == "path" {
			required = append(required, p.Name)
		}
		if p.In == "query" {
			if (isArray(p.Schema) || isObject(p.Schema) || mayBeArray(p.Schema, 0)) && explode {
				query = append(query, v+"*")
			} else {
				query = append(query, v)
			}
		}
	}
	return nil
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

// memberParams are the members of an object parameter that other query
// parameters of the operation are named like.
func memberParams(p *openapi3.Parameter, params map[string]*openapi3.Parameter) []string {
	if p.Schema == nil || p.Schema.Value == nil {
		return nil
	}
	var clash []string
	for _, k := range sortedKeys(p.Schema.Value.Properties) {
		if q := params["query:"+k]; q != nil && q != p {
			clash = append(clash, k)
		}
	}
	return clash
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

// A deepVar is one query variable a deepObject parameter becomes.
type deepVar struct {
	name     string // the input member and wire name, e.g. created[gte]
	template string // its RFC 6570 variable, percent-encoded
	schema   map[string]any
	required bool
}

// deepObject spells a deepObject query parameter in RFC 6570 as far as it
// can: each declared member of the object as its own variable named
// name[member] (Stripe's created[gte]=…), an array as name[] exploded
// (expand[]=a&expand[]=b), and a scalar alternative of an anyOf as the
// plain name. An object with no declared members has no variable to name,
// and why says so.
func (im *importer) deepObject(p *openapi3.Parameter, in *converter) (vars []deepVar, dropped []string, why string) {
	if p.Schema == nil || p.Schema.Value == nil {
		return nil, nil, "style deepObject without a schema"
	}
	desc := plainText(p.Description)
	branches := openapi3.SchemaRefs{p.Schema}
	if v := p.Schema.Value; len(v.AnyOf)+len(v.OneOf) > 0 {
		branches = append(append(openapi3.SchemaRefs{}, v.AnyOf...), v.OneOf...)
	}
	var scalars openapi3.SchemaRefs
	for _, b := range branches {
		if b == nil || b.Value == nil {
			continue
		}
		switch {
		case isArray(b):
			if b.Value.Items == nil || !isScalar(b.Value.Items) {
				dropped = append(dropped, p.Name+"[]") // a list of objects has no agreed spelling
				continue
			}
			sch := in.inline(b, 0)
			sch["description"] = strings.TrimSpace(desc + " (sent as " + p.Name + "[]=… for each item)")
			vars = append(vars, deepVar{name: p.Name + "[]", template: templateName(p.Name+"[]") + "*", schema: sch, required: p.Required})
		case isObject(b) || len(b.Value.Properties) > 0:
			if len(b.Value.Properties) == 0 {
				continue
			}
			req := map[string]bool{}
			for _, r := range b.Value.Required {
				req[r] = true
			}
			for _, m := range sortedKeys(b.Value.Properties) {
				mv := b.Value.Properties[m]
				if !isScalar(mv) {
					dropped = append(dropped, p.Name+"["+m+"]") // nested: no agreed spelling
					continue
				}
				sch := in.inline(mv, 0)
				d, _ := sch["description"].(string)
				sch["description"] = strings.TrimSpace(strings.TrimSpace(d+" "+desc) + " (sent as " + p.Name + "[" + m + "])")
				vars = append(vars, deepVar{name: p.Name + "[" + m + "]", template: templateName(p.Name + "[" + m + "]"), schema: sch, required: p.Required && req[m] && len(branches) == 1})
			}
		default:
			scalars = append(scalars, b)
		}
	}
	if len(scalars) > 0 {
		// The scalar alternatives (an integer, or an enum of words) are
		// one plain variable.
		sch := map[string]any{"anyOf": in.inlineAll(scalars, 0)}
		if len(scalars) == 1 {
			sch = in.inline(scalars[0], 0)
		}
		if desc != "" {
			sch["description"] = desc
		}
		vars = append(vars, deepVar{name: p.Name, template: templateName(p.Name), schema: sch, required: p.Required && len(vars) == 0})
	}
	if len(vars) == 0 && len(dropped) > 0 {
		return nil, nil, strings.Join(dropped, ", ") + " has no agreed deepObject spelling (a list of objects, or an object nested in one)"
	}
	if len(vars) == 0 {
		return nil, nil, "its style deepObject names no members, so RFC 6570 has no variable for them"
	}
	return vars, dropped, ""
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
