package openapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

var kinSeeds = []string{
	`{"type":"object","properties":{"a":{"type":"string","maxLength":5,"pattern":"^a"},"b":{"$ref":"#/components/schemas/B"}},"required":["a"],"additionalProperties":false,"x-k":{"n":1}}`,
	`{"allOf":[{"$ref":"#/x"},{"type":["string","null"],"enum":["a",null,1.5],"default":"a","nullable":true}]}`,
	`{"items":{"type":"integer","minimum":-1,"exclusiveMinimum":true,"multipleOf":0.5},"minItems":1,"maxItems":9007199254740992,"uniqueItems":true}`,
	`{"$ref":"#/a","description":"siblings"}`,
	`{"Type":"string"}`,
	`{"type":"string","unknown":[1,{"a":null}],"example":{"x":[true]},"externalDocs":{"url":"https://e","x-e":1},"xml":{"name":"n"},"discriminator":{"propertyName":"k","mapping":{"a":"#/b"}}}`,
	`{"additionalProperties":{},"unevaluatedProperties":{"type":"string"},"unevaluatedItems":true,"prefixItems":[true,{"const":-0}],"$defs":{"d":false}}`,
	`{"minLength":1e21,"maxLength":-0,"minProperties":0.5}`,
	`{"properties":{"a":null},"items":null,"title":null}`,
	`{"if":{"minimum":1},"then":{"maximum":2},"else":{"not":{}},"dependentRequired":{"a":["b"]},"dependentSchemas":{"a":{}},"contentSchema":{"$ref":""}}`,
	`true`, `false`, `null`, `[]`, `"s"`,
}

// FuzzSchemaRefOfIsKins: where schemaRefOf reads a value, it is what
// kin-openapi's SchemaRef.UnmarshalJSON makes of the value's text: the
// value as encoding/json decodes the text (numbers float64), and as YAML
// would (whole numbers int or uint64).
func FuzzSchemaRefOfIsKins(f *testing.F) {
	for _, s := range kinSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"additionalProperties":{"maxLength":9007199254740993},"unevaluatedProperties":{"maxItems":18446744073709551615}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		sameAsKin(t, v)
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if d.Decode(&v) == nil {
			sameAsKin(t, yamlNumbers(v))
		}
	})
}

// sameAsKin fails t if schemaRefOf reads v other than kin-openapi reads
// v's JSON text.
func sameAsKin(t *testing.T, v any) {
	got, ok := schemaRefOf(v)
	if !ok {
		return
	}
	text, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("schemaRefOf read a value json.Marshal refuses: %v", err)
	}
	want := &openapi3.SchemaRef{}
	if err := want.UnmarshalJSON(text); err != nil {
		t.Fatalf("schemaRefOf read %s, which kin-openapi refuses: %v", text, err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("%s: schemaRefOf %s, kin-openapi %s", text, g, w)
	}
}

// yamlNumbers is v, decoded with json.Number, with its numbers as YAML
// decodes them: whole ones int (or uint64 past int64), others float64.
func yamlNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = yamlNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = yamlNumbers(e)
		}
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return int(n)
		}
		if n, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return n
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	}
	return v
}

// FuzzPathItemIsKins: decodePathItem decodes a path item as kin-openapi's
// PathItem.UnmarshalJSON does, or fails as it does; and with YAML's
// numbers, a document holding it decodes as kin-openapi decodes it whole.
func FuzzPathItemIsKins(f *testing.F) {
	f.Add([]byte(`{"parameters":[{"name":"a","in":"path","required":true,"schema":{"type":"string"}},{"$ref":"#/p"}],
		"get":{"parameters":[{"name":"q","in":"query","schema":{"type":"integer","minimum":1}}],
			"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object","properties":{"a":{"type":"string"}}}}}},"default":{"$ref":"#/r"},"x-r":1}},
		"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/s"}},"text/plain":{"schema":{"type":"string"},"example":"x"}}},"responses":{}}}`))
	f.Add([]byte(`{"GET":{"responses":{}},"get":{"responses":{"200":{"content":{"a/b":{"schema":{"type":"string"}}}}}}}`))
	f.Add([]byte(`{"get":{"Parameters":[],"parameters":[{"name":"a","in":"query","Schema":{},"schema":{"type":"string"}}]}}`))
	f.Add([]byte(`{"get":{"requestBody":{"content":{"a/b":{"schema":{"type":7}}}}}}`))
	f.Add([]byte(`{"query":{"responses":{"2XX":{"content":{"a/b":{"schema":true}}}}},"x-y":{"schema":{}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		text, err := json.Marshal(v)
		if err != nil {
			return
		}
		want := &openapi3.PathItem{}
		werr := want.UnmarshalJSON(text)
		got := &openapi3.PathItem{}
		gerr := decodePathItem(v, got)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("%s: error %v, kin-openapi's %v", text, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Fatalf("%s: decoded %s, kin-openapi %s", text, g, w)
		}
		// With YAML's numbers, in a document: decoded part by part as
		// kin-openapi decodes the whole.
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if d.Decode(&v) == nil {
			same(t, string(text), map[string]any{"openapi": "3.1.0", "info": map[string]any{"title": "t", "version": "1"},
				"paths": map[string]any{"/a": yamlNumbers(v)}})
		}
	})
}

// TestSchemaRefOfReadsYAMLNumbers: a YAML document's integers (which YAML
// decodes as integers, not float64) are read as kin-openapi reads the
// document's JSON text, and read at all (not left to kin-openapi).
func TestSchemaRefOfReadsYAMLNumbers(t *testing.T) {
	src := []byte(`openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /a:
    get:
      parameters:
        - {name: n, in: query, schema: {type: integer, minimum: -3, maximum: 9007199254740993, exclusiveMaximum: 12}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: array, maxItems: 18446744073709551615, minItems: 2, items: {enum: [1, 2.5, -7]}, default: [3]}
components:
  schemas:
    A: {type: string, maxLength: 12, minLength: 0, example: 5, x-n: 9007199254740993}
`)
	v, err := decodeYAML(src)
	if err != nil {
		t.Fatal(err)
	}
	g := v.(map[string]any)
	same(t, "YAML integers", g)
	if _, ok := schemaRefOf(g["components"].(map[string]any)["schemas"].(map[string]any)["A"]); !ok {
		t.Error("schemaRefOf left a schema of YAML integers to kin-openapi")
	}
}
