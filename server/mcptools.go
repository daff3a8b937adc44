package server

import (
	"encoding/json"
	"strings"

	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// MCPTool is a tool as MCP clients see it: its name, description, schemas
// and annotations, and how its output becomes structuredContent.
type MCPTool struct {
	Tool *mcp.Tool
	// Wrapped is set when the output schema is not an object schema: MCP
	// requires one, so the output is offered as {"result": <output>}.
	Wrapped bool
}

// NewMCPTool describes a loaded tool for MCP:
//
//   - inputSchema is the manifest's input, with "type": "object" added when
//     it says nothing of its type (MCP clients refuse a tool without it,
//     and a call's input is always an object);
//   - outputSchema is the manifest's output when it is an object schema;
//     any other output ({"type":"string"}, an array, a union, {}) is wrapped
//     as {"type":"object","properties":{"result": …},"required":["result"]},
//     its local $refs rewritten to point inside "result", and calls return
//     structuredContent {"result": <output>};
//   - annotations come from the manifest (see the README's table).
func NewMCPTool(t *synth.Tool) MCPTool {
	m := t.Manifest()
	mt := &mcp.Tool{Name: t.ID(), Description: m.Description, InputSchema: mcpInputSchema(m.Input)}
	out := MCPTool{Tool: mt}
	if len(m.Output) > 0 {
		if gjson.GetBytes(m.Output, "type").String() == "object" && gjson.GetBytes(m.Output, "type").Type == gjson.String {
			mt.OutputSchema = json.RawMessage(m.Output)
		} else {
			mt.OutputSchema = wrapOutputSchema(m.Output)
			out.Wrapped = true
		}
	}
	mt.Annotations = annotations(t)
	if t.OutsideData() {
		mt.Meta = mcp.Meta{OutsideDataMeta: true}
	}
	mt.Title = mt.Annotations.Title
	return out
}

// mcpInputSchema makes the input schema one MCP accepts.
func mcpInputSchema(raw json.RawMessage) json.RawMessage {
	typ := gjson.GetBytes(raw, "type")
	switch {
	case len(raw) == 0:
		return json.RawMessage(`{"type":"object"}`)
	case typ.Type == gjson.String && typ.Str == "object":
		return raw
	case !typ.Exists() && gjson.ParseBytes(raw).IsObject():
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil {
			m["type"] = json.RawMessage(`"object"`)
			b, _ := json.Marshal(m)
			return b
		}
	}
	return json.RawMessage(`{"type":"object"}`)
}

// wrapOutputSchema puts a schema under "result", with its local references
// ("#", "#/$defs/x") rewritten to keep pointing at the same place.
func wrapOutputSchema(raw json.RawMessage) json.RawMessage {
	var inner any
	if err := json.Unmarshal(raw, &inner); err != nil {
		inner = map[string]any{}
	}
	wrapper := map[string]any{
		"type":       "object",
		"properties": map[string]any{"result": rewriteRefs(inner)},
		"required":   []string{"result"},
	}
	if d, ok := inner.(map[string]any); ok {
		if s, ok := d["$schema"]; ok {
			wrapper["$schema"] = s
			delete(d, "$schema")
		}
	}
	b, _ := json.Marshal(wrapper)
	return b
}

func rewriteRefs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "$ref" && strings.HasPrefix(s, "#") {
				v[k] = "#/properties/result" + strings.TrimPrefix(s, "#")
				continue
			}
			v[k] = rewriteRefs(x)
		}
	case []any:
		for i, x := range v {
			v[i] = rewriteRefs(x)
		}
	}
	return v
}

// annotations maps the manifest to MCP's hints (the README has the table).
func annotations(t *synth.Tool) *mcp.ToolAnnotations {
	m := t.Manifest()
	method := ""
	idemKey := false
	if m.Spec != nil && m.Spec.Kind == "http" {
		method = strings.ToUpper(gjson.GetBytes(m.Spec.Raw, "method").String())
		gjson.GetBytes(m.Spec.Raw, "headers").ForEach(func(_, h gjson.Result) bool {
			idemKey = idemKey || strings.EqualFold(h.Get("name").String(), "Idempotency-Key")
			return !idemKey
		})
	}
	kinds := map[string]bool{}
	for _, e := range m.Effects {
		kinds[e.Kind] = true
	}
	readOnly := !m.IsMutating()
	destructive := !readOnly && (kinds["deletes"] || method == "DELETE" || (kinds["writes"] && (method == "PUT" || method == "PATCH")))
	idempotent := readOnly || method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" || idemKey
	open := true // an HTTP API is outside the agent's world
	return &mcp.ToolAnnotations{
		Title:           title(m),
		ReadOnlyHint:    readOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  idempotent,
		OpenWorldHint:   &open,
	}
}

// title is metadata.title when it is a string, else the id in words:
// "github.get-issue" → "Get issue (github)".
func title(m *synth.Manifest) string {
	if t := gjson.GetBytes(m.Metadata, "title"); t.Type == gjson.String && t.Str != "" {
		return t.Str
	}
	ns, name, ok := strings.Cut(m.ID, ".")
	if !ok {
		name, ns = m.ID, ""
	}
	words := strings.Join(strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || r == '.' }), " ")
	if words == "" {
		return m.ID
	}
	words = strings.ToUpper(words[:1]) + words[1:]
	if ns != "" {
		words += " (" + ns + ")"
	}
	return words
}
