package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// maxDepth stops converting schemas nested inline (not through a $ref)
// past it: anything is accepted there.
const maxDepth = 12

// converter turns the OpenAPI schemas (3.0 or 3.1) of one manifest's input
// or output into JSON Schema 2020-12: every named schema of the document
// once, under $defs, referred to with $ref (so that shared and recursive
// schemas stay the size they are in the document); 3.0's nullable and
// boolean exclusive bounds rewritten; example turned into examples.
type converter struct {
	defs  map[string]any
	names map[string]string // the document's $ref → the $defs name
	used  map[string]bool   // $defs names taken
	queue []pending         // named schemas still to convert, nearest first
	size  int               // bytes of $defs so far
	// aliases: a component reference bundling suffixed → its own name.
	aliases map[string]string
	// trimmed and emptied name the definitions cut to fit defsBudget:
	// without their descriptions, or to {} (any value).
	trimmed, emptied []string
	// input says the schemas are an input's: read-only members (what the
	// server sets: an id, a creation time) are left out; an output's
	// leaves out write-only ones.
	input bool
	// notes are what was dropped to keep the schema one the tool's own
	// validation can hold: a pattern Go's regexp cannot compile, a
	// default its own schema refuses.
	notes []string
}

type pending struct {
	name string
	ref  *openapi3.SchemaRef
}

// defsBudget bounds the shared definitions of one schema (input or
// output): definitions are converted nearest first, and past the budget
// lose their descriptions, then their shape.
const defsBudget = 24 << 10

func newConverter(aliases map[string]string) *converter {
	return &converter{defs: map[string]any{}, names: map[string]string{}, used: map[string]bool{}, aliases: aliases}
}

// inline converts ref as a schema: a named one as a $ref to its $defs
// entry.
func (c *converter) inline(ref *openapi3.SchemaRef, depth int) map[string]any {
	if ref == nil || ref.Value == nil {
		return map[string]any{}
	}
	if ref.Ref != "" {
		return map[string]any{"$ref": "#/$defs/" + c.define(ref)}
	}
	return c.convert(ref.Value, depth)
}

// resolved converts the schema ref names, not a reference to it: a body
// whose members become the tool's input.
func (c *converter) resolved(ref *openapi3.SchemaRef) map[string]any {
	if ref == nil || ref.Value == nil {
		return map[string]any{}
	}
	return c.convert(ref.Value, 0)
}

// define converts a named schema into $defs once and returns its name.
func (c *converter) define(ref *openapi3.SchemaRef) string {
	if name, ok := c.names[ref.Ref]; ok {
		return name
	}
	base := ref.Ref
	if a, ok := c.aliases[base]; ok {
		base = a // a component bundling named apart: its own name
	}
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	base = strings.Trim(defName.ReplaceAllString(base, "_"), "_")
	if base == "" {
		base = "schema"
	}
	name := base
	for n := 2; c.used[name]; n++ {
		name = fmt.Sprintf("%s_%d", base, n)
	}
	c.used[name], c.names[ref.Ref] = true, name
	c.defs[name] = map[string]any{}
	c.queue = append(c.queue, pending{name, ref})
	return name
}

// finish converts the named schemas referred to, nearest first, within
// defsBudget.
func (c *converter) finish() {
	full := false // once a definition has not fitted, the farther ones are not tried
	for len(c.queue) > 0 {
		p := c.queue[0]
		c.queue = c.queue[1:]
		if full {
			c.emptied = append(c.emptied, p.name)
			continue
		}
		def := c.convert(p.ref.Value, 0)
		n := jsonSize(def)
		if c.size+n > defsBudget {
			strip(def)
			if n = jsonSize(def); c.size+n > defsBudget {
				c.emptied = append(c.emptied, p.name)
				full = true
				continue // stays {}: any value
			}
			c.trimmed = append(c.trimmed, p.name)
		}
		c.size += n
		c.defs[p.name] = def
	}
}

// cuts words what finish cut, "" for nothing.
func (c *converter) cuts(what string) string {
	var parts []string
	if len(c.trimmed) > 0 {
		parts = append(parts, fmt.Sprintf("%d of the %s's definitions without descriptions", len(c.trimmed), what))
	}
	if len(c.emptied) > 0 {
		parts = append(parts, fmt.Sprintf("%d of the %s's definitions accept any value (%s)", len(c.emptied), what, list(c.emptied, 5)))
	}
	return strings.Join(parts, ", ")
}

func list(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}

func jsonSize(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

var defName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// attach puts the $defs the schema refers to in it.
func (c *converter) attach(schema map[string]any) map[string]any {
	c.finish()
	if len(c.defs) > 0 {
		schema["$defs"] = c.defs
	}
	return schema
}

// convert is s in JSON Schema 2020-12: its type (null added where it is
// nullable), its annotations, its bounds, its members and its parts, each
// schema below it inlined or defined. What it cannot keep it drops with a
// note.
func (c *converter) convert(s *openapi3.Schema, depth int) map[string]any {
	if depth > maxDepth {
		return map[string]any{}
	}
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
	c.annotations(s, out)
	c.bounds(s, out)
	// The schemas below, in this order: a named schema's place in the
	// queue (nearest first, within the budget) follows it.
	if s.Items != nil {
		out["items"] = c.inline(s.Items, depth+1)
	}
	if len(s.PrefixItems) > 0 {
		out["prefixItems"] = c.inlineAll(s.PrefixItems, depth)
	}
	c.members(s, out, depth)
	c.parts(s, out, depth)
	setIf(out, "readOnly", true, s.ReadOnly)
	setIf(out, "writeOnly", true, s.WriteOnly)
	setIf(out, "deprecated", true, s.Deprecated)
	return out
}

// setIf sets out[k] to v when ok.
func setIf(out map[string]any, k string, v any, ok bool) {
	if ok {
		out[k] = v
	}
}

// annotations copies s's title, description, format, enum, const,
// default (unless it is one s refuses) and examples into out.
func (c *converter) annotations(s *openapi3.Schema, out map[string]any) {
	setIf(out, "title", s.Title, s.Title != "")
	setIf(out, "description", s.Description, s.Description != "")
	setIf(out, "format", s.Format, s.Format != "")
	setIf(out, "enum", s.Enum, len(s.Enum) > 0)
	setIf(out, "const", s.Const, s.Const != nil)
	if s.Default != nil {
		if why := badDefault(s); why != "" {
			c.note(fmt.Sprintf("default %s dropped: %s", clipText(jsonText(s.Default), 40), why))
		} else {
			out["default"] = s.Default
		}
	}
	if s.Example != nil {
		out["examples"] = []any{s.Example}
	}
	setIf(out, "examples", s.Examples, len(s.Examples) > 0)
}

// bounds copies s's bounds into out: its pattern (unless Go cannot
// compile it), lengths, numeric bounds (3.0's boolean exclusive bounds
// as 2020-12's numbers), multipleOf and item counts.
func (c *converter) bounds(s *openapi3.Schema, out map[string]any) {
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			c.note(fmt.Sprintf("pattern %s dropped: Go's regular expressions cannot compile it (%v)", clipText(s.Pattern, 60), errCode(err)))
		} else {
			out["pattern"] = s.Pattern
		}
	}
	setIf(out, "minLength", s.MinLength, s.MinLength > 0)
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
	setIf(out, "minItems", s.MinItems, s.MinItems > 0)
	if s.MaxItems != nil {
		out["maxItems"] = *s.MaxItems
	}
	setIf(out, "uniqueItems", true, s.UniqueItems)
}

// members converts s's properties (but those for the other side of the
// call), the ones it requires (but those left out, and in an input those
// a part marks read-only), its additional properties and minProperties.
func (c *converter) members(s *openapi3.Schema, out map[string]any, depth int) {
	var left map[string]bool // members left out of this side
	if len(s.Properties) > 0 {
		props := map[string]any{}
		// In name order: a named schema's place in the queue (nearest
		// first, within the budget) must not depend on map order, or the
		// same document imports differently from run to run.
		for _, k := range sortedKeys(s.Properties) {
			if c.otherSide(s.Properties[k]) {
				if left == nil {
					left = map[string]bool{}
				}
				left[k] = true
				continue
			}
			props[k] = c.inline(s.Properties[k], depth+1)
		}
		out["properties"] = props
	}
	var required []string
	for _, r := range s.Required {
		if !left[r] && !(c.input && readOnlyInParts(s, r, 0)) {
			required = append(required, r)
		}
	}
	setIf(out, "required", required, len(required) > 0)
	if ap := s.AdditionalProperties; ap.Has != nil {
		out["additionalProperties"] = *ap.Has
	} else if ap.Schema != nil {
		out["additionalProperties"] = c.inline(ap.Schema, depth+1)
	}
	setIf(out, "minProperties", s.MinProps, s.MinProps > 0)
}

// parts converts s's allOf, anyOf, oneOf and not. oneOf becomes anyOf: a
// document's branches often overlap (a string that is also an enum of
// strings, an object that fits two shapes), and oneOf then refuses what
// the API takes ("subschemas 0, 1 matched"); anyOf accepts what any
// branch does, and the API decides.
func (c *converter) parts(s *openapi3.Schema, out map[string]any, depth int) {
	if len(s.AllOf) > 0 {
		out["allOf"] = c.inlineAll(s.AllOf, depth)
	}
	switch {
	case len(s.AnyOf) > 0 && len(s.OneOf) > 0:
		all, _ := out["allOf"].([]any)
		out["allOf"] = append(all, map[string]any{"anyOf": c.inlineAll(s.OneOf, depth)})
		out["anyOf"] = c.inlineAll(s.AnyOf, depth)
	case len(s.AnyOf) > 0:
		out["anyOf"] = c.inlineAll(s.AnyOf, depth)
	case len(s.OneOf) > 0:
		out["anyOf"] = c.inlineAll(s.OneOf, depth)
	}
	if s.Not != nil {
		out["not"] = c.inline(s.Not, depth+1)
	}
}

// readOnlyInParts says whether member name is read-only in one of s's
// parts (allOf, oneOf, anyOf, at any depth): a schema that requires it
// beside the parts that declare it (Cloudflare's DNS record requires
// created_on, which each record type marks readOnly) must not require
// it of an input that leaves it out (issue 43, class 8).
func readOnlyInParts(s *openapi3.Schema, name string, depth int) bool {
	if s == nil || depth > maxDepth {
		return false
	}
	for _, parts := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
		for _, p := range parts {
			if p == nil || p.Value == nil {
				continue
			}
			if m := p.Value.Properties[name]; m != nil && m.Value != nil && m.Value.ReadOnly {
				return true
			}
			if readOnlyInParts(p.Value, name, depth+1) {
				return true
			}
		}
	}
	return false
}

// otherSide says the member is not for this side of the call: read-only
// in an input, write-only in an output.
func (c *converter) otherSide(ref *openapi3.SchemaRef) bool {
	if ref == nil || ref.Value == nil {
		return false
	}
	if c.input {
		return ref.Value.ReadOnly
	}
	return ref.Value.WriteOnly
}

// note keeps one of the converter's notes, once.
func (c *converter) note(n string) {
	if !contains(c.notes, n) {
		c.notes = append(c.notes, n)
	}
}

// badDefault says why s's default fails s's own type or enum, "" when it
// does not.
func badDefault(s *openapi3.Schema) string {
	d := s.Default
	if len(s.Enum) > 0 {
		found := false
		for _, e := range s.Enum {
			if jsonText(e) == jsonText(d) {
				found = true
				break
			}
		}
		if !found {
			return "it is not one of the enum's values"
		}
	}
	if s.Type == nil || len(*s.Type) == 0 {
		return ""
	}
	var kind string
	switch v := d.(type) {
	case nil:
		kind = "null"
	case bool:
		kind = "boolean"
	case string:
		kind = "string"
	case float64:
		kind = "number"
		if v == math.Trunc(v) && !math.IsInf(v, 0) {
			kind = "integer" // 9223372036854775807 too, which int64(v) would overflow
		}
	case int, int64:
		kind = "integer"
	case []any:
		kind = "array"
	case map[string]any:
		kind = "object"
	default:
		return ""
	}
	for _, t := range *s.Type {
		if t == kind || (t == "number" && kind == "integer") || (kind == "null" && s.Nullable) {
			return ""
		}
	}
	if kind == "null" && s.Nullable {
		return ""
	}
	return fmt.Sprintf("it is a %s, the member a %s", kind, strings.Join(*s.Type, " or "))
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// errCode is a regexp error's code and place, without the whole pattern
// again.
func errCode(err error) string {
	var re *syntax.Error
	if errors.As(err, &re) {
		return string(re.Code)
	}
	return err.Error()
}

func (c *converter) inlineAll(refs openapi3.SchemaRefs, depth int) []any {
	out := make([]any, len(refs))
	for i, r := range refs {
		out[i] = c.inline(r, depth+1)
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
