package openapi

import (
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The checker's input: a value for every parameter and body member the
// operation declares, made from its own schemas (sample.go), given to the
// tool under the member names the importer chose.

// parameterInputs gives each of the operation's parameters a value, as
// the member of the input that carries it; a required parameter with no
// member is flagged, unless it is a credential or the idempotency key.
func (c *checking) parameterInputs() {
	c.params = map[string]*openapi3.Parameter{}
	c.order = mergeParams(c.params, c.item, c.op) // as the importer reads them
	c.input, c.values = map[string]any{}, map[string]any{}
	credentials := &importer{doc: c.doc, opts: c.opts} // what counts as a credential parameter is the importer's rule
	for _, k := range c.order {
		p := c.params[k]
		member := c.memberOf(p)
		if member == "" {
			idempotency := p.In == "header" && strings.EqualFold(p.Name, "Idempotency-Key") // the kernel's key fills it
			if p.Required && !idempotency && !credentials.isCredential(p) {
				c.flag(classOfPlace(p.In), "required %s parameter %q is not an input of the tool", p.In, p.Name)
			}
			continue
		}
		v := sample(schemaOf(p.Schema), 0)
		if obj, ok := v.(map[string]any); ok && p.Style == "deepObject" {
			// A deepObject is a member per key: name[key].
			for dk, dv := range obj {
				if c.isInput(p.Name + "[" + dk + "]") {
					c.input[p.Name+"["+dk+"]"] = dv
				}
			}
			c.values[k] = v
			continue
		}
		c.input[member], c.values[k] = v, v
	}
}

// memberOf is the input member that carries p, "" when none does.
func (c *checking) memberOf(p *openapi3.Parameter) string {
	for _, cand := range []string{p.Name, headerVar(p.Name), templateName(p.Name)} {
		if c.isInput(cand) {
			return cand
		}
	}
	return ""
}

// bodyInputs makes the operation's body, flags the credentials among its
// members the input asks for, and gives its members (or the whole body)
// to the input.
func (c *checking) bodyInputs() {
	c.credMembers = map[string]bool{}
	rb := c.op.RequestBody
	if rb == nil || rb.Value == nil || len(rb.Value.Content) == 0 {
		return
	}
	c.bodyType = pickBodyType(rb.Value.Content)
	mt := rb.Value.Content[c.bodyType]
	c.bodyVal = sampleBody(c.bodyType, mt)
	c.credentialMembers(mt)
	if c.bodyIsOneInput() {
		c.input[strings.Trim(c.spec.RequestBody.Template, "{}")] = c.bodyVal
		return
	}
	obj, ok := c.bodyVal.(map[string]any)
	if !ok {
		return
	}
	for k, v := range obj {
		if c.isInput(k) {
			c.input[k] = v
		} else if !c.credMembers[k] && (bodyRequired(mt, k) || !strings.ContainsAny(k, ".{}&=")) {
			// An optional member whose name no placeholder can
			// spell (Twilio's Parameter1.Name) is left out with a
			// warning: the tool cannot set it, and sends the rest.
			c.flag(ClassBody, "body member %q is not an input of the tool", k)
		}
	}
}

// pickBodyType is the media type the checker sends: the first JSON one,
// or else the last in order.
func pickBodyType(content openapi3.Content) string {
	bodyType := ""
	for _, ct := range sortedKeys(content) {
		bodyType = ct
		if strings.Contains(ct, "json") {
			break
		}
	}
	return bodyType
}

// sampleBody is a body of mt, of media type bodyType.
func sampleBody(bodyType string, mt *openapi3.MediaType) any {
	if base, _, _ := strings.Cut(bodyType, ";"); strings.TrimSpace(base) == "application/json-patch+json" {
		// The media type says what the body is: RFC 6902's list.
		return []any{map[string]any{"op": "add", "path": "/a", "value": "v"}}
	}
	if schemaOf(mt.Schema) == nil && strings.Contains(bodyType, "json") {
		return map[string]any{} // any JSON: the smallest object
	}
	return sample(schemaOf(mt.Schema), 0)
}

// credentialMembers marks the body's members that carry a credential, by
// the importer's rule, and flags those the input asks the model for.
func (c *checking) credentialMembers(mt *openapi3.MediaType) {
	obj, ok := c.bodyVal.(map[string]any)
	if !ok {
		return
	}
	header := (&importer{doc: c.doc, opts: c.opts}).headerCredential(c.op)
	members := bodyMembers(mt)
	for k := range obj {
		if schema := members.of(k); bodyCredential(k, schema) {
			c.credMembers[k] = true
			if c.isInput(k) && (!header || sameAsHeader(k, schema)) {
				c.flag(ClassCredentials, "the input asks the model for the credential %q, which the API takes in the body", k)
			}
		}
	}
}

// bodyIsOneInput says the manifest's body is a text template of one
// input member, not a form.
func (c *checking) bodyIsOneInput() bool {
	rb := c.spec.RequestBody
	return rb != nil && rb.Kind == "text" && strings.HasPrefix(rb.Template, "{") && !strings.Contains(rb.Template, "=")
}

// requiredInputs flags the members the tool requires that the operation
// marks read-only (and does not require itself), the URL's own aside, and
// gives every required member a value.
func (c *checking) requiredInputs() {
	for _, r := range c.schema.Required {
		if rb := c.op.RequestBody; rb != nil && rb.Value != nil && !strings.Contains(c.spec.URLTemplate, r) {
			for _, mt := range rb.Value.Content {
				if s := schemaOf(mt.Schema); s != nil && readOnlyMember(s, r, 0) {
					c.flag(ClassRequired, "the tool requires %q, which the API marks read-only", r)
				}
			}
		}
		if _, ok := c.input[r]; !ok {
			c.input[r] = "x"
		}
	}
}

// optionalBody is the member the whole body is ("" when the body is not
// one member) and whether the operation leaves its body optional; it
// flags a tool that requires a body the operation leaves optional.
func (c *checking) optionalBody() (whole string, bodyOptional bool) {
	if rb := c.spec.RequestBody; rb != nil && rb.Kind == "text" && strings.HasPrefix(rb.Template, "{") && strings.HasSuffix(rb.Template, "}") && strings.Count(rb.Template, "{") == 1 {
		whole = strings.Trim(rb.Template, "{}")
	}
	bodyOptional = c.op.RequestBody == nil || c.op.RequestBody.Value == nil || !c.op.RequestBody.Value.Required
	if whole != "" && bodyOptional && slices.Contains(c.schema.Required, whole) {
		c.flag(ClassOptional, "the tool requires %q, the request body, which the operation leaves optional", whole)
	}
	return whole, bodyOptional
}
