package openapi

import (
	"encoding/json"
	"testing"
)

// TestCheckerReadsTheManifest: the checker reads a manifest in its own
// types (synth.Manifest, the importer's metadata, httpspec.Spec); one that
// does not decode, or names an operation the document lacks, is a finding
// of its class, not a panic or a silent pass.
func TestCheckerReadsTheManifest(t *testing.T) {
	doc := []byte(`openapi: 3.0.3
info: {title: Read, version: '1'}
servers: [{url: 'https://api.example.com'}]
paths:
  /items:
    get:
      operationId: list
      responses: {"200": {description: ok}}
`)
	res, err := Import(doc, Options{Prefix: "example"})
	if err != nil || len(res.Manifests) != 1 {
		t.Fatalf("%v %v", err, res)
	}
	right := res.Manifests[0]
	for _, tc := range []struct {
		name   string
		class  string
		mutate func(m map[string]any)
	}{
		{"metadata not an object", ClassDescribe, func(m map[string]any) { m["metadata"] = "list" }},
		{"spec's URL not a string", ClassDescribe, func(m map[string]any) { m["spec"].(map[string]any)["urlTemplate"] = 7 }},
		{"no such path", ClassPath, func(m map[string]any) {
			m["metadata"].(map[string]any)["openapi"].(map[string]any)["path"] = "/nothing"
		}},
		{"no such method", ClassMethod, func(m map[string]any) {
			m["metadata"].(map[string]any)["openapi"].(map[string]any)["method"] = "DELETE"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			json.Unmarshal(right.JSON, &m)
			tc.mutate(m)
			b, _ := json.Marshal(m)
			rep, err := Check(doc, Options{}, []Manifest{{ID: right.ID, JSON: b}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Findings) != 1 || rep.Findings[0].Class != tc.class {
				t.Errorf("want one finding of class %s, got %v", tc.class, rep.Findings)
			}
		})
	}
}
