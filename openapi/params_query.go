package openapi

import (
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Query parameters: each as RFC 6570 can spell it in its style (form,
// deepObject, a list joined by | or a space), or left out with a warning
// (skipped where it is required) where it cannot.

// queryParameter makes query parameter p input members and variables of
// the URL's query, as its style says.
func (im *importer) queryParameter(method string, op *openapi3.Operation, p *openapi3.Parameter, x *inputs) error {
	style := p.Style
	if style == "" {
		style = "form"
	}
	explode := p.Explode != nil && *p.Explode
	if p.Explode == nil {
		explode = style == "form" // form style explodes by default
	}
	if clash := memberParams(p, x.params); style == "form" && explode && len(clash) > 0 && !p.Required {
		// Exploded, its members are query keys of their own: where
		// another parameter has one's name, both would be sent
		// (Cloudflare's egs-pagination.json beside page, per_page).
		im.warn(method, x.path, op, fmt.Sprintf("query parameter %q left out: its members %s are parameters of their own", p.Name, strings.Join(clash, ", ")))
		return nil
	}
	if style == "deepObject" {
		return im.deepObjectParameter(method, op, p, x)
	}
	if (style == "pipeDelimited" || style == "spaceDelimited") && !explode && (isArray(p.Schema) || p.Schema == nil || p.Schema.Value == nil || len(p.Schema.Value.Type.Slice()) == 0) {
		joinedParameter(p, x, style)
		return nil
	}
	if style != "form" {
		why := fmt.Sprintf("its style %s has no RFC 6570 form", style)
		if p.Required {
			return skipf(SkipParameter, "required query parameter %q: %s", p.Name, why)
		}
		im.warn(method, x.path, op, fmt.Sprintf("query parameter %q left out: %s (form style, the default, does)", p.Name, why))
		return nil
	}
	addParameter(p, x, explode)
	return nil
}

// deepObjectParameter makes deepObject query parameter p a member and a
// variable per key it declares (deepObject says how), warning of the keys
// it cannot spell.
func (im *importer) deepObjectParameter(method string, op *openapi3.Operation, p *openapi3.Parameter, x *inputs) error {
	vars, dropped, why := im.deepObject(p, x.in)
	if len(dropped) > 0 && why == "" {
		im.warn(method, x.path, op, fmt.Sprintf("query parameter %q: %s left out: a deepObject nested in a deepObject, or a list of objects, has no agreed spelling", p.Name, strings.Join(dropped, ", ")))
	}
	if why != "" {
		if p.Required {
			return skipf(SkipParameter, "required query parameter %q: %s", p.Name, why)
		}
		im.warn(method, x.path, op, fmt.Sprintf("query parameter %q left out: %s", p.Name, why))
		return nil
	}
	for _, dv := range vars {
		if _, clash := x.props[dv.name]; clash {
			return skipf(SkipParameter, "query parameter %q: its input name %q is taken", p.Name, dv.name)
		}
		x.props[dv.name] = dv.schema
		if dv.required {
			x.required = append(x.required, dv.name)
		}
		x.query = append(x.query, dv.template)
	}
	return nil
}

// joinedParameter makes a pipeDelimited or spaceDelimited list p one
// string member. RFC 6570 has no join by | or space; a string of the
// values so joined is sent as it is written (the | or space
// percent-encoded, which the server decodes).
func joinedParameter(p *openapi3.Parameter, x *inputs, style string) {
	sep, word := "|", "|"
	if style == "spaceDelimited" {
		sep, word = " ", "spaces"
	}
	sch := map[string]any{"type": "string"}
	if isArray(p.Schema) {
		if items := x.in.inline(p.Schema.Value.Items, 0); items != nil {
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
	x.props[p.Name] = sch
	if p.Required {
		x.required = append(x.required, p.Name)
	}
	x.query = append(x.query, templateName(p.Name))
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
