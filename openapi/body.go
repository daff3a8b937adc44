package openapi

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	bodykind "github.com/httptools/httptools/body"
	"github.com/httptools/httptools/httpspec"
)

// Request bodies: JSON as json-input, forms as a text template.

// body makes a request body. A JSON object body whose members can be the
// tool input's (no header is filled from the input) is json-input: the
// input minus the URL's values. Any other JSON body — an array, a number,
// an object beside header inputs (json-input would send those again), one
// of several shapes, no schema at all — is one input member, body, sent
// whole by the template {body}. A form is a text template of its members.
// The media type is sent as the document names it (json-patch+json and
// the like). What a tool cannot send skips the operation.
func (im *importer) body(method string, op *openapi3.Operation, x *inputs, spec *httpspec.Spec) error {
	rb := op.RequestBody
	if rb == nil || rb.Value == nil || len(rb.Value.Content) == 0 {
		return nil
	}
	ct, mt := jsonContent(rb.Value.Content)
	if mt == nil {
		if fm := rb.Value.Content.Get(formType); fm != nil {
			return im.formBody(method, x.path, op, fm, x.in, x.props, x.params, &x.required, spec)
		}
		return skipf(SkipBody, "the request body is %s: %s", strings.Join(sortedKeys(rb.Value.Content), ", "), whyNotBody(rb.Value.Content))
	}
	if ct != "application/json" {
		spec.Headers = append(spec.Headers, httpspec.Header{Name: "Content-Type", Value: ct})
	}
	var sch *openapi3.Schema
	if mt.Schema != nil {
		sch = mt.Schema.Value
	}
	if sch != nil && sch.Type != nil && sch.Type.Is("string") {
		return skipf(SkipBody, "the JSON body is a string: a tool sends a JSON body from its input, which has no quoting for a bare string")
	}
	bprops, breq, object := map[string]any{}, []string(nil), false
	if sch != nil {
		object = x.in.objectMembers(sch, bprops, &breq, 0)
	}
	if object {
		if err := im.bodyCredentials(method, x.path, op, bprops, &breq); err != nil {
			return err
		}
	}
	if ct == "application/json-patch+json" {
		// RFC 6902: a list of operations, whatever the document says the
		// body is (Kubernetes names it an object).
		return im.wholeBody(method, x.path, op, mt, jsonPatch(), rb.Value.Required, x, spec)
	}
	if whole, ok := wholeSchema(x, sch, bprops, breq, object); ok {
		return im.wholeBody(method, x.path, op, mt, whole, rb.Value.Required, x, spec)
	}
	im.jsonInputBody(method, op, bprops, breq, x, spec)
	return nil
}

// wholeSchema says the body is sent whole, as one input member, and is
// that member's schema (nil for the body's own): a body that is no
// object, a free-form object (json-input would give the model nothing to
// fill), an object beside header inputs (json-input would send those
// again) or with a member of a parameter's name (json-input would send
// the parameter's value instead of the member), or one of several
// shapes.
func wholeSchema(x *inputs, sch *openapi3.Schema, bprops map[string]any, breq []string, object bool) (map[string]any, bool) {
	headerInputs := slices.ContainsFunc(x.headers, func(h httpspec.Header) bool { return strings.Contains(h.Value, "{") })
	clash := false
	for k := range bprops {
		if _, ok := x.props[k]; ok {
			clash = true
		}
	}
	freeForm := object && len(bprops) == 0
	alternatives := hasAlternatives(sch, 0)
	if object && !freeForm && !headerInputs && !clash && !alternatives {
		return nil, false
	}
	var whole map[string]any
	if object && !freeForm && !alternatives {
		// One object, its allOf merged: easier to fill than the parts.
		whole = map[string]any{"type": "object", "properties": bprops}
		if len(breq) > 0 {
			whole["required"] = breq
		}
		if sch.Description != "" {
			whole["description"] = sch.Description
		}
	}
	return whole, true
}

// jsonInputBody makes the body's members input members (a parameter's
// name wins, with a warning) and sends the input minus the URL's values
// as the body (json-input).
func (im *importer) jsonInputBody(method string, op *openapi3.Operation, bprops map[string]any, breq []string, x *inputs, spec *httpspec.Spec) {
	for _, k := range sortedKeys(bprops) {
		if _, clash := x.props[k]; clash {
			im.warn(method, x.path, op, fmt.Sprintf("body property %q has the name of a parameter: the parameter wins", k))
			continue
		}
		x.props[k] = bprops[k]
	}
	// The body's own required members are required whether or not
	// the body is: an API that takes no body at all is rare, one that
	// refuses a body without them is the rule.
	for _, r := range breq {
		if _, clash := x.params["path:"+r]; !clash && !slices.Contains(x.required, r) {
			x.required = append(x.required, r)
		}
	}
	spec.RequestBody = &httpspec.RequestBody{Kind: bodykind.JSONInput}
}

// bodyCredentialNames are body members that carry a credential: an API
// that takes its key or its client's secret in the body.
var bodyCredentialNames = map[string]bool{
	"api_key": true, "apikey": true, "api-key": true, "x-api-key": true, "api_secret": true, "apisecret": true,
	"client_secret": true, "clientsecret": true, "app_secret": true, "secret_key": true, "private_key": true,
	"access_token": true, "auth_token": true, "oauth_token": true, "api_token": true, "apitoken": true,
}

// authWords are what a member's description says of a credential:
// Slack's form member token is "Authentication token. Requires scope: …".
var authWords = regexp.MustCompile(`(?i)\b(auth[a-z]*|credentials?|bearer)\b`)

// bodyCredential says whether a body member carries the API's credential:
// its name is one credentials have, or it is a plain token its own
// description calls the authentication.
func bodyCredential(name string, schema any) bool {
	n := strings.ToLower(name)
	if bodyCredentialNames[n] {
		return true
	}
	if n != "token" {
		return false
	}
	return describesAuth(schema)
}

// describesAuth says whether a member's description calls it the
// authentication.
func describesAuth(schema any) bool {
	desc, _ := schema.(map[string]any)["description"].(string)
	return authWords.MatchString(desc)
}

// sameAsHeader says whether a body credential is the one the header
// sends: an access token its description calls the authentication, which
// an API taking a bearer or OAuth token takes in the body as an
// alternative (Slack's form member token beside its Authorization
// header). A key or a secret, or a token described as data, is data.
func sameAsHeader(name string, schema any) bool {
	switch strings.ToLower(name) {
	case "token", "access_token", "oauth_token", "auth_token", "api_token", "apitoken":
		return describesAuth(schema)
	}
	return false
}

// bodyCredentials keeps credentials out of the input: a tool takes its
// credential from its authorization, and the format sends it in a header
// only. Where the operation also takes a credential in a header, an
// access token in the body is that credential again and is left out (the
// header carries it), while a key or secret in the body is data (a key
// the call stores, DigitalOcean's genai_create_openai_api_key). With no
// header credential, a required one skips the operation and an optional
// one is left out.
func (im *importer) bodyCredentials(method, path string, op *openapi3.Operation, props map[string]any, req *[]string) error {
	header := im.headerCredential(op)
	for _, k := range sortedKeys(props) {
		if !bodyCredential(k, props[k]) || header && !sameAsHeader(k, props[k]) {
			continue
		}
		if !header && slices.Contains(*req, k) {
			return skipf(SkipCredential, "its body takes the credential %q, which a tool cannot send from a secret (only in a header)", k)
		}
		delete(props, k)
		*req = slices.DeleteFunc(slices.Clone(*req), func(r string) bool { return r == k })
		why := "it carries a credential, which a tool takes from its authorization, never from the model's input"
		if header {
			why = "it carries the credential the tool sends in a header"
		}
		im.warn(method, path, op, fmt.Sprintf("body member %q left out: %s", k, why))
	}
	return nil
}

// objectMembers gathers the members of an object schema into props and
// its required ones into req, through allOf at any depth (a base and its
// extensions, themselves extended), and says whether it is an object.
func (c *converter) objectMembers(s *openapi3.Schema, props map[string]any, req *[]string, depth int) bool {
	if s == nil || depth > maxDepth {
		return false
	}
	own := *s
	own.AllOf = nil
	conv := c.convert(&own, 0)
	object := conv["type"] == "object"
	if pp, ok := conv["properties"].(map[string]any); ok {
		object = true
		for k, v := range pp {
			props[k] = v
		}
	}
	if r, ok := conv["required"].([]string); ok {
		for _, k := range r {
			if !slices.Contains(*req, k) {
				*req = append(*req, k)
			}
		}
	}
	for _, part := range s.AllOf {
		if part != nil && c.objectMembers(part.Value, props, req, depth+1) {
			object = true
		}
	}
	if object {
		// A member required by one part and left out of the input (read
		// only) is not required of the input.
		kept := (*req)[:0]
		for _, k := range *req {
			if _, ok := props[k]; ok {
				kept = append(kept, k)
			}
		}
		*req = kept
	}
	return object
}

// hasAlternatives says whether s, or one of its allOf parts at any depth,
// is one of several shapes (oneOf, anyOf): members merged from the parts
// would lose the ones only an alternative declares and requires
// (Cloudflare's account_app_id or managed_app_id; issue 43, class 4), so
// the body is one member whose schema keeps them.
func hasAlternatives(s *openapi3.Schema, depth int) bool {
	if s == nil || depth > maxDepth {
		return false
	}
	if len(s.AnyOf) > 0 || len(s.OneOf) > 0 {
		return true
	}
	for _, part := range s.AllOf {
		if part != nil && hasAlternatives(part.Value, depth+1) {
			return true
		}
	}
	return false
}

// jsonPatch is the schema of a JSON Patch document (RFC 6902).
func jsonPatch() map[string]any {
	return map[string]any{
		"type":        "array",
		"description": "A JSON Patch (RFC 6902): the operations to apply, in order.",
		"items": map[string]any{
			"type":     "object",
			"required": []string{"op", "path"},
			"properties": map[string]any{
				"op":    map[string]any{"type": "string", "enum": []string{"add", "remove", "replace", "move", "copy", "test"}},
				"path":  map[string]any{"type": "string", "description": "A JSON Pointer to the member to change."},
				"value": map[string]any{"description": "The value to add, replace or test."},
				"from":  map[string]any{"type": "string", "description": "A JSON Pointer to the member to move or copy."},
			},
		},
	}
}

// wholeBody makes the JSON body one input member sent whole: {body}.
func (im *importer) wholeBody(method, path string, op *openapi3.Operation, mt *openapi3.MediaType, sch map[string]any, bodyRequired bool, x *inputs, spec *httpspec.Spec) error {
	name := "body"
	for _, alt := range []string{"body", "request_body", "requestBody"} {
		if _, clash := x.props[alt]; !clash {
			name = alt
			break
		}
		name = ""
	}
	if name == "" {
		return skipf(SkipParameter, "the JSON body needs an input member of its own, and body, request_body and requestBody are all parameters")
	}
	if sch == nil {
		sch = x.in.inline(mt.Schema, 0)
	}
	if len(sch) == 0 {
		sch = map[string]any{"type": "object"}
	}
	if sch["description"] == nil {
		sch["description"] = "The request body, sent as JSON."
	}
	x.props[name] = sch
	// Required only when the API requires the body: a template that is
	// one member the input leaves out sends no body (nor Content-Type).
	if bodyRequired {
		x.required = append(x.required, name)
	} else {
		sch["description"] = strings.TrimSuffix(sch["description"].(string), " ") + " Optional: leave it out to send no body."
	}
	hasCT := false
	for _, h := range spec.Headers {
		hasCT = hasCT || strings.EqualFold(h.Name, "Content-Type")
	}
	if !hasCT {
		spec.Headers = append(spec.Headers, httpspec.Header{Name: "Content-Type", Value: "application/json"})
	}
	spec.RequestBody = &httpspec.RequestBody{Kind: bodykind.Text, Template: "{" + name + "}"}
	return nil
}

const formType = "application/x-www-form-urlencoded"

// formBody makes a form body: each top-level member of the body's schema
// an input member and a key={name} pair of a text template, which the
// runtime encodes (arrays repeated or as key[], objects as key[member]).
func (im *importer) formBody(method, path string, op *openapi3.Operation, mt *openapi3.MediaType, in *converter, props map[string]any, params map[string]*openapi3.Parameter, required *[]string, spec *httpspec.Spec) error {
	body := in.resolved(mt.Schema)
	bprops, _ := body["properties"].(map[string]any)
	if len(bprops) == 0 {
		return nil // an empty form (Stripe's deletes): no body is sent
	}
	breq, _ := body["required"].([]string)
	if err := im.bodyCredentials(method, path, op, bprops, &breq); err != nil {
		return err
	}
	if len(bprops) == 0 {
		return nil // the credential was the whole form (Slack's users.deletePhoto): the header carries it
	}
	var pairs []string
	for _, k := range sortedKeys(bprops) {
		if _, clash := props[k]; clash {
			im.warn(method, path, op, fmt.Sprintf("form member %q has the name of a parameter: the parameter wins", k))
			continue
		}
		if strings.ContainsAny(k, ".{}&=") {
			im.warn(method, path, op, fmt.Sprintf("form member %q left out: its name cannot be an input placeholder", k))
			continue
		}
		props[k] = bprops[k]
		key := url.QueryEscape(k)
		if enc := mt.Encoding[k]; isArray(mt.Schema.Value.Properties[k]) && enc != nil && enc.Style == "deepObject" {
			key += "[]"
		}
		pairs = append(pairs, key+"={"+k+"}")
	}
	if req, ok := body["required"].([]string); ok {
		for _, r := range req {
			if _, isParam := params["path:"+r]; !isParam && !slices.Contains(*required, r) {
				*required = append(*required, r)
			}
		}
	}
	spec.Headers = append(spec.Headers, httpspec.Header{Name: "Content-Type", Value: formType})
	spec.RequestBody = &httpspec.RequestBody{Kind: bodykind.Text, Template: strings.Join(pairs, "&")}
	return nil
}

// whyNotBody says why a body the format cannot carry is skipped.
func whyNotBody(c openapi3.Content) string {
	for k := range c {
		switch {
		case strings.HasPrefix(k, "multipart/"):
			return "a tool sends JSON or text, not files in a multipart body"
		case strings.Contains(k, "xml"):
			return "a tool sends JSON or text, not XML"
		case strings.HasPrefix(k, "application/octet-stream"), strings.HasPrefix(k, "image/"), strings.HasPrefix(k, "video/"), strings.HasPrefix(k, "audio/"):
			return "a tool sends JSON or text, not binary data"
		}
	}
	return "only JSON bodies are imported"
}

// jsonContent is the JSON media type of a body and its name:
// application/json first, else the first (by name) whose type is JSON
// (application/*+json, application/json-patch+json, …).
func jsonContent(c openapi3.Content) (string, *openapi3.MediaType) {
	if mt := c.Get("application/json"); mt != nil {
		return "application/json", mt
	}
	for _, k := range sortedKeys(c) {
		base, _, _ := strings.Cut(k, ";")
		base = strings.TrimSpace(strings.ToLower(base))
		if base == "application/json" || strings.HasSuffix(base, "+json") || strings.HasSuffix(base, "/json") || strings.HasPrefix(base, "application/json-") {
			return base, c[k]
		}
	}
	return "", nil
}
