package openapi

import (
	"encoding/json"
	"testing"
)

// FuzzRepair: whatever shape a document has, repair finds its broken
// parts without a panic, and a second repair has nothing left to remove.
func FuzzRepair(f *testing.F) {
	f.Add([]byte(`{"openapi":"3.0.0","paths":{"/a":{"parameters":[{"$ref":"#/components/responses/R"}],"get":{"responses":{"200":{"$ref":"#/components/requestBodies/B"}}}}},"components":{"responses":{"R":{"description":"r"}},"requestBodies":{"B":{"content":{}}},"schemas":{"S":{"type":5},"T":{"$ref":"#/components/schemas/Gone"}}}}`))
	f.Add([]byte(`{"info":{"description":{"$ref":"d.md"}},"tags":[{"name":"t","description":[1]}],"components":{"schemas":{"A":{"properties":{"x":{"$ref":"#/components/schemas/A~1b"}},"example":{"$ref":"#/nothing"}}}}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		var doc map[string]any
		if json.Unmarshal(src, &doc) != nil || doc == nil {
			return
		}
		var skips []skip
		repair(doc, &skips)
		if repair(doc, &skips) {
			t.Fatalf("a second repair changed the document: %v", doc)
		}
	})
}
