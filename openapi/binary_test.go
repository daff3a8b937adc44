package openapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/httptools/httptools/httpspec"
	toolstest "github.com/httptools/httptools/httptest"
	"github.com/httptools/httptools/openapi"
	"github.com/httptools/httptools/synth"
)

// binaryDoc answers an image, a PDF, octet-stream, a content key that is
// no media type, and one operation both
// JSON and a PNG (which keeps JSON).
const binaryDoc = `{"openapi": "3.0.3", "info": {"title": "Files", "version": "1.0.0"},
  "servers": [{"url": "https://api.example.com"}],
  "paths": {
    "/logo": {"get": {"operationId": "logo", "responses": {"200": {"description": "ok", "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}}}},
    "/invoice": {"get": {"operationId": "invoice", "responses": {"200": {"description": "ok", "content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}}}}},
    "/blob": {"get": {"operationId": "blob", "responses": {"200": {"description": "ok", "content": {"application/octet-stream": {}}}}}},
    "/odd": {"get": {"operationId": "odd", "responses": {"200": {"description": "ok", "content": {"string": {}}}}}},
    "/both": {"get": {"operationId": "both", "responses": {"200": {"description": "ok", "content": {"image/png": {}, "application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string"}}}}}}}}}
  }}`

// binaryDoc2 is Swagger 2.0's file answer.
const binaryDoc2 = `{"swagger": "2.0", "info": {"title": "Files", "version": "1.0"}, "host": "api.example.com", "schemes": ["https"],
  "paths": {"/export": {"get": {"operationId": "export", "produces": ["application/zip"], "responses": {"200": {"description": "ok", "schema": {"type": "file"}}}}}}}`

// TestBinaryAnswersImport: an operation answering an image, a PDF,
// octet-stream or a Swagger 2.0 file imports as a tool (none skipped):
// parseJson false, an output of base64 text of its media type, a
// description line naming the type (none for a content key that is no
// media type, Cloudflare's "string"); --check flags none. Before: 5 of
// these 6 operations were skipped as "a binary answer".
func TestBinaryAnswersImport(t *testing.T) {
	want := map[string]string{"files.logo": "image/png", "files.invoice": "application/pdf", "files.blob": "application/octet-stream", "files.export": "application/zip"}
	tools := 0
	for _, doc := range []string{binaryDoc, binaryDoc2} {
		res, err := openapi.Import([]byte(doc), openapi.Options{Prefix: "files"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Skipped) != 0 {
			t.Errorf("skipped: %s %v", res.Summary(), res.Warnings)
		}
		rep, err := openapi.Check([]byte(doc), openapi.Options{Prefix: "files"}, res.Manifests)
		if err != nil || rep.Tools != len(res.Manifests) || rep.Flagged != 0 {
			t.Errorf("check: %v, %d checked, %d flagged of %d", err, rep.Tools, rep.Flagged, len(res.Manifests))
		}
		for _, m := range res.Manifests {
			tools++
			var v struct {
				Description string         `json:"description"`
				Output      map[string]any `json:"output"`
				Spec        struct {
					ParseJSON *bool `json:"parseJson"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(m.JSON, &v); err != nil {
				t.Fatal(err)
			}
			if m.ID == "files.odd" { // a content key that is no media type is not named
				if v.Output["contentMediaType"] != nil || !strings.HasSuffix(v.Description, "The answer is a file.") {
					t.Errorf("odd: %v %q", v.Output, v.Description)
				}
				continue
			}
			mt, binary := want[m.ID]
			if !binary {
				if m.ID != "files.both" || v.Output["type"] != "object" || v.Spec.ParseJSON != nil {
					t.Errorf("%s: %v parseJson %v, want the JSON answer", m.ID, v.Output, v.Spec.ParseJSON)
				}
				continue
			}
			if v.Output["contentMediaType"] != mt || v.Output["contentEncoding"] != "base64" || v.Spec.ParseJSON == nil || *v.Spec.ParseJSON {
				t.Errorf("%s: output %v parseJson %v", m.ID, v.Output, v.Spec.ParseJSON)
			}
			if !strings.HasSuffix(v.Description, "The answer is a file of type "+mt+".") {
				t.Errorf("%s: description %q", m.ID, v.Description)
			}
		}
	}
	if tools != 6 {
		t.Errorf("%d tools, want 6", tools)
	}
}

// TestImportedImageToolAnswersPNG: the imported logo tool, called against
// an upstream answering PNG bytes, returns those bytes (base64) with
// image/png — what MCP turns into an image block and REST returns with
// its media type (server's TestBinaryAnswersAsMediaBlocks).
func TestImportedImageToolAnswersPNG(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	up := toolstest.NewUpstream()
	defer up.Close()
	up.Script(toolstest.Response{Status: 200, Headers: map[string]string{"Content-Type": "image/png"}, Body: &png})
	res, err := openapi.Import([]byte(binaryDoc), openapi.Options{Prefix: "files", Operations: []string{"logo"}})
	if err != nil || len(res.Manifests) != 1 {
		t.Fatalf("%v: %s", err, res.Summary())
	}
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(up.Client()))
	tool, err := (&synth.Loader{Registry: reg}).Load(res.Manifests[0].JSON)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b64 string
	if err := json.Unmarshal(r.Output, &b64); err != nil {
		t.Fatal(err)
	}
	got, _ := base64.StdEncoding.DecodeString(b64)
	if r.MediaType != "image/png" || string(got) != png || len(up.Requests()) != 1 {
		t.Errorf("media type %q, %d bytes, %d requests; want image/png, %d bytes, 1", r.MediaType, len(got), len(up.Requests()), len(png))
	}
}
