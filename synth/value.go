package synth

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"
)

// valueSchema is a compiled input or output schema with what the pipeline
// needs beside it: the defaults to fill, and a fast path for schemas that only
// name a type (most output schemas), which need no decoding at all.
type valueSchema struct {
	sch      *jsonschema.Schema
	defaults *defaults
	onlyType string        // the type, when the schema says nothing else that constrains
	simple   *simpleObject // the fast path for simple object schemas, or nil
}

// annotationKeys constrain nothing.
var annotationKeys = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"examples": true, "default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

func newValueSchema(sch *jsonschema.Schema, raw json.RawMessage) *valueSchema {
	vs := &valueSchema{sch: sch, defaults: collectDefaults(gjson.ParseBytes(raw)), simple: compileSimple(gjson.ParseBytes(raw))}
	only := ""
	simple := true
	gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
		switch {
		case annotationKeys[k.Str]:
		case k.Str == "type" && v.Type == gjson.String && v.Str != "integer":
			only = v.Str
		default:
			simple = false
		}
		return simple
	})
	if simple {
		if only == "" {
			only = "any"
		}
		vs.onlyType = only
	}
	return vs
}

// validate checks a JSON value. It returns the violations, or nil.
func (vs *valueSchema) validate(raw []byte) []Violation {
	if vs.onlyType != "" && jsonType(raw) != "" {
		if vs.onlyType == "any" || vs.onlyType == jsonType(raw) {
			return nil
		}
	}
	if !validJSON(raw) {
		return []Violation{{Pointer: "", Message: "is not valid JSON"}}
	}
	if vs.simple != nil && vs.simple.valid(raw) {
		return nil
	}
	err := vs.sch.Validate(decode(gjson.ParseBytes(raw)))
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []Violation{{Message: err.Error()}}
	}
	var out []Violation
	for _, l := range leaves(ve) {
		out = append(out, Violation{Pointer: pointer(l.InstanceLocation), Message: describe(l.ErrorKind)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// validJSON is json.Valid at several times the speed; FuzzValidJSON checks
// that the two agree.
func validJSON(b []byte) bool { return gjson.ValidBytes(b) }

// decode turns valid JSON into the values the validator takes (numbers as
// json.Number, exact); it allocates a fraction of what encoding/json does.
func decode(r gjson.Result) any {
	switch r.Type {
	case gjson.String:
		return r.Str
	case gjson.Number:
		return json.Number(r.Raw)
	case gjson.True:
		return true
	case gjson.False:
		return false
	case gjson.Null:
		return nil
	}
	if r.IsArray() {
		out := []any{}
		r.ForEach(func(_, v gjson.Result) bool {
			out = append(out, decode(v))
			return true
		})
		return out
	}
	out := map[string]any{}
	r.ForEach(func(k, v gjson.Result) bool {
		out[k.Str] = decode(v)
		return true
	})
	return out
}

// jsonType names the JSON type of a value from its first byte.
func jsonType(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func pointer(loc []string) string {
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		s = strings.ReplaceAll(s, "~", "~0")
		b.WriteString(strings.ReplaceAll(s, "/", "~1"))
	}
	return b.String()
}

// defaults are the "default" values an object schema gives its properties,
// in the schema's order, with the defaults of nested object schemas.
type defaults struct {
	props []defaultProp
}

type defaultProp struct {
	name   string
	value  string // raw JSON; "" when the property has no default
	nested *defaults
}

func collectDefaults(sch gjson.Result) *defaults {
	props := sch.Get("properties")
	if !props.IsObject() {
		return nil
	}
	d := &defaults{}
	props.ForEach(func(k, v gjson.Result) bool {
		p := defaultProp{name: k.Str, nested: collectDefaults(v)}
		if def := v.Get("default"); def.Exists() {
			p.value = def.Raw
		}
		if p.value != "" || p.nested != nil {
			d.props = append(d.props, p)
		}
		return true
	})
	if len(d.props) == 0 {
		return nil
	}
	return d
}

// apply returns obj with every missing defaulted property added after the
// caller's own keys; the caller's keys, their order and their text are kept.
// It returns obj itself when nothing is missing.
func (d *defaults) apply(obj []byte) []byte {
	if d == nil {
		return obj
	}
	o := gjson.ParseBytes(obj)
	if !o.IsObject() {
		return obj
	}
	changed := false
	present := make([]bool, len(d.props)) // which defaulted properties the caller sent
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	o.ForEach(func(k, v gjson.Result) bool {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(k.Raw)
		b.WriteByte(':')
		val := []byte(v.Raw)
		for i, p := range d.props {
			if p.name != k.Str {
				continue
			}
			present[i] = true
			if p.nested != nil && v.IsObject() {
				nv := p.nested.apply(val)
				if len(nv) != len(val) {
					changed = true
				}
				val = nv
			}
		}
		b.Write(val)
		return true
	})
	for i, p := range d.props {
		if p.value == "" || present[i] {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(p.name)
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(p.value)
		changed = true
	}
	b.WriteByte('}')
	if !changed {
		return obj
	}
	return b.Bytes()
}
