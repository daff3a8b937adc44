package synth

import (
	"strings"

	"encoding/json"
	"github.com/tidwall/gjson"
	"testing"
)

// FuzzValidJSON checks that validJSON (gjson's validator, used on every
// input and response for speed) agrees with encoding/json on every document.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,2,"x"]`, `"\u00e9"`, `1e5`, `-0.5`, `{"a":[true,false,null]}`, "\"\x01\"",
		`01`, `1.`, `.5`, `"\x"`, "\"\xff\"", `{"a":1,}`, `[1,]`, ` 1 `, `tru`, `nul`, `{"a" 1}`, `[`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if json.Valid(b) != validJSON(b) {
			t.Fatalf("%q: encoding/json says %v, validJSON %v", b, json.Valid(b), validJSON(b))
		}
	})
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{`{"a":[1,{"b":null}],"c":"\u00e9\n","d":9007199254740993,"e":true,"f":false,"a":2}`, `[]`, `{}`} {
		var want any
		dec := json.NewDecoder(stringsReader(s))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		got := decode(parse(s))
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		if string(wb) != string(gb) {
			t.Errorf("%s: decode gives %s, encoding/json %s", s, gb, wb)
		}
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

func parse(s string) gjson.Result { return gjson.Parse(s) }

var simpleSchemas = []string{
	`{"type":"object","properties":{"owner":{"type":"string"},"n":{"type":"integer"},"f":{"type":"number"},"b":{"type":"boolean","description":"d"},"o":{"type":"object"},"a":{"type":"array"},"z":{"type":"null"},"any":{}},"required":["owner","n"]}`,
	`{"type":"object","properties":{"x":{"type":"integer"},"y":true},"additionalProperties":false,"required":["x"]}`,
	`{"type":"object","title":"t"}`,
}

// FuzzSimpleObjectAgrees checks that the fast path never calls valid what
// the full validator refuses.
func FuzzSimpleObjectAgrees(f *testing.F) {
	for _, in := range []string{`{"owner":"a","n":1}`, `{"owner":"a","n":1.0}`, `{"owner":"a","n":1e2}`, `{"owner":1,"n":1}`,
		`{"n":1}`, `{"x":1,"q":2}`, `{"x":1,"x":"s"}`, `{"owner":"a","n":1,"b":null}`, `[]`, `{"o":{},"a":[],"z":null,"any":[1]}`} {
		for i := range simpleSchemas {
			f.Add(i, in)
		}
	}
	var full []*valueSchema
	for _, s := range simpleSchemas {
		var ps Problems
		vs := compileSchema([]byte(s), "input", false, &ps)
		if vs == nil || vs.simple == nil {
			f.Fatalf("%s: want a fast path", s)
		}
		full = append(full, vs)
	}
	f.Fuzz(func(t *testing.T, i int, in string) {
		if i < 0 || i >= len(full) || !validJSON([]byte(in)) {
			return
		}
		vs := full[i]
		fast := vs.simple.valid([]byte(in))
		slow := vs.sch.Validate(decode(gjson.Parse(in))) == nil
		if fast && !slow {
			t.Fatalf("schema %d, input %s: fast path says valid, the validator does not", i, in)
		}
	})
}

func TestSimpleObjectScope(t *testing.T) {
	for s, want := range map[string]bool{
		simpleSchemas[0]: true,
		`{"type":"object","properties":{"x":{"type":"string","minLength":1}}}`:                      false,
		`{"type":"object","properties":{"x":{"type":["string","null"]}}}`:                           false,
		`{"type":"object","patternProperties":{"x":{}}}`:                                            false,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`:                     false,
		`{"type":"object","properties":{"x":{"type":"string","format":"email"}}}`:                   false,
		`{"properties":{"x":{"type":"string"}}}`:                                                    false,
		`{"type":"object","required":["undeclared"]}`:                                               false,
		`{"type":"object","properties":{"x":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`: false,
	} {
		if got := compileSimple(gjson.Parse(s)) != nil; got != want {
			t.Errorf("%s: fast path %v, want %v", s, got, want)
		}
	}
}
