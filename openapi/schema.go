package openapi

import (
	"github.com/getkin/kin-openapi/openapi3"
)

// maxDepth stops inlining recursive schemas: past it, anything is accepted.
const maxDepth = 12

// inline turns an OpenAPI schema (3.0 or 3.1) into a self-contained JSON
// Schema 2020-12 object: references inlined, 3.0's nullable and boolean
// exclusive bounds rewritten, example turned into examples.
func inline(ref *openapi3.SchemaRef, depth int) map[string]any {
	if ref == nil || ref.Value == nil || depth > maxDepth {
		return map[string]any{}
	}
	s := ref.Value
	out := map[string]any{}
	if s.Type != nil && len(*s.Type) > 0 {
		types := append([]string(nil), (*s.Type)...)
		if s.Nullable && !contains(types, "null") {
			types = append(types, "null")
		}
		if len(types) == 1 {
			out["type"] = types[0]
		} else {
			out["type"] = types
		}
	}
	set := func(k string, v any, ok bool) {
		if ok {
			out[k] = v
		}
	}
	set("title", s.Title, s.Title != "")
	set("description", s.Description, s.Description != "")
	set("format", s.Format, s.Format != "")
	set("enum", s.Enum, len(s.Enum) > 0)
	set("const", s.Const, s.Const != nil)
	set("default", s.Default, s.Default != nil)
	if s.Example != nil {
		out["examples"] = []any{s.Example}
	}
	set("examples", s.Examples, len(s.Examples) > 0)
	set("pattern", s.Pattern, s.Pattern != "")
	set("minLength", s.MinLength, s.MinLength > 0)
	if s.MaxLength != nil {
		out["maxLength"] = *s.MaxLength
	}
	bound := func(k, ek string, v *float64, ex openapi3.ExclusiveBound) {
		switch {
		case ex.Value != nil:
			out[ek] = *ex.Value
			if v != nil {
				out[k] = *v
			}
		case ex.Bool != nil && *ex.Bool && v != nil:
			out[ek] = *v
		case v != nil:
			out[k] = *v
		}
	}
	bound("minimum", "exclusiveMinimum", s.Min, s.ExclusiveMin)
	bound("maximum", "exclusiveMaximum", s.Max, s.ExclusiveMax)
	if s.MultipleOf != nil {
		out["multipleOf"] = *s.MultipleOf
	}
	set("minItems", s.MinItems, s.MinItems > 0)
	if s.MaxItems != nil {
		out["maxItems"] = *s.MaxItems
	}
	set("uniqueItems", true, s.UniqueItems)
	if s.Items != nil {
		out["items"] = inline(s.Items, depth+1)
	}
	if len(s.PrefixItems) > 0 {
		out["prefixItems"] = inlineAll(s.PrefixItems, depth)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for k, p := range s.Properties {
			props[k] = inline(p, depth+1)
		}
		out["properties"] = props
	}
	set("required", s.Required, len(s.Required) > 0)
	if ap := s.AdditionalProperties; ap.Has != nil {
		out["additionalProperties"] = *ap.Has
	} else if ap.Schema != nil {
		out["additionalProperties"] = inline(ap.Schema, depth+1)
	}
	set("minProperties", s.MinProps, s.MinProps > 0)
	for k, v := range map[string]openapi3.SchemaRefs{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf} {
		if len(v) > 0 {
			out[k] = inlineAll(v, depth)
		}
	}
	if s.Not != nil {
		out["not"] = inline(s.Not, depth+1)
	}
	set("readOnly", true, s.ReadOnly)
	set("writeOnly", true, s.WriteOnly)
	set("deprecated", true, s.Deprecated)
	return out
}

func inlineAll(refs openapi3.SchemaRefs, depth int) []any {
	out := make([]any, len(refs))
	for i, r := range refs {
		out[i] = inline(r, depth+1)
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
