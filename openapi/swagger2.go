package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/getkin/kin-openapi/openapi2"
)

// Swagger 2.0 documents before their conversion: the defaults 2.0 has and
// 3.0 lost, and the parts that do not decode left out with the operations
// that use them.

// csvArrays writes 2.0's default collectionFormat, csv, on every array
// parameter that names none (outside the body): converted without it, an
// array would be sent as a repeated parameter (3.0's form default),
// which a 2.0 API reads as its last value only.
func csvArrays(doc map[string]any) {
	fix := func(list any) {
		ps, _ := list.([]any)
		for _, p := range ps {
			pm, _ := p.(map[string]any)
			if pm == nil || pm["in"] == "body" || pm["type"] != "array" {
				continue
			}
			if _, ok := pm["collectionFormat"]; !ok {
				pm["collectionFormat"] = "csv"
			}
		}
	}
	if top, ok := doc["parameters"].(map[string]any); ok {
		for _, p := range top {
			fix([]any{p})
		}
	}
	paths, _ := doc["paths"].(map[string]any)
	for _, it := range paths {
		item, _ := it.(map[string]any)
		fix(item["parameters"])
		for m, o := range item {
			if methods[m] {
				if op, ok := o.(map[string]any); ok {
					fix(op["parameters"])
				}
			}
		}
	}
}

// repair2 leaves out what of a 2.0 document does not decode — a
// definition, a shared parameter or response, an operation — and every
// operation that refers to a part left out (through other definitions
// too), noting each operation in skips. One bad schema costs its
// operations, not the document.
func repair2(doc map[string]any, skips *[]skip) {
	loosenTupleItems(doc)
	var bad []string // "#/definitions/x" and the like
	for _, g := range []struct {
		key    string
		decode func([]byte) error
	}{
		{"definitions", func(b []byte) error { var v openapi2.Schema; return json.Unmarshal(b, &v) }},
		{"parameters", func(b []byte) error { var v openapi2.Parameter; return json.Unmarshal(b, &v) }},
		{"responses", func(b []byte) error { var v openapi2.Response; return json.Unmarshal(b, &v) }},
	} {
		group, _ := doc[g.key].(map[string]any)
		for _, name := range sortedKeys(group) {
			b, err := json.Marshal(group[name])
			if err == nil {
				err = g.decode(b)
			}
			if err != nil {
				delete(group, name)
				bad = append(bad, "#/"+g.key+"/"+name)
			}
		}
	}
	refersTo := func(v any) string {
		b, _ := json.Marshal(v)
		for _, t := range bad {
			if bytes.Contains(b, []byte(`"`+t+`"`)) {
				return t
			}
		}
		return ""
	}
	// Definitions that use a bad one are bad too.
	for changed := len(bad) > 0; changed; {
		changed = false
		defs, _ := doc["definitions"].(map[string]any)
		for _, name := range sortedKeys(defs) {
			if refersTo(defs[name]) != "" {
				delete(defs, name)
				bad = append(bad, "#/definitions/"+name)
				changed = true
			}
		}
	}
	paths, _ := doc["paths"].(map[string]any)
	for _, p := range sortedKeys(paths) {
		item, _ := paths[p].(map[string]any)
		for _, m := range sortedKeys(item) {
			if !methods[m] {
				continue
			}
			b, err := json.Marshal(item[m])
			if err == nil {
				var op openapi2.Operation
				err = json.Unmarshal(b, &op)
			}
			switch ref := refersTo(item[m]); {
			case err != nil:
				skipOperation(item, p, m, fmt.Sprintf("it is not a valid operation object: %s", cut(err.Error(), 160)), skips)
			case ref != "":
				skipOperation(item, p, m, fmt.Sprintf("%s (it does not decode)", ref[2:]), skips)
			}
		}
		if ref := refersTo(item["parameters"]); ref != "" {
			for _, m := range sortedKeys(item) {
				if methods[m] {
					skipOperation(item, p, m, fmt.Sprintf("%s (it does not decode)", ref[2:]), skips)
				}
			}
		}
	}
}

// loosenTupleItems replaces an items given as a list (Slack's way of
// writing "one of these", which 2.0 has no word for) by an items that
// accepts any value: the schema then decodes, and the operations that use
// it import, their member checked by the API instead.
func loosenTupleItems(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, list := e.([]any); list && k == "items" {
				x[k] = map[string]any{}
				continue
			}
			loosenTupleItems(e)
		}
	case []any:
		for _, e := range x {
			loosenTupleItems(e)
		}
	}
}
