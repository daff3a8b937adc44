package openapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The checker's samples: a value a schema accepts, made from the schema
// alone, for the input the checker gives each tool.

// sample is a value s accepts (as far as its type, enum, format, bounds
// and required members say).
func sample(s *openapi3.Schema, depth int) any {
	if s == nil || depth > 6 {
		return "x"
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	if s.Const != nil {
		return s.Const
	}
	for _, part := range s.AllOf {
		// An allOf whose part is not an object (an array, a string, with
		// a description beside it): a value of that part.
		if ps := schemaOf(part); ps != nil && ps.Type != nil && len(ps.Type.Slice()) > 0 && !ps.Type.Is("object") {
			return sample(ps, depth+1)
		}
	}
	if len(s.AllOf) > 0 {
		return sampleAllOf(s, depth)
	}
	if alts := append(slices.Clip(s.OneOf), s.AnyOf...); len(alts) > 0 {
		return sampleAlternative(s, alts, depth)
	}
	return sampleOfType(s, depth)
}

// sampleAllOf is a value of an allOf of objects: the members of every
// part, writable ones at the top and required ones below, and the first
// alternative's of a part that is one of several.
func sampleAllOf(s *openapi3.Schema, depth int) any {
	props, req := map[string]*openapi3.Schema{}, []string{}
	collect(s, props, &req, 0)
	if len(props) == 0 && (s.Type == nil || !s.Type.Is("object")) {
		// No members anywhere: an allOf of one shape (Elasticsearch's
		// Duration, one of several strings, or EpochTime, a number
		// through two references).
		for _, part := range s.AllOf {
			if ps := schemaOf(part); ps != nil {
				return sample(ps, depth+1)
			}
		}
	}
	out := map[string]any{}
	for _, k := range sortedKeys(props) {
		// Read-only, required or not: the server's to set, and the
		// importer leaves it out of the input (issue 43, class 8).
		if props[k].ReadOnly || depth > 0 && !slices.Contains(req, k) {
			continue
		}
		out[k] = sample(props[k], depth+1)
	}
	for _, part := range s.AllOf {
		// A part that is one of several objects (Cloudflare's app
		// config: account_app_id or managed_app_id): the first's
		// members, over the other parts' (an enum of one beside a
		// plain string: Cloudflare's deployment strategy).
		ps := schemaOf(part)
		if ps == nil {
			continue
		}
		for _, alts := range []openapi3.SchemaRefs{ps.OneOf, ps.AnyOf} {
			if len(alts) == 0 {
				continue
			}
			if o, ok := sample(schemaOf(alts[0]), depth+1).(map[string]any); ok {
				for k, v := range o {
					out[k] = v
				}
			}
		}
	}
	fillMinProperties(out, props, minProperties(s, 0), depth)
	return out
}

// sampleAlternative is a value of the first of alts (s's oneOf and
// anyOf), with the members s requires beside its branches.
func sampleAlternative(s *openapi3.Schema, alts openapi3.SchemaRefs, depth int) any {
	v := sample(schemaOf(alts[0]), depth+1)
	if o, ok := v.(map[string]any); ok && len(s.Required) > 0 {
		// Members the schema requires beside its branches, which
		// declare them (Cloudflare's DNS record): the writable ones.
		props, req := map[string]*openapi3.Schema{}, []string{}
		collect(schemaOf(alts[0]), props, &req, 0)
		for _, r := range s.Required {
			if p := props[r]; p != nil && !p.ReadOnly && o[r] == nil {
				o[r] = sample(p, depth+1)
			}
		}
	}
	return v
}

// sampleOfType is a value of s's type (its first not null; an object
// when it has members and no type), within its bounds.
func sampleOfType(s *openapi3.Schema, depth int) any {
	typ := ""
	if s.Type != nil {
		for _, t := range s.Type.Slice() {
			if t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == "" && len(s.Properties) > 0 {
		typ = "object"
	}
	switch typ {
	case "integer":
		if s.Min != nil {
			return int64(*s.Min) + 1
		}
		return 7
	case "number":
		if s.Min != nil {
			return *s.Min + 1
		}
		return 1.5
	case "boolean":
		return true
	case "array":
		return sampleArray(s, depth)
	case "object":
		o, _ := sampleObject(s, depth)
		return o
	}
	return sampleString(s)
}

// sampleArray is a list of s's items: two values where two may be sent,
// since one would read the same in every style (a list joined by commas,
// or repeated).
func sampleArray(s *openapi3.Schema, depth int) any {
	n := max(int(s.MinItems), 2)
	if s.MaxItems != nil && int(*s.MaxItems) < n {
		n = max(int(*s.MaxItems), 1)
	}
	out := make([]any, n)
	for i := range out {
		out[i] = nth(sample(schemaOf(s.Items), depth+1), schemaOf(s.Items), i)
	}
	if n > 1 && jsonText(out[0]) == jsonText(out[1]) && s.MinItems <= 1 {
		return out[:1] // no second value of its own (uniqueItems would refuse it)
	}
	return out
}

// sampleString is a string of s's format, or of its bounded length.
func sampleString(s *openapi3.Schema) any {
	switch s.Format {
	case "date-time":
		return "2024-01-02T03:04:05Z"
	case "date":
		return "2024-01-02"
	case "uuid":
		return "123e4567-e89b-42d3-a456-426614174000"
	case "email":
		return "a@example.com"
	case "uri", "url":
		return "https://example.com/a"
	}
	n := max(int(s.MinLength), 3)
	if s.MaxLength != nil && int(*s.MaxLength) < n {
		n = max(int(*s.MaxLength), 1)
	}
	return strings.Repeat("v", n)
}

// nth makes the i-th item of a sample list differ from the others where
// its schema lets it: another enum value, another number, another word.
func nth(v any, s *openapi3.Schema, i int) any {
	if i == 0 {
		return v
	}
	if s != nil && len(s.Enum) > 0 {
		return s.Enum[i%len(s.Enum)]
	}
	switch x := v.(type) {
	case string:
		if s == nil || s.Format == "" && s.Pattern == "" && (s.MaxLength == nil || len(x)+1 <= int(*s.MaxLength)) {
			return x + strings.Repeat("w", i)
		}
	case int:
		return x + i
	case int64:
		return x + int64(i)
	case float64:
		return x + float64(i)
	}
	return v
}

// sampleObject is a value of every writable member of s at the top, and
// of the required ones below.
func sampleObject(s *openapi3.Schema, depth int) (map[string]any, bool) {
	out := map[string]any{}
	for _, k := range sortedKeys(s.Properties) {
		p := schemaOf(s.Properties[k])
		if p == nil || p.ReadOnly {
			continue
		}
		if depth > 0 && !slices.Contains(s.Required, k) {
			continue
		}
		out[k] = sample(p, depth+1)
	}
	props := map[string]*openapi3.Schema{}
	for k, p := range s.Properties {
		if p != nil && p.Value != nil {
			props[k] = p.Value
		}
	}
	fillMinProperties(out, props, s.MinProps, depth)
	if ap := schemaOf(s.AdditionalProperties.Schema); ap != nil {
		// A map that must hold some keys (Elasticsearch's highlight
		// fields, its indices_boost): keys of its own.
		for i := 0; uint64(len(out)) < s.MinProps; i++ {
			out[fmt.Sprintf("key%d", i)] = sample(ap, depth+1)
		}
	}
	return out, len(s.Properties) > 0
}

// fillMinProperties adds optional writable members to out until it has
// min: a minProperties that asks for more than the required ones (the
// query of Elasticsearch's count, one of its many kinds).
func fillMinProperties(out map[string]any, props map[string]*openapi3.Schema, min uint64, depth int) {
	for _, k := range sortedKeys(props) {
		if uint64(len(out)) >= min {
			return
		}
		if p := props[k]; !p.ReadOnly && out[k] == nil {
			out[k] = sample(p, depth+1)
		}
	}
}

// minProperties is the largest minProperties of s and its allOf parts.
func minProperties(s *openapi3.Schema, depth int) uint64 {
	if s == nil || depth > maxDepth {
		return 0
	}
	n := s.MinProps
	for _, part := range s.AllOf {
		n = max(n, minProperties(schemaOf(part), depth+1))
	}
	return n
}
