package openapi

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	bodykind "github.com/httptools/httptools/body"
	"github.com/httptools/httptools/httpspec"
)

// Request bodies: JSON as json-input, forms as a text template.

// body makes a JSON request body json-input (its members input members)
// and a form a text template; any other body skips the operation.
func (im *importer) body(method string, op *openapi3.Operation, x *inputs, spec *httpspec.Spec) error {
	in, props, params, path := x.in, x.props, x.params, x.path
	required := x.required
	defer func() { x.required = required }()
	if rb := op.RequestBody; rb != nil && rb.Value != nil && method != "GET" && jsonContent(rb.Value.Content) == nil {
		if fm := rb.Value.Content.Get(formType); fm != nil {
			if err := im.formBody(method, path, op, fm, in, props, params, &required, spec); err != nil {
				return err
			}
		} else {
			return skipf(SkipBody, "the request body is %s: %s", strings.Join(sortedKeys(rb.Value.Content), ", "), whyNotBody(rb.Value.Content))
		}
	} else if rb := op.RequestBody; rb != nil && rb.Value != nil && method != "GET" {
		mt := jsonContent(rb.Value.Content)
		if mt == nil {
			return skipf(SkipBody, "the request body is %s: %s", strings.Join(sortedKeys(rb.Value.Content), ", "), whyNotBody(rb.Value.Content))
		}
		body := in.resolved(mt.Schema)
		bprops, _ := body["properties"].(map[string]any)
		if bprops == nil && mt.Schema != nil && mt.Schema.Value != nil && len(mt.Schema.Value.AllOf) > 0 {
			// allOf of objects (a base and its extension): their members
			// together.
			bprops, body = map[string]any{}, map[string]any{"type": "object"}
			var req []string
			for _, part := range mt.Schema.Value.AllOf {
				ps := in.resolved(part)
				pp, _ := ps["properties"].(map[string]any)
				for k, v := range pp {
					bprops[k] = v
				}
				if r, ok := ps["required"].([]string); ok {
					req = append(req, r...)
				}
			}
			if len(bprops) == 0 {
				return skipf(SkipBody, "the JSON body's allOf has no object members: it cannot be the tool input minus the URL's values")
			}
			body["properties"], body["required"] = bprops, req
		}
		if body["type"] != "object" && bprops == nil {
			if body["oneOf"] != nil || body["anyOf"] != nil {
				return skipf(SkipBody, "the JSON body is one of several shapes (oneOf/anyOf): a tool's input is one object whose members, minus the URL's, are the body")
			}
			return skipf(SkipBody, "the JSON body is not an object: it cannot be the tool input minus the URL's values")
		}
		for _, k := range sortedKeys(bprops) {
			if _, clash := props[k]; clash {
				im.warn(method, path, op, fmt.Sprintf("body property %q has the name of a parameter: the parameter wins", k))
				continue
			}
			props[k] = bprops[k]
		}
		// The body's own required members are required whether or not
		// the body is: an API that takes no body at all is rare, one that
		// refuses a body without them is the rule.
		if req, ok := body["required"].([]string); ok {
			for _, r := range req {
				if _, clash := params["path:"+r]; !clash && !slices.Contains(required, r) {
					required = append(required, r)
				}
			}
		}
		spec.RequestBody = &httpspec.RequestBody{Kind: bodykind.JSONInput}
	}
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

func jsonContent(c openapi3.Content) *openapi3.MediaType {
	if mt := c.Get("application/json"); mt != nil {
		return mt
	}
	for _, k := range sortedKeys(c) {
		if strings.Contains(k, "json") {
			return c[k]
		}
	}
	return nil
}
