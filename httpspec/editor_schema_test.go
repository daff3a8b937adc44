package httpspec_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

var updateEditorSchema = flag.Bool("update", false, "rewrite docs/http-tool.schema.json")

const editorSchemaFile = "../docs/http-tool.schema.json"

// editorSchema is the schema editors use for an http manifest: the Tool
// definition's, its spec also checked as HttpToolSpec (which synth checks
// through httpspec.SpecSchema at load), in one file an editor can read.
func editorSchema(t *testing.T) []byte {
	var tool, spec map[string]any
	if err := json.Unmarshal(synth.ToolSchema(), &tool); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(httpspec.SpecSchema(), &spec); err != nil {
		t.Fatal(err)
	}
	defs := tool["$defs"].(map[string]any)
	// The spec's own definitions join the tool's, under their names.
	for k, v := range spec["$defs"].(map[string]any) {
		if _, clash := defs[k]; clash {
			t.Fatalf("definition %s is in both schemas", k)
		}
		defs[k] = v
	}
	delete(spec, "$defs")
	delete(spec, "$schema")
	delete(spec, "$id")
	delete(spec, "$comment")
	defs["HttpToolSpec"] = spec
	props := tool["properties"].(map[string]any)
	props["spec"] = map[string]any{"$ref": "#/$defs/HttpToolSpec"}
	tool["$id"] = "https://httptools.dev/schemas/http-tool.1.3.0.json"
	tool["$comment"] = "Generated from synth/tool.schema.json and httpspec/spec.schema.json by go test ./httpspec -run TestEditorSchema -update: the schema of a manifest of kind \"http\", for editors (\"$schema\" in a manifest). httptools itself checks each part with its own file."
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(tool); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestEditorSchema: docs/http-tool.schema.json is the two schemas joined,
// up to date; every fixture and example manifest passes it, a manifest
// naming it in "$schema" loads, and a wrong spec fails it at its path.
func TestEditorSchema(t *testing.T) {
	want := editorSchema(t)
	if *updateEditorSchema {
		if err := os.WriteFile(editorSchemaFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(editorSchemaFile)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is not up to date (go test ./httpspec -run TestEditorSchema -update): %v", editorSchemaFile, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("editor.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("editor.json")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, g := range []string{"../fixtures/tools/*.json", "../docs/examples/*.json"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".cases.json") {
			continue
		}
		src, _ := os.ReadFile(f)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s fails the editor schema: %v", f, err)
		}
		n++
	}
	if n < 5 {
		t.Fatalf("only %d manifests checked", n)
	}
	manifest := `{"$schema":"../docs/http-tool.schema.json","id":"x.y","description":"d","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{},"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/x"}}`
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(nil))
	if _, err := (&synth.Loader{Registry: reg}).Load([]byte(manifest)); err != nil {
		t.Errorf("a manifest with $schema does not load: %v", err)
	}
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(strings.Replace(manifest, `"GET"`, `"FETCH"`, 1)))
	if err := sch.Validate(bad); err == nil || !strings.Contains(err.Error(), "/spec/method") {
		t.Errorf("a wrong method: %v", err)
	}
}
