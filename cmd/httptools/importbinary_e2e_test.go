package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestImportedImageToolServed: an OpenAPI operation whose answer is a PNG
// is imported as a tool (it was skipped before issue 42), and served: over
// REST the output is the upstream's bytes in base64 with meta.mediaType
// image/png, and the Go SDK's
// MCP client gets one image block with those bytes (inside the
// outside-data frame); 2 upstream requests.
func TestImportedImageToolServed(t *testing.T) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/charts/7.png" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(onePixelPNG)
	}))
	t.Cleanup(up.Close)
	doc := filepath.Join(t.TempDir(), "charts.yaml")
	os.WriteFile(doc, []byte(`openapi: 3.0.3
info: {title: Charts, version: "1"}
servers: [{url: "`+up.URL+`"}]
paths:
  /charts/{id}.png:
    get:
      operationId: getChart
      summary: A chart as a PNG.
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        "200":
          description: the chart
          content: {image/png: {schema: {type: string, format: binary}}}
`), 0o644)
	tools := t.TempDir()
	if _, stderr, rc := runCLI(t, "import", "openapi", doc, "--prefix", "charts", "--out", tools, "--check"); rc != 0 {
		t.Fatalf("import: %d %s", rc, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(tools, "*.json"))
	if len(files) != 1 {
		t.Fatalf("%d manifests written, want 1", len(files))
	}
	state := t.TempDir()
	p := startServe(t, nil, append([]string{"--tools", tools, "--db", "sqlite:" + filepath.Join(state, "serve.db"), "--addr", "127.0.0.1:0"}, local...)...)
	st, body := p.do(t, p.key, "GET", "/v1/tools", "")
	if st != 200 || !strings.Contains(body, `"id":"charts.`) {
		t.Fatalf("tools: %d %s", st, body)
	}
	id := body[strings.Index(body, `"id":"charts.`)+6:]
	id = id[:strings.IndexByte(id, '"')]

	// REST: the output is the bytes' base64, with meta.mediaType.
	st, body = p.do(t, p.key, "POST", "/v1/tools/"+id+"/invoke", `{"input":{"id":"7"}}`)
	var out struct {
		Output string
		Meta   struct{ MediaType string }
	}
	json.Unmarshal([]byte(body), &out)
	if st != 200 || out.Meta.MediaType != "image/png" || out.Output != base64.StdEncoding.EncodeToString(onePixelPNG) {
		t.Errorf("REST: %d %.300s", st, body)
	}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(p.key)}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: id, Arguments: map[string]any{"id": "7"}})
	if err != nil || res.IsError {
		t.Fatalf("MCP: %+v %v", res, err)
	}
	// One image block, framed by the outside-data boundary's text blocks
	// (an imported tool's answer is outside data).
	var images []*mcp.ImageContent
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			images = append(images, c)
		case *mcp.TextContent:
		default:
			t.Errorf("MCP content %T", c)
		}
	}
	if len(images) != 1 || images[0].MIMEType != "image/png" || !bytes.Equal(images[0].Data, onePixelPNG) {
		t.Errorf("MCP: %d image blocks, want one image/png block of the upstream's bytes", len(images))
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("%d upstream requests, want 2", n)
	}
}
