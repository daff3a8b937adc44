package synth

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// simpleObject is the fast path for the most common input schema: an object
// whose properties name a type and perhaps integer bounds (minimum,
// maximum, exclusiveMinimum, exclusiveMaximum), string lengths (minLength,
// maxLength), a format (an annotation in 2020-12) or an enum of strings
// (what imported APIs' parameters say), with required keys and perhaps
// additionalProperties: false. For such a schema, valid answers without
// decoding the input or running the full validator
// (BenchmarkValidateBoundedInput measures both on the same schema and
// input).
//
// It agrees with the validator by construction where it can: it is built
// from the same schema document the validator compiles, by one function
// (compileSimple, with simplePropOf) that lists each keyword it understands
// and refuses the schema for any other; the types it clears and its test of
// each are one table (simpleTypes). It only ever says "certainly valid";
// on false the validator runs, so every refusal and its violations are the
// validator's. FuzzSimpleObjectAgrees holds it to that both ways over
// imported, generated and fuzzed schemas and instances: fast valid ⇒
// validator valid, and validator valid on a schema it takes ⇒ fast valid,
// except for numbers written with a point or an exponent, or beyond int64,
// which it leaves to the validator.
type simpleObject struct {
	props    map[string]simpleProp
	nreq     int
	closed   bool
	required uint64 // bit i set: the property with bit i is required
}

type simpleProp struct {
	typ string // "" means any
	bit uint64 // its bit in required, 0 if optional
	// A number must be an integer literal within [lo, hi] to be certainly
	// valid, when either bound is set (anything else goes to the full
	// validator).
	hasLo, hasHi bool
	lo, hi       int64
	// A string's length in code points is within [minLen, maxLen]; -1: no bound.
	minLen, maxLen int
	enum           map[string]bool // a string must be one of these; nil: no enum
}

// simpleTypes is the one list of the types the fast path understands, each
// with its test of a value: a property's type is cleared at compile time
// only if it is here, and valid reads the same test.
var simpleTypes = map[string]func(v gjson.Result) bool{
	"":        func(gjson.Result) bool { return true }, // no type: any value
	"string":  func(v gjson.Result) bool { return v.Type == gjson.String },
	"boolean": func(v gjson.Result) bool { return v.Type == gjson.True || v.Type == gjson.False },
	"null":    func(v gjson.Result) bool { return v.Type == gjson.Null },
	"number":  func(v gjson.Result) bool { return v.Type == gjson.Number },
	"integer": func(v gjson.Result) bool { return v.Type == gjson.Number && integerWritten(v) },
	"object":  func(v gjson.Result) bool { return v.IsObject() },
	"array":   func(v gjson.Result) bool { return v.IsArray() },
}

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
			ok = dialectKey(v.Str) == packDialect
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
	p := simpleProp{minLen: -1, maxLen: -1}
	if !ps.IsObject() {
		return p, ps.Type == gjson.True // true accepts anything; false nothing
	}
	ok := true
	ps.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "$schema", "$id":
			ok = false
		case "type":
			ok = v.Type == gjson.String && v.Str != "" && simpleTypes[v.Str] != nil
			p.typ = v.Str
		case "minimum", "exclusiveMinimum":
			var n int64
			n, ok = integerLiteral(v)
			if ok && k.Str == "exclusiveMinimum" {
				ok, n = n < math.MaxInt64, n+1 // only integers are cleared here
			}
			if ok && (!p.hasLo || n > p.lo) {
				p.lo = n
			}
			p.hasLo = true
		case "maximum", "exclusiveMaximum":
			var n int64
			n, ok = integerLiteral(v)
			if ok && k.Str == "exclusiveMaximum" {
				ok, n = n > math.MinInt64, n-1
			}
			if ok && (!p.hasHi || n < p.hi) {
				p.hi = n
			}
			p.hasHi = true
		case "minLength", "maxLength":
			n, good := integerLiteral(v)
			ok = good && n >= 0 && n <= maxLength
			if k.Str == "minLength" {
				p.minLen = int(n)
			} else {
				p.maxLen = int(n)
			}
		case "format":
			// An annotation in Draft 2020-12 (the only dialect cleared
			// here), which the validator is not asked to assert.
			ok = v.Type == gjson.String
		case "enum":
			ok = v.IsArray() && p.enum == nil
			p.enum = map[string]bool{}
			v.ForEach(func(_, e gjson.Result) bool {
				ok = ok && e.Type == gjson.String
				p.enum[e.Str] = true
				return ok
			})
		default:
			ok = annotationKeys[k.Str]
		}
		return ok
	})
	return p, ok
}

// maxLength is the largest length bound the fast path takes.
const maxLength = 1 << 30

// integerLiteral is v's value when v is a JSON number written as an integer
// that fits an int64 ("1", "-20"; not "1.0", "1e2" or 2^63).
func integerLiteral(v gjson.Result) (int64, bool) {
	if v.Type != gjson.Number || !integerWritten(v) {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	return n, err == nil
}

// integerWritten reports whether the number v is written without a point
// or an exponent. The validator also takes 1.0 and 1e2 as integers: the
// fast path leaves those to it.
func integerWritten(v gjson.Result) bool { return !strings.ContainsAny(v.Raw, ".eE") }

// certain reports whether v, a value of the property's type, is certainly
// within the property's bounds, lengths and enum.
func (p *simpleProp) certain(v gjson.Result) bool {
	if p.enum != nil && (v.Type != gjson.String || !p.enum[v.Str]) {
		return false // an enum of strings takes nothing else
	}
	switch v.Type {
	case gjson.Number:
		if !p.hasLo && !p.hasHi {
			return true
		}
		n, ok := integerLiteral(v)
		return ok && (!p.hasLo || n >= p.lo) && (!p.hasHi || n <= p.hi)
	case gjson.String:
		if p.minLen >= 0 || p.maxLen >= 0 {
			if !utf8.ValidString(v.Str) {
				return false // the validator counts what its decoder made of it
			}
			n := utf8.RuneCountInString(v.Str)
			return n >= p.minLen && (p.maxLen < 0 || n <= p.maxLen)
		}
	}
	return true
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
		if declared {
			ok = simpleTypes[p.typ](v) && p.certain(v)
		} else {
			ok = !s.closed
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
