package synth

import (
	"context"
	"testing"

	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/tidwall/gjson"
)

var simpleSchemas = []string{
	`{"type":"object","properties":{"owner":{"type":"string"},"n":{"type":"integer"},"f":{"type":"number"},"b":{"type":"boolean","description":"d"},"o":{"type":"object"},"a":{"type":"array"},"z":{"type":"null"},"any":{}},"required":["owner","n"]}`,
	`{"type":"object","properties":{"x":{"type":"integer"},"y":true},"additionalProperties":false,"required":["x"]}`,
	`{"type":"object","title":"t"}`,
	`{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":100},"page":{"type":"number","exclusiveMinimum":-3,"exclusiveMaximum":9007199254740993},"big":{"minimum":-9223372036854775808,"maximum":9223372036854775807}},"required":["limit"]}`,
	`{"type":"object","properties":{"state":{"type":"string","enum":["open","closed","é"]},"name":{"type":"string","minLength":2,"maxLength":3},"any":{"enum":["a"]},"n":{"minLength":1},"mail":{"type":"string","format":"email"},"at":{"format":"date-time","minLength":1}}}`,
}

func TestSimpleObjectScope(t *testing.T) {
	for s, want := range map[string]bool{
		simpleSchemas[0]: true,
		`{"type":"object","properties":{"x":{"type":"string","minLength":1}}}`:                                        true,
		`{"type":"object","properties":{"x":{"type":"integer","minimum":1.5}}}`:                                       false,
		`{"type":"object","properties":{"x":{"type":"integer","maximum":1e3}}}`:                                       false,
		`{"type":"object","properties":{"x":{"type":"integer","exclusiveMinimum":9223372036854775807}}}`:              false,
		`{"type":"object","properties":{"x":{"enum":["a",1]}}}`:                                                       false,
		`{"type":"object","properties":{"x":{"type":"string","pattern":"^a"}}}`:                                       false,
		`{"type":"object","properties":{"x":{"type":"string","minLength":-1}}}`:                                       false,
		`{"type":"object","properties":{"x":{"type":["string","null"]}}}`:                                             false,
		`{"type":"object","patternProperties":{"x":{}}}`:                                                              false,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`:                                       false,
		`{"type":"object","properties":{"x":{"type":"string","format":"email"}}}`:                                     true,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"x":{"format":"email"}}}`: false,
		`{"properties":{"x":{"type":"string"}}}`:                                                                      false,
		`{"type":"object","required":["undeclared"]}`:                                                                 false,
		`{"type":"object","properties":{"x":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`:                   false,
	} {
		if got := compileSimple(gjson.Parse(s)) != nil; got != want {
			t.Errorf("%s: fast path %v, want %v", s, got, want)
		}
	}
}

// FuzzValidateInput: tool input of any bytes is refused or accepted without
// a panic (a number like 1e999999 crashed the validator's big.Rat), and what
// is accepted is one JSON object that jsoncheck accepts.
func FuzzValidateInput(f *testing.F) {
	for _, in := range []string{`{"n":1}`, `{"n":1e999999}`, `{"s":"x","s":"y"}`, `{"a":[[[[]]]]}`, `{"n":-0.5e-3,"i":9007199254740993}`, `[]`, `{"s":"\u0000"}`} {
		f.Add(in)
	}
	tool, err := Load([]byte(`{"id":"t.f","description":"d","version":"1.0.0","mutating":false,"output":{},
		"input":{"type":"object","properties":{"n":{"type":"number","maximum":5,"multipleOf":0.5},"i":{"type":"integer","minimum":0},
		"s":{"type":"string","pattern":"^[a-z]+$","maxLength":8},"a":{"type":"array","items":{"$ref":"#/properties/a"}}},"additionalProperties":false}}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := tool.ValidateInput([]byte(in))
		if err != nil {
			return
		}
		if jsonType(out) != "object" || jsoncheck.Check(out, jsoncheck.MaxDepth) != nil {
			t.Fatalf("accepted %q as %q", in, out)
		}
	})
}

// BenchmarkValidateBoundedInput: an imported API's usual input (an id, a
// bounded integer, an enum, a format) checked by the fast path, against
// the full validator on the same schema and input in the same run.
func BenchmarkValidateBoundedInput(b *testing.B) {
	schema := `{"type":"object","properties":{"id":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":100},` +
		`"state":{"type":"string","enum":["open","closed"]},"since":{"type":"string","format":"date-time"}},"required":["id"]}`
	in := []byte(`{"id":"data.json","limit":30,"state":"open","since":"2026-12-04T00:00:00Z"}`)
	var ps Problems
	vs := compileSchema([]byte(schema), "input", false, &ps)
	if vs == nil || vs.simple == nil {
		b.Fatal("want a fast path")
	}
	full := *vs
	full.simple = nil
	for _, c := range []struct {
		name string
		vs   *valueSchema
	}{{"fast", vs}, {"full", &full}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v := c.vs.validate(context.Background(), in, jsoncheck.Options{}); v != nil {
					b.Fatal(v)
				}
			}
		})
	}
}
