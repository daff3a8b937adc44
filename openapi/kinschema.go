package openapi

// kin-openapi's decoding of a schema, from generic JSON. Its
// SchemaRef.UnmarshalJSON decodes each schema twice (into the struct, and
// whole into a map for its extensions) and hands each subschema its text to
// decode again the same way: a schema nested n deep is decoded about 2n
// times over, the bulk of a big document's decoding. schemaRefOf builds
// the same value from the document already decoded, once. It reads only
// the shape it is sure of — every member one Schema field by its exact
// name, or an extension that no field's name matches in another case; the
// JSON types that field decodes from; strings valid UTF-8; finite numbers
// — and answers false for anything else, which kin-openapi then decodes.
// Objects it does not decode itself (externalDocs, xml, discriminator) it
// hands to their kin-openapi decoders. TestDecodeDocumentIsKinsDecode and
// FuzzSchemaRefOfIsKins hold it to kin-openapi's result.

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
)

// schemaFields are the JSON names of openapi3.Schema's fields, read off
// its struct tags: what its decoder reads into fields, and takes out of
// the extensions (schema.go, Schema.UnmarshalJSON).
var schemaFields = jsonNames(reflect.TypeFor[openapi3.Schema](), nil)

// jsonNames returns the JSON names of t's fields (of type of, if not nil).
func jsonNames(t reflect.Type, of reflect.Type) map[string]bool {
	names := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && (of == nil || f.Type == of) {
			names[name] = true
		}
	}
	return names
}

// foldsToField says k is not a field's name but matches one in another
// case, which encoding/json would decode into that field.
func foldsToField(k string) bool {
	if schemaFields[k] || k == "$ref" {
		return false
	}
	for f := range schemaFields {
		if strings.EqualFold(k, f) {
			return true
		}
	}
	return strings.EqualFold(k, "$ref") || strings.EqualFold(k, "summary")
}

// schemaRefOf is kin-openapi's SchemaRef.UnmarshalJSON of v's JSON text;
// false when v is not of the shape it reads.
func schemaRefOf(v any) (*openapi3.SchemaRef, bool) {
	switch v := v.(type) {
	case bool:
		return &openapi3.SchemaRef{Value: &openapi3.Schema{Always: &v}}, true
	case map[string]any:
		if r, there := v["$ref"]; there {
			// A bare reference; one with siblings keeps them in fields
			// only kin-openapi can set.
			s, ok := r.(string)
			if !ok || s == "" || len(v) != 1 || !utf8.ValidString(s) {
				return nil, false
			}
			return &openapi3.SchemaRef{Ref: s}, true
		}
		s, ok := kinSchemaOf(v)
		if !ok {
			return nil, false
		}
		return &openapi3.SchemaRef{Value: s}, true
	}
	return nil, false
}

// kinSchemaOf is Schema.UnmarshalJSON of an object's text.
func kinSchemaOf(m map[string]any) (*openapi3.Schema, bool) {
	d := schemaReader{ok: true}
	s := &openapi3.Schema{}
	for k, v := range m {
		if !utf8.ValidString(k) {
			return nil, false
		}
		if !schemaFields[k] {
			if foldsToField(k) {
				return nil, false
			}
			if s.Extensions == nil {
				s.Extensions = map[string]any{}
			}
			s.Extensions[k] = d.generic(v)
			continue
		}
		d.field(s, k, v)
		if !d.ok {
			return nil, false
		}
	}
	return s, d.ok
}

// schemaReader reads a schema's members; ok turns false at the first it
// cannot read.
type schemaReader struct{ ok bool }

// field reads member k of a schema into s: here the fields that hold
// schemas.
func (d *schemaReader) field(s *openapi3.Schema, k string, v any) {
	if v == nil {
		d.ok = false // null decodes field by field its own way: left to kin-openapi
		return
	}
	switch k {
	case "oneOf":
		s.OneOf = d.refs(v)
	case "anyOf":
		s.AnyOf = d.refs(v)
	case "allOf":
		s.AllOf = d.refs(v)
	case "prefixItems":
		s.PrefixItems = d.refs(v)
	case "not":
		s.Not = d.ref(v)
	case "items":
		s.Items = d.ref(v)
	case "contains":
		s.Contains = d.ref(v)
	case "propertyNames":
		s.PropertyNames = d.ref(v)
	case "if":
		s.If = d.ref(v)
	case "then":
		s.Then = d.ref(v)
	case "else":
		s.Else = d.ref(v)
	case "contentSchema":
		s.ContentSchema = d.ref(v)
	case "properties":
		s.Properties = d.schemas(v)
	case "patternProperties":
		s.PatternProperties = d.schemas(v)
	case "dependentSchemas":
		s.DependentSchemas = d.schemas(v)
	case "$defs":
		s.Defs = d.schemas(v)
	case "additionalProperties":
		s.AdditionalProperties = d.boolSchema(v)
	case "unevaluatedItems":
		s.UnevaluatedItems = d.boolSchema(v)
	case "unevaluatedProperties":
		s.UnevaluatedProperties = d.boolSchema(v)
	default:
		d.value(s, k, v)
	}
}

// value reads the fields that hold values, not schemas.
func (d *schemaReader) value(s *openapi3.Schema, k string, v any) {
	switch k {
	case "type":
		s.Type = d.types(v)
	case "enum":
		s.Enum = d.list(v)
	case "examples":
		s.Examples = d.list(v)
	case "default":
		s.Default = d.generic(v)
	case "example":
		s.Example = d.generic(v)
	case "const":
		s.Const = d.generic(v)
	case "required":
		s.Required = d.strings(v)
	case "dependentRequired":
		s.DependentRequired = d.stringLists(v)
	case "minimum":
		s.Min = d.float(v)
	case "maximum":
		s.Max = d.float(v)
	case "multipleOf":
		s.MultipleOf = d.float(v)
	case "exclusiveMinimum":
		s.ExclusiveMin = d.bound(v)
	case "exclusiveMaximum":
		s.ExclusiveMax = d.bound(v)
	case "externalDocs":
		s.ExternalDocs = &openapi3.ExternalDocs{}
		d.kin(v, s.ExternalDocs)
	case "xml":
		s.XML = &openapi3.XML{}
		d.kin(v, s.XML)
	case "discriminator":
		s.Discriminator = &openapi3.Discriminator{}
		d.kin(v, s.Discriminator)
	default:
		d.scalar(s, k, v)
	}
}

// scalar reads the string, boolean and whole-number fields.
func (d *schemaReader) scalar(s *openapi3.Schema, k string, v any) {
	if p := stringField(s, k); p != nil {
		*p = d.string(v)
		return
	}
	if p := boolField(s, k); p != nil {
		b, ok := v.(bool)
		d.ok = d.ok && ok
		*p = b
		return
	}
	n := d.uint(v)
	switch k {
	case "minLength":
		s.MinLength = n
	case "minItems":
		s.MinItems = n
	case "minProperties":
		s.MinProps = n
	case "maxLength":
		s.MaxLength = &n
	case "maxItems":
		s.MaxItems = &n
	case "maxProperties":
		s.MaxProps = &n
	case "minContains":
		s.MinContains = &n
	case "maxContains":
		s.MaxContains = &n
	default:
		d.ok = false // a field this file does not know: schemaFields and field disagree
	}
}

func stringField(s *openapi3.Schema, k string) *string {
	switch k {
	case "title":
		return &s.Title
	case "format":
		return &s.Format
	case "description":
		return &s.Description
	case "pattern":
		return &s.Pattern
	case "$schema":
		return &s.SchemaDialect
	case "$comment":
		return &s.Comment
	case "$id":
		return &s.SchemaID
	case "$anchor":
		return &s.Anchor
	case "$dynamicRef":
		return &s.DynamicRef
	case "$dynamicAnchor":
		return &s.DynamicAnchor
	case "contentMediaType":
		return &s.ContentMediaType
	case "contentEncoding":
		return &s.ContentEncoding
	}
	return nil
}

func boolField(s *openapi3.Schema, k string) *bool {
	switch k {
	case "uniqueItems":
		return &s.UniqueItems
	case "nullable":
		return &s.Nullable
	case "readOnly":
		return &s.ReadOnly
	case "writeOnly":
		return &s.WriteOnly
	case "allowEmptyValue":
		return &s.AllowEmptyValue
	case "deprecated":
		return &s.Deprecated
	}
	return nil
}

func (d *schemaReader) ref(v any) *openapi3.SchemaRef {
	r, ok := schemaRefOf(v)
	d.ok = d.ok && ok
	return r
}

func (d *schemaReader) refs(v any) openapi3.SchemaRefs {
	l, ok := v.([]any)
	if !ok {
		d.ok = false
		return nil
	}
	out := make(openapi3.SchemaRefs, len(l))
	for i, x := range l {
		out[i] = d.ref(x)
	}
	return out
}

func (d *schemaReader) schemas(v any) openapi3.Schemas {
	m, ok := v.(map[string]any)
	if !ok {
		d.ok = false
		return nil
	}
	out := make(openapi3.Schemas, len(m))
	for k, x := range m {
		d.ok = d.ok && utf8.ValidString(k)
		out[k] = d.ref(x)
	}
	return out
}

// boolSchema is BoolSchema.UnmarshalJSON: true or false, or a schema (an
// empty one decoded as kin-openapi does, to an empty Schema). kin-openapi
// decodes the schema into a generic value first and encodes it again, so
// a YAML integer in it is a float64 by the time it is read.
func (d *schemaReader) boolSchema(v any) openapi3.BoolSchema {
	switch v := v.(type) {
	case bool:
		return openapi3.BoolSchema{Has: &v}
	case map[string]any:
		if len(v) == 0 {
			return openapi3.BoolSchema{Schema: &openapi3.SchemaRef{Value: &openapi3.Schema{}}}
		}
		return openapi3.BoolSchema{Schema: d.ref(floatNumbers(v))}
	}
	d.ok = false
	return openapi3.BoolSchema{}
}

// bound is ExclusiveBound.UnmarshalJSON: a boolean (3.0) or a number (3.1).
func (d *schemaReader) bound(v any) openapi3.ExclusiveBound {
	switch v := v.(type) {
	case bool:
		return openapi3.ExclusiveBound{Bool: &v}
	case float64, int, int64, uint64:
		return openapi3.ExclusiveBound{Value: d.float(v)}
	}
	d.ok = false
	return openapi3.ExclusiveBound{}
}

// types is Types.UnmarshalJSON: a list of names, or one.
func (d *schemaReader) types(v any) *openapi3.Types {
	if s, ok := v.(string); ok {
		t := openapi3.Types{d.string(s)}
		return &t
	}
	t := openapi3.Types(d.strings(v))
	return &t
}

func (d *schemaReader) string(v any) string {
	s, ok := v.(string)
	d.ok = d.ok && ok && utf8.ValidString(s)
	return s
}

func (d *schemaReader) strings(v any) []string {
	l, ok := v.([]any)
	if !ok {
		d.ok = false
		return nil
	}
	out := make([]string, len(l))
	for i, x := range l {
		out[i] = d.string(x)
	}
	return out
}

func (d *schemaReader) stringLists(v any) map[string][]string {
	m, ok := v.(map[string]any)
	if !ok {
		d.ok = false
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, x := range m {
		d.ok = d.ok && utf8.ValidString(k) && x != nil
		out[k] = d.strings(x)
	}
	return out
}

func (d *schemaReader) float(v any) *float64 {
	f, ok := number(v)
	d.ok = d.ok && ok
	return &f
}

// number is v, a JSON number as encoding/json or YAML decodes one, as
// encoding/json decodes its text into a float64 (an integer rounded to the
// nearest, as both the conversion and ParseFloat round); false if v is not
// a finite number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsInf(n, 0) && !math.IsNaN(n)
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// uint reads a whole number as encoding/json reads one into a uint64: the
// digits json.Marshal writes for it, so only a whole, non-negative number
// below 2⁵³, not -0 (others are written in ways ParseUint refuses or, past
// 2⁶⁴, overflows); an integer YAML decoded, whole.
func (d *schemaReader) uint(v any) uint64 {
	switch n := v.(type) {
	case int:
		d.ok = d.ok && n >= 0
		return uint64(n)
	case int64:
		d.ok = d.ok && n >= 0
		return uint64(n)
	case uint64:
		return n
	}
	f, ok := v.(float64)
	d.ok = d.ok && ok && f >= 0 && f <= 1<<53 && f == math.Trunc(f) && !math.Signbit(f)
	return uint64(f)
}

func (d *schemaReader) list(v any) []any {
	l, ok := v.([]any)
	if !ok {
		d.ok = false
		return nil
	}
	return d.generic(l).([]any)
}

// generic is v as encoding/json decodes its text into an any: a copy, its
// numbers float64.
func (d *schemaReader) generic(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			d.ok = d.ok && utf8.ValidString(k)
			out[k] = d.generic(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = d.generic(x)
		}
		return out
	case string:
		d.ok = d.ok && utf8.ValidString(v)
		return v
	case float64, int, int64, uint64:
		f, ok := number(v)
		d.ok = d.ok && ok
		return f
	case bool, nil:
		return v
	}
	d.ok = false
	return nil
}

// kin decodes v with into's own kin-openapi decoder.
func (d *schemaReader) kin(v any, into json.Unmarshaler) {
	data, err := json.Marshal(v)
	d.ok = d.ok && err == nil && into.UnmarshalJSON(data) == nil
}
