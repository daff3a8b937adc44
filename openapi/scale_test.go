package openapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/httptools/httptools/synth"
)

// stripeShaped makes a document shaped like Stripe's: n components, each
// with long descriptions, expandable members (anyOf an id or another
// component), a member of its own kind (recursion), and an operation to
// read and to create each. Inlined, its schemas grow without bound.
func stripeShaped(n int) []byte {
	comps := map[string]any{}
	paths := map[string]any{}
	long := strings.Repeat("Describes this member at the length real API descriptions have. ", 4)
	for i := range n {
		props := map[string]any{"id": map[string]any{"type": "string", "description": long}}
		for j := range 12 {
			props[fmt.Sprintf("field_%d", j)] = map[string]any{"type": "string", "maxLength": 5000, "description": long}
		}
		for j := 1; j <= 4; j++ {
			props[fmt.Sprintf("related_%d", j)] = map[string]any{
				"anyOf":       []any{map[string]any{"type": "string"}, map[string]any{"$ref": fmt.Sprintf("#/components/schemas/c%d", (i+j*7)%n)}},
				"description": long, "nullable": true,
			}
		}
		props["parent"] = map[string]any{"$ref": fmt.Sprintf("#/components/schemas/c%d", i)}
		comps[fmt.Sprintf("c%d", i)] = map[string]any{"type": "object", "properties": props, "required": []string{"id"}}
		paths[fmt.Sprintf("/v1/c%d/{id}", i)] = map[string]any{
			"get": map[string]any{"operationId": fmt.Sprintf("GetC%d", i), "summary": "Retrieve one.",
				"parameters": []any{map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}},
				"responses":  map[string]any{"200": map[string]any{"description": "ok", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": fmt.Sprintf("#/components/schemas/c%d", i)}}}}}},
			"post": map[string]any{"operationId": fmt.Sprintf("PostC%d", i), "summary": "Update one.",
				"parameters":  []any{map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}},
				"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": fmt.Sprintf("#/components/schemas/c%d", i)}}}},
				"responses":   map[string]any{"200": map[string]any{"description": "ok", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": fmt.Sprintf("#/components/schemas/c%d", i)}}}}}},
		}
	}
	doc := map[string]any{"openapi": "3.0.0", "info": map[string]any{"title": "Shaped", "version": "1.0.0"},
		"servers": []any{map[string]any{"url": "https://api.example.com"}}, "paths": paths, "components": map[string]any{"schemas": comps}}
	b, _ := json.Marshal(doc)
	return b
}

// TestSharedSchemasStayShared: shared and recursive schemas are $defs
// referred to with $ref, so that every manifest of a Stripe-shaped
// document stays within the budget; what was cut is said.
func TestSharedSchemasStayShared(t *testing.T) {
	res, err := Import(stripeShaped(120), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifests) != 240 {
		t.Fatalf("%d manifests: %s", len(res.Manifests), res.Summary())
	}
	cut := 0
	for _, w := range res.Warnings {
		if strings.Contains(w, "the manifest is cut to") {
			cut++
		}
	}
	biggest := 0
	for _, m := range res.Manifests {
		biggest = max(biggest, len(m.JSON))
		if len(m.JSON) > maxManifestBytes {
			t.Errorf("%s is %d bytes", m.ID, len(m.JSON))
		}
	}
	if cut == 0 {
		t.Error("no manifest needed a cut: the document does not test the budget")
	}
	t.Logf("%s; %d cut, the biggest %d bytes", res.Summary(), cut, biggest)

	// Recursion is kept as a reference, and the tool validates with it.
	one, err := Import(stripeShaped(3), Options{Operations: []string{"GetC0"}})
	if err != nil || len(one.Manifests) != 1 {
		t.Fatal(err, one.Summary())
	}
	var m struct {
		Output map[string]any `json:"output"`
	}
	json.Unmarshal(one.Manifests[0].JSON, &m)
	parent, _ := m.Output["properties"].(map[string]any)["parent"].(map[string]any)
	if parent["$ref"] != "#/$defs/c0" {
		t.Errorf("the member of its own kind is %v, want a $ref to #/$defs/c0", parent)
	}
	tool, err := synth.Load(one.Manifests[0].JSON)
	if err != nil {
		t.Fatal(err)
	}
	if tool.ID() != "example.get-c0" {
		t.Errorf("id %s", tool.ID())
	}
}

func BenchmarkImportStripeShaped(b *testing.B) {
	src := stripeShaped(300)
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		res, err := Import(src, Options{})
		if err != nil || len(res.Manifests) != 600 {
			b.Fatal(err)
		}
	}
}

// BenchmarkImportCorpus imports every trimmed real document of testdata.
func BenchmarkImportCorpus(b *testing.B) {
	docs, _ := filepath.Glob("testdata/*.json")
	yamls, _ := filepath.Glob("testdata/*.yaml")
	var srcs [][]byte
	for _, d := range append(docs, yamls...) {
		src, _ := os.ReadFile(d)
		srcs = append(srcs, src)
	}
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		ops = 0
		for _, src := range srcs {
			res, err := Import(src, Options{})
			if err != nil {
				b.Fatal(err)
			}
			ops += res.Operations
		}
	}
	b.ReportMetric(float64(ops), "operations")
}
