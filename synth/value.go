package synth

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/httptools/httptools/internal/jsoncheck"
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

// DecodeCost is the bytes decoding a value allocates per byte of its JSON,
// rounded up for the memory budget: 9 MiB of small objects of short strings
// and numbers allocate 8.9 bytes a byte.
const DecodeCost = 10

// decodes says whether validate needs raw decoded (the schema constrains
// more than its type, and the fast path for simple objects does not decide).
func (vs *valueSchema) decodes(raw []byte) bool {
	if vs.onlyType != "" && (vs.onlyType == "any" || vs.onlyType == jsonType(raw)) {
		return false
	}
	return vs.simple == nil || !vs.simple.valid(raw)
}

// validate checks a JSON value that jsoncheck has already accepted (one
// well-formed value, unique names, within the depth limit). It returns the
// violations, or nil. The value is decoded in one linear pass that stops when
// ctx ends.
func (vs *valueSchema) validate(ctx context.Context, raw []byte, o jsoncheck.Options) []Violation {
	if vs.onlyType != "" && (vs.onlyType == "any" || vs.onlyType == jsonType(raw)) {
		return nil
	}
	if vs.simple != nil && vs.simple.valid(raw) {
		return nil
	}
	v, err := jsoncheck.Decode(ctx, raw, jsoncheck.MaxDocumentDepth, o)
	if err != nil {
		return []Violation{{Pointer: "", Message: err.Error()}}
	}
	if err := ctx.Err(); err != nil {
		return []Violation{{Pointer: "", Message: "was not checked: the call's deadline passed"}}
	}
	err = vs.sch.Validate(v)
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
