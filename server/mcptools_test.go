package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPToolsAsClientsSeeThem: every tool lists with an object input and
// output schema (non-object outputs wrapped under "result", $refs
// rewritten), annotations from the manifest, and structuredContent that
// matches; over HTTP tools.listChanged is advertised to 2026-07-28
// (subscriptions/listen), not to an older version's stateless initialize.
func TestMCPToolsAsClientsSeeThem(t *testing.T) {
	r := newRig(t)
	dir := r.srv.cfg.ToolsDir
	up := strings.TrimSuffix(gjsonURL(t, r), "/")
	for name, body := range map[string]string{
		"text.json": `{"id":"t.text","description":"Text.","version":"1.0.0","mutating":false,"input":{"properties":{"id":{"type":"string"}}},"output":{"type":"string"},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + up + `/text","parseJson":false}}`,
		"list.json": `{"id":"t.list-items","description":"List.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"array","items":{"$ref":"#/$defs/item"},"$defs":{"item":{"type":"object"}}},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + up + `/list"}}`,
		"del.json": `{"id":"t.delete-item","description":"Delete.","version":"1.0.0","mutating":true,"effects":[{"kind":"deletes"}],"input":{"type":"object"},"output":{"type":"object"},
			"spec":{"kind":"http","method":"DELETE","urlTemplate":"` + up + `/del"}}`,
		"allof.json": `{"id":"t.echo-all-of","description":"Echo, its output an allOf as importers write it.","version":"1.0.0","mutating":false,"input":{"type":"object","properties":{"id":{"type":"string"}}},
			"output":{"allOf":[{"$ref":"#/$defs/base"},{"properties":{"path":{"type":"string"}}}],"$defs":{"base":{"type":"object"}}},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + up + `/items/{id}"}}`,
		"untyped.json": `{"id":"t.echo-untyped","description":"Echo, its output untyped parts only.","version":"1.0.0","mutating":false,"input":{"type":"object","properties":{"id":{"type":"string"}}},
			"output":{"allOf":[{"properties":{"path":{"type":"string"}}}]},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + up + `/items/{id}"}}`,
		"create.json": `{"id":"t.create","description":"Create.","version":"1.0.0","mutating":true,"metadata":{"title":"Create a thing"},"input":{"type":"object"},"output":{"type":"object"},
			"spec":{"kind":"http","method":"POST","urlTemplate":"` + up + `/create","headers":[{"name":"Idempotency-Key","value":""}]}}`,
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	cs := mcpSession(t, r.http.URL, r.keyA)
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("HTTP capabilities under 2026-07-28 %+v: want tools.listChanged", caps.Tools)
	}
	old, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.http.URL + "/mcp",
		HTTPClient: &http.Client{Transport: keyTransport{key: r.keyA}}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if caps := old.InitializeResult().Capabilities; old.InitializeResult().ProtocolVersion != "2025-11-25" || caps.Tools == nil || caps.Tools.ListChanged {
		t.Errorf("HTTP capabilities under %s %+v: want tools without listChanged", old.InitializeResult().ProtocolVersion, caps.Tools)
	}
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range list.Tools {
		byName[tl.Name] = tl
		in, _ := json.Marshal(tl.InputSchema)
		if !strings.Contains(string(in), `"type":"object"`) {
			t.Errorf("%s: input schema %s", tl.Name, in)
		}
		if tl.OutputSchema != nil {
			out, _ := json.Marshal(tl.OutputSchema)
			var o map[string]any
			json.Unmarshal(out, &o)
			if o["type"] != "object" {
				t.Errorf("%s: output schema %s is not an object schema", tl.Name, out)
			}
		}
		if tl.Annotations == nil || tl.Annotations.OpenWorldHint == nil || !*tl.Annotations.OpenWorldHint || tl.Annotations.DestructiveHint == nil {
			t.Errorf("%s: annotations %+v", tl.Name, tl.Annotations)
		}
	}
	lo, _ := json.Marshal(byName["t.list-items"].OutputSchema)
	if !strings.Contains(string(lo), `"$ref":"#/properties/result/$defs/item"`) {
		t.Errorf("wrapped $ref not rewritten: %s", lo)
	}
	for name, want := range map[string]struct {
		title                             string
		readOnly, destructive, idempotent bool
	}{
		"t.echo":        {"Echo (t)", true, false, true},
		"t.delete-item": {"Delete item (t)", false, true, true},
		"t.create":      {"Create a thing", false, false, true},
		"t.mail":        {"Mail (t)", false, false, false},
	} {
		a := byName[name].Annotations
		if a.Title != want.title || a.ReadOnlyHint != want.readOnly || *a.DestructiveHint != want.destructive || a.IdempotentHint != want.idempotent {
			t.Errorf("%s: %+v (destructive %v), want %+v", name, a, *a.DestructiveHint, want)
		}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.text", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("text call: %+v %v", res, err)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if !strings.HasPrefix(string(sc), `{"result":"`) {
		t.Errorf("text structuredContent %s", sc)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "7"}})
	if err != nil || res.IsError {
		t.Fatalf("echo call: %+v %v", res, err)
	}
	sc, _ = json.Marshal(res.StructuredContent)
	if !strings.Contains(string(sc), `"path":"/items/7"`) {
		t.Errorf("echo structuredContent %s", sc)
	}
	// An allOf with an object part admits objects only: offered as it is
	// (no "result"), and a call's structuredContent is the object itself.
	ao, _ := json.Marshal(byName["t.echo-all-of"].OutputSchema)
	if strings.Contains(string(ao), `"result"`) || !strings.Contains(string(ao), `"type":"object"`) || !strings.Contains(string(ao), `"$ref":"#/$defs/base"`) {
		t.Errorf("allOf output schema %s", ao)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.echo-all-of", Arguments: map[string]any{"id": "8"}})
	if err != nil || res.IsError {
		t.Fatalf("allOf call: %+v %v", res, err)
	}
	sc, _ = json.Marshal(res.StructuredContent)
	if !strings.HasPrefix(string(sc), `{"`) || strings.HasPrefix(string(sc), `{"result"`) || !strings.Contains(string(sc), `"path":"/items/8"`) {
		t.Errorf("allOf structuredContent %s", sc)
	}
	// Parts that say no type admit any value: still wrapped.
	if uo, _ := json.Marshal(byName["t.echo-untyped"].OutputSchema); !strings.Contains(string(uo), `"result"`) {
		t.Errorf("untyped allOf output schema %s", uo)
	}
	_ = synth.CodeHandlerError
}

func gjsonURL(t *testing.T, r *rig) string {
	tool, _ := r.srv.Tools().Tool("t.echo")
	var spec struct {
		URLTemplate string `json:"urlTemplate"`
	}
	json.Unmarshal(tool.Manifest().Spec.Raw, &spec)
	return strings.TrimSuffix(spec.URLTemplate, "/items/{id}")
}

// TestMCPServerSharedAcrossTenants: the HTTP MCP server is built once per
// tool set, and each call still runs for its own request's tenant and
// person.
func TestMCPServerSharedAcrossTenants(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if err := r.store.PutSecret(ctx, "tenant-a", synth.SecretRef{EnvName: "production", Name: "TOKEN"}, "tok-a"); err != nil {
		t.Fatal(err)
	}
	a, b := mcpSession(t, r.http.URL, r.keyA), mcpSession(t, r.http.URL, r.keyB)
	for range 3 {
		ra, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "t.secret", Arguments: map[string]any{}})
		if err != nil || ra.IsError || !strings.Contains(ra.Content[0].(*mcp.TextContent).Text, fingerprint("Bearer tok-a")) {
			t.Fatalf("tenant A: %+v %v", ra, err)
		}
		rb, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "t.secret", Arguments: map[string]any{}})
		if err != nil || !rb.IsError || !strings.Contains(rb.Content[0].(*mcp.TextContent).Text, "secret-unavailable") {
			t.Fatalf("tenant B used A's secret: %+v %v", rb, err)
		}
	}
	if s1, s2 := r.srv.Tools().mcpServer(r.srv), r.srv.Tools().mcpServer(r.srv); s1 != s2 {
		t.Error("the MCP server is rebuilt per request")
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if r.srv.Tools().mcp != nil {
		t.Error("a reloaded tool set starts without a server; it is built on first use")
	}
}

// TestToolsListPaginates: past the SDK's page size (1000), tools/list
// answers in pages with a cursor, and a client walking them sees every tool.
func TestToolsListPaginates(t *testing.T) {
	r := newRig(t)
	dir := r.srv.cfg.ToolsDir
	up := strings.TrimSuffix(gjsonURL(t, r), "/")
	for i := range 1001 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("gen%04d.json", i)), []byte(fmt.Sprintf(`{"id":"gen.tool-%04d","description":"Generated.","version":"1.0.0","mutating":false,
			"input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"%s/items/x"}}`, i, up)), 0o644)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	total := len(r.srv.Tools().IDs())
	cs := mcpSession(t, r.http.URL, r.keyA)
	first, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(first.Tools) != 1000 || first.NextCursor == "" {
		t.Fatalf("first page: %d tools, cursor %q, %v", len(first.Tools), first.NextCursor, err)
	}
	seen := 0
	for _, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		seen++
	}
	if seen != total {
		t.Errorf("walked %d tools of %d", seen, total)
	}
}
