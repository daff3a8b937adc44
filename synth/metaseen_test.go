package synth

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// vouches says whether metaSeen compiles raw (after what m has seen), and
// fullOK whether the ordinary compile does.
func vouches(m *metaSeen, raw []byte) (fast, fullOK bool) {
	var ps Problems
	fullOK = compileSchema(raw, "input", false, &ps) != nil && len(ps.list) == 0
	doc, err := jsoncheck.Decode(context.Background(), raw, jsoncheck.MaxDocumentDepth, jsoncheck.Options{})
	if obj, ok := doc.(map[string]any); ok && err == nil {
		fast = m.compile(obj, "input") != nil
	}
	return fast, fullOK
}

// breakings are one-node changes that make a schema invalid, or of a shape
// metaSeen leaves to the ordinary compile.
var breakings = []map[string]any{
	{"type": "strin"},
	{"pattern": "(("},
	{"minLength": -1},
	{"required": "id"},
	{"properties": []any{}},
	{"$ref": "#/$defs/missing"},
	{"$ref": "other.json"},
	{"$id": "https://example.com/x"},
	{"$schema": "http://json-schema.org/draft-07/schema#"},
	{"items": []any{map[string]any{}}},
	{"patternProperties": map[string]any{"((": map[string]any{}}},
	{"allOf": []any{}},
	{"enum": "x"},
}

// TestMetaSeenAgrees: over real imported schemas, and each of them broken
// at one subschema after the whole was accepted (so that the rest of it
// is remembered), metaSeen never vouches for a schema the ordinary compile
// refuses (each subschema broken two of the ways breakings lists, in
// turn); and it vouches for every plain schema the ordinary compile
// accepts, the first time and every time after.
func TestMetaSeenAgrees(t *testing.T) {
	m := &metaSeen{ok: map[digest]struct{}{}}
	var corpus [][]byte
	f, err := os.Open("testdata/imported_input_schemas.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		corpus = append(corpus, append([]byte(nil), sc.Bytes()...))
	}
	vouched, refused, broken := 0, 0, 0
	for round := range 2 {
		for _, raw := range corpus {
			fast, full := vouches(m, raw)
			if !full {
				t.Fatalf("a corpus schema does not compile: %.200s", raw)
			}
			if !fast {
				t.Errorf("round %d: metaSeen left a plain schema to the ordinary compile: %.200s", round, raw)
			}
			vouched++
		}
	}
	for _, raw := range corpus {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for i, at := range subschemas(doc) {
			// Each subschema broken two ways, the ways taken in turn.
			for _, b := range []map[string]any{breakings[i%len(breakings)], breakings[(i+5)%len(breakings)]} {
				saved := map[string]any{}
				for k, v := range b {
					saved[k] = at[k]
					at[k] = v
				}
				mutated, _ := json.Marshal(doc)
				for k := range b {
					if saved[k] == nil {
						delete(at, k)
					} else {
						at[k] = saved[k]
					}
				}
				fast, full := vouches(m, mutated)
				if fast && !full {
					t.Fatalf("metaSeen vouched for a schema the ordinary compile refuses: %s", mutated)
				}
				broken++
				if !full {
					refused++
				}
			}
		}
	}
	t.Logf("%d plain schemas vouched for; %d broken ones, %d of them refused by the ordinary compile, none vouched for", vouched, broken, refused)
	if refused < broken/2 {
		t.Errorf("only %d of %d breakings break: the test no longer tests", refused, broken)
	}
}

// subschemas returns doc's objects at schema places, doc first.
func subschemas(doc map[string]any) []map[string]any {
	out := []map[string]any{doc}
	for k, v := range doc {
		switch {
		case metaPlaceOne[k]:
			if s, ok := v.(map[string]any); ok {
				out = append(out, subschemas(s)...)
			}
		case metaPlaceMap[k]:
			if m, ok := v.(map[string]any); ok {
				for _, x := range m {
					if s, ok := x.(map[string]any); ok {
						out = append(out, subschemas(s)...)
					}
				}
			}
		case metaPlaceList[k]:
			if l, ok := v.([]any); ok {
				for _, x := range l {
					if s, ok := x.(map[string]any); ok {
						out = append(out, subschemas(s)...)
					}
				}
			}
		}
	}
	return out
}

// TestUncheckedBaseSkipsTheMetaCheck: what metaseen.go rests on for its
// speed (not its verdicts): jsonschema does not check a document at a
// json-schema.org address against the meta-schema. If a release of it
// starts to, this fails and the second check is only slower.
func TestUncheckedBaseSkipsTheMetaCheck(t *testing.T) {
	doc := map[string]any{"title": 5.0} // the meta-schema wants a string
	c := newCompiler()
	if err := c.AddResource(uncheckedBase+"t.json", doc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile(uncheckedBase + "t.json"); err != nil {
		t.Errorf("at %s: %v; want no meta-schema check", uncheckedBase, err)
	}
	c = newCompiler()
	if err := c.AddResource("tool:///t.json", doc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("tool:///t.json"); err == nil {
		t.Error("at tool:///: compiled; want the meta-schema's refusal")
	}
}

// TestMetaSeenLeavesOutsideAddresses: a $ref that is not a fragment of
// the document, wherever it sits (where jsonschema compiles data as a
// schema: "dependencies", what another $ref names), is left to the
// ordinary compile, which refuses it (a cold review found the first way
// vouching for these: they resolve to jsonschema's own meta-schema from
// the json-schema.org address).
func TestMetaSeenLeavesOutsideAddresses(t *testing.T) {
	for _, raw := range outsideAddresses {
		fast, full := vouches(&metaSeen{ok: map[digest]struct{}{}}, []byte(raw))
		if fast || full {
			t.Errorf("%s: metaSeen vouches %v, the ordinary compile %v; want neither", raw, fast, full)
		}
	}
}

var outsideAddresses = []string{
	`{"dependencies":{"a":{"$ref":"/draft/2020-12/schema"}}}`,
	`{"$ref":"#/x-a","x-a":{"$ref":"/draft/2020-12/schema"}}`,
	`{"$ref":"#/x-a","x-a":{"$ref":"../draft/2020-12/schema"}}`,
	`{"properties":{"a":{"$ref":"#/x-a"}},"x-a":{"type":"object","properties":{"b":{"$ref":"/draft/2020-12/schema"}}}}`,
}

// FuzzMetaSeenAgrees: after metaSeen has seen one schema, it never vouches
// for another that the ordinary compile refuses, nor panics.
func FuzzMetaSeenAgrees(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"}}}`), []byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"strin"}}}`))
	f.Add([]byte(`{"$defs":{"x":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/x"}}}`), []byte(`{"$defs":{"x":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/y"}}}`))
	f.Add([]byte(`{"items":{"pattern":"^a"}}`), []byte(`{"items":{"pattern":"(("}}`))
	f.Add([]byte(`{"allOf":[{"minimum":1}]}`), []byte(`{"anyOf":[{"minimum":"1"}]}`))
	for _, raw := range outsideAddresses {
		f.Add([]byte(`{"type":"object"}`), []byte(raw))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		m := &metaSeen{ok: map[digest]struct{}{}}
		for _, raw := range [][]byte{a, b, a} {
			if fast, full := vouches(m, raw); fast && !full {
				t.Fatalf("vouched for a schema the ordinary compile refuses: %s (after %s)", raw, a)
			}
		}
	})
}

// TestSchemaPlacesAreTheMetaSchemas: metaPlaceOne, metaPlaceMap and metaPlaceList
// are the places where the Draft 2020-12 meta-schema (jsonschema's copy)
// checks a value as a schema whatever holds it: a member whose schema is
// {"$dynamicRef": "#meta"}, an object of them, or a list of them.
func TestSchemaPlacesAreTheMetaSchemas(t *testing.T) {
	one, objects, lists := map[string]bool{}, map[string]bool{}, map[string]bool{}
	isMeta := func(s *jsonschema.Schema) bool {
		return s != nil && s.DynamicRef != nil && s.DynamicRef.Anchor == "meta"
	}
	c := jsonschema.NewCompiler()
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) { // the meta-schema: allOf the vocabularies' $refs
		if s.Ref != nil {
			walk(s.Ref)
		}
		for _, sub := range s.AllOf {
			walk(sub)
		}
		for k, p := range s.Properties {
			ap, _ := p.AdditionalProperties.(*jsonschema.Schema)
			switch {
			case isMeta(p):
				one[k] = true
			case isMeta(ap):
				objects[k] = true
			case p.Ref != nil && isMeta(p.Ref.Items2020):
				lists[k] = true
			}
		}
	}
	walk(c.MustCompile(jsonschema.Draft2020.String()))
	for _, c := range []struct {
		name      string
		derived   map[string]bool
		hardcoded map[string]bool
	}{{"metaPlaceOne", one, metaPlaceOne}, {"metaPlaceMap", objects, metaPlaceMap}, {"metaPlaceList", lists, metaPlaceList}} {
		if !maps.Equal(c.derived, c.hardcoded) {
			t.Errorf("%s is %v; the meta-schema's are %v", c.name, slices.Sorted(maps.Keys(c.hardcoded)), slices.Sorted(maps.Keys(c.derived)))
		}
	}
}
