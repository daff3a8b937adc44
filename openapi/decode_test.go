package openapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestDecodeDocumentIsKinsDecode: decoding a document part by part, on
// every core, gives the document kin-openapi's whole-document decoder
// gives, for every OpenAPI 3 description in testdata and for the shapes
// decodeDocument leaves to that decoder (paths not an object, a null path
// item, a schema that does not decode).
func TestDecodeDocumentIsKinsDecode(t *testing.T) {
	var docs []string
	filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".yaml")) && !strings.Contains(p, "golden") {
			docs = append(docs, p)
		}
		return nil
	})
	parted := 0
	for _, p := range docs {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		v, err := decodeYAML(src)
		g, _ := v.(map[string]any)
		if err != nil || g == nil || g["openapi"] == nil {
			continue // not an OpenAPI 3 document (Swagger 2, a fragment)
		}
		if _, ok := decodeParts(g); ok {
			parted++
		}
		same(t, p, g)
	}
	if parted < 5 {
		t.Errorf("only %d of testdata's documents decoded part by part", parted)
	}
	for name, doc := range map[string]string{
		"paths not an object": `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": []}`,
		"null path item":      `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/a": null}}`,
		"bad schema":          `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}, "components": {"schemas": {"A": {"type": 7}}}}`,
		"bad path item":       `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"get": "no"}}}`,
		"extensions":          `{"openapi": "3.0.3", "x-top": 1, "info": {"title": "t", "version": "1"}, "paths": {"x-p": 2, "/a": {"get": {"responses": {}}}}, "components": {"x-c": 3, "schemas": {"A": {"type": "string"}}, "parameters": {"P": {"name": "p", "in": "query"}}}}`,
		"no components":       `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"get": {"responses": {}}}}}`,
	} {
		var g map[string]any
		if err := json.Unmarshal([]byte(doc), &g); err != nil {
			t.Fatal(err)
		}
		same(t, name, g)
	}
}

// same checks decodeDocument against kin-openapi's decoder of the whole.
func same(t *testing.T, name string, g map[string]any) {
	t.Helper()
	data, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	want := &openapi3.T{}
	werr := want.UnmarshalJSON(data)
	got, gerr := decodeDocument(g)
	if (werr != nil) != (gerr != nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Errorf("%s: error %v, kin-openapi's %v", name, gerr, werr)
		return
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Errorf("%s: decoded apart it is not what kin-openapi decodes whole (JSON equal: %v)", name, string(gj) == string(wj))
	}
}
