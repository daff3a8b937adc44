package synth

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/tidwall/gjson"
)

// fastInputs are instances at the edges of what the fast path decides:
// each type, integers written as 1.0 or 1e2, bounds and their neighbours,
// lengths in code points, enums, unknown and missing members.
var fastInputs = []string{`{"owner":"a","n":1}`, `{"owner":"a","n":1.0}`, `{"owner":"a","n":1e2}`, `{"owner":1,"n":1}`,
	`{"n":1}`, `{"x":1,"q":2}`, `{"owner":"a","n":1,"b":null}`, `[]`, `{"o":{},"a":[],"z":null,"any":[1]}`,
	`{"limit":1}`, `{"limit":0}`, `{"limit":100}`, `{"limit":101}`, `{"limit":1.5}`, `{"limit":-0}`, `{"limit":1e1}`, `{"limit":"1"}`,
	`{"limit":5,"page":-3}`, `{"limit":5,"page":-2}`, `{"limit":5,"page":9007199254740992}`, `{"limit":5,"page":9007199254740993}`,
	`{"limit":5,"big":9223372036854775808}`, `{"limit":5,"big":-9223372036854775808}`,
	`{"state":"open"}`, `{"state":"Open"}`, `{"state":"\u00e9"}`, `{"state":"e\u0301"}`, `{"state":1}`, `{"any":"a"}`, `{"any":1}`, `{"any":null}`,
	`{"name":"ab"}`, `{"name":"a"}`, `{"name":"abcd"}`, `{"name":"éé"}`, `{"name":"\ud83d\ude00a"}`, `{"n":""}`, `{"n":5}`, `{"mail":"x"}`,
	`{"mail":"a@b.c"}`, `{"at":"yesterday"}`, `{"at":""}`, `{"file_id":"1"}`, `{"file_id":"1","fields":"a","version":"2"}`, `{"customer":"c","limit":3}`,
	`{}`, `{"p":1}`, `{"p":0}`, `{"p":4}`, `{"p":2.0}`, `{"p":"a"}`, `{"p":"abc"}`, `{"p":"1"}`, `{"p":null}`, `{"p":true}`, `{"p":[]}`, `{"p":{}}`, `{"p":"a","q":1}`}

// generatedSchemas are object schemas made of every property keyword the
// fast path understands, alone and together, for each type.
func generatedSchemas() []string {
	var out []string
	for _, typ := range []string{"", "string", "integer", "number", "boolean", "null", "object", "array"} {
		t := ""
		if typ != "" {
			t = fmt.Sprintf(`"type":%q,`, typ)
		}
		for _, kw := range []string{``, `"minimum":1,`, `"maximum":3,`, `"exclusiveMinimum":0,"exclusiveMaximum":4,`,
			`"minLength":1,"maxLength":2,`, `"enum":["a","1"],`, `"format":"date-time",`, `"description":"d",`} {
			for _, tail := range []string{`}}}`, `}},"required":["p"]}`, `}},"additionalProperties":false}`} {
				out = append(out, `{"type":"object","properties":{"p":{`+t+strings.TrimSuffix(kw, ",")+tail)
			}
		}
	}
	return out
}

// importedSchemas are the input schemas of the OpenAPI importer's golden
// manifests (testdata/imported_input_schemas.jsonl, one a line).
func importedSchemas(tb testing.TB) []string {
	file, err := os.Open("testdata/imported_input_schemas.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer file.Close()
	var out []string
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// FuzzSimpleObjectAgrees holds the fast path to its contract with the
// validator, over schemas (real imported ones, generated ones and whatever
// the fuzzer makes of them) and instances:
//
//   - fast says valid ⇒ the validator says valid (the fast path only ever
//     says "certainly valid"; any doubt goes to the validator, which decides
//     every refusal);
//   - the schema is one the fast path takes, the validator says valid, and
//     every top-level number is written as an integer that fits an int64 ⇒
//     fast says valid. Numbers written with a point or an exponent (1.0,
//     1e2) and integers beyond int64 are the only valid instances it may
//     leave to the validator.
func FuzzSimpleObjectAgrees(f *testing.F) {
	for _, s := range simpleSchemas {
		for _, in := range fastInputs {
			f.Add(s, in)
		}
	}
	for i, s := range importedSchemas(f) {
		for k := range 4 { // four instances each, a different four for the next
			f.Add(s, fastInputs[(4*i+k)%len(fastInputs)])
		}
	}
	for _, s := range generatedSchemas() {
		for _, in := range fastInputs[len(fastInputs)-13:] { // the instances with a member p
			f.Add(s, in)
		}
	}
	f.Fuzz(func(t *testing.T, schema, in string) {
		var ps Problems
		vs := compileSchema([]byte(schema), "input", false, &ps)
		if vs == nil || vs.simple == nil || jsoncheck.Check([]byte(in), jsoncheck.MaxDepth) != nil {
			return
		}
		fast := vs.simple.valid([]byte(in))
		v, err := jsoncheck.Decode(context.Background(), []byte(in), jsoncheck.MaxDepth, jsoncheck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		slow := vs.sch.Validate(v) == nil
		if fast && !slow {
			t.Fatalf("schema %s, input %s: the fast path says valid, the validator does not", schema, in)
		}
		if slow && !fast && onlyInt64Numbers(in) {
			t.Fatalf("schema %s, input %s: the validator says valid, the fast path declines", schema, in)
		}
	})
}

// onlyInt64Numbers reports whether every top-level member of the object in
// that is a number is written as an integer that fits an int64.
func onlyInt64Numbers(in string) bool {
	ok := true
	gjson.Parse(in).ForEach(func(_, v gjson.Result) bool {
		if v.Type == gjson.Number {
			_, ok = integerLiteral(v)
		}
		return ok
	})
	return ok
}

// TestImportedSchemasTakeTheFastPath: how many of the importer's golden
// input schemas the fast path takes (logged; at least one, so the fuzz
// seeds above reach it).
func TestImportedSchemasTakeTheFastPath(t *testing.T) {
	schemas, taken := importedSchemas(t), 0
	for _, s := range schemas {
		var ps Problems
		if vs := compileSchema([]byte(s), "input", false, &ps); vs != nil && vs.simple != nil {
			taken++
		}
	}
	if taken == 0 {
		t.Fatalf("the fast path takes none of the %d imported schemas", len(schemas))
	}
	t.Logf("the fast path takes %d of %d imported input schemas", taken, len(schemas))
}
