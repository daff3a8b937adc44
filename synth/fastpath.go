package synth

import (
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// simpleObject is the fast path for the most common input schema: an object
// whose properties only name a type, with required keys and perhaps
// additionalProperties: false. For such a schema, valid answers without
// decoding the input or running the full validator. It only ever says
// "certainly valid"; on false the full validator runs and finds the
// violations, so the verdict is always the full validator's
// (a fuzz test holds the two to the same verdicts).
type simpleObject struct {
	props    map[string]simpleProp
	nreq     int
	closed   bool
	required uint64 // bit i set: the property with bit i is required
}

type simpleProp struct {
	typ string // "" means any
	bit uint64 // its bit in required, 0 if optional
}

var simpleTypes = map[string]bool{"string": true, "boolean": true, "number": true, "integer": true, "object": true, "array": true, "null": true}

// compileSimple returns the fast path for a schema, or nil when the schema
// says more than the fast path understands.
func compileSimple(sch gjson.Result) *simpleObject {
	s := &simpleObject{props: map[string]simpleProp{}}
	ok := true
	sawType := false
	var required []string
	sch.ForEach(func(k, v gjson.Result) bool {
		switch {
		case annotationKeys[k.Str] && k.Str != "$schema":
		case k.Str == "$schema":
			ok = dialectKey(v.Str) == "json-schema.org/draft/2020-12/schema"
		case k.Str == "type":
			ok, sawType = v.Str == "object", true
		case k.Str == "additionalProperties":
			ok = v.Type == gjson.True || v.Type == gjson.False
			s.closed = v.Type == gjson.False
		case k.Str == "required":
			ok = v.IsArray()
			for _, r := range v.Array() {
				ok = ok && r.Type == gjson.String
				required = append(required, r.Str)
			}
		case k.Str == "properties":
			ok = v.IsObject()
			v.ForEach(func(name, ps gjson.Result) bool {
				p, good := simplePropOf(ps)
				s.props[name.Str] = p
				ok = ok && good
				return ok
			})
		default:
			ok = false
		}
		return ok
	})
	if !ok || !sawType || len(required) > 64 {
		return nil
	}
	for _, r := range required {
		p, declared := s.props[r]
		if !declared {
			return nil // the full validator reports it; keep it simple
		}
		if p.bit == 0 {
			p.bit = 1 << s.nreq
			s.nreq++
			s.required |= p.bit
			s.props[r] = p
		}
	}
	return s
}

func simplePropOf(ps gjson.Result) (simpleProp, bool) {
	if !ps.IsObject() {
		return simpleProp{}, ps.Type == gjson.True // true accepts anything; false nothing
	}
	p := simpleProp{}
	ok := true
	ps.ForEach(func(k, v gjson.Result) bool {
		switch {
		case annotationKeys[k.Str] && k.Str != "$schema" && k.Str != "$id":
		case k.Str == "type":
			ok = v.Type == gjson.String && simpleTypes[v.Str]
			p.typ = v.Str
		default:
			ok = false
		}
		return ok
	})
	return p, ok
}

// valid reports whether raw, a valid JSON document, is certainly valid.
func (s *simpleObject) valid(raw []byte) bool {
	o := gjson.Parse(unsafeString(raw)) // read here only, never kept
	if !o.IsObject() {
		return false
	}
	ok := true
	var seen uint64
	o.ForEach(func(k, v gjson.Result) bool {
		p, declared := s.props[k.Str]
		switch {
		case !declared:
			ok = !s.closed
		case p.typ == "":
		case p.typ == "string":
			ok = v.Type == gjson.String
		case p.typ == "boolean":
			ok = v.Type == gjson.True || v.Type == gjson.False
		case p.typ == "null":
			ok = v.Type == gjson.Null
		case p.typ == "number":
			ok = v.Type == gjson.Number
		case p.typ == "integer":
			ok = v.Type == gjson.Number && !strings.ContainsAny(v.Raw, ".eE")
		case p.typ == "object":
			ok = v.IsObject()
		case p.typ == "array":
			ok = v.IsArray()
		}
		if seen&p.bit != 0 {
			ok = false // a duplicate key: let the full validator decide
		}
		seen |= p.bit
		return ok
	})
	return ok && seen&s.required == s.required
}

// unsafeString views b as a string without copying it, for a read that
// ends before b can change (gjson's ParseBytes copies the whole input).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
