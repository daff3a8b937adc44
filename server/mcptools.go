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
		if t := gjson.GetBytes(m.Output, "type"); t.Type == gjson.String && t.Str == "object" {
			mt.OutputSchema = json.RawMessage(m.Output)
		} else if !t.Exists() && objectOnly(m.Output, m.Output, 0) {
			// An allOf with an object among its parts (an imported
			// description's base and extension) admits objects only: offered
			// as it is, with the type MCP asks for said at the top.
			mt.OutputSchema = withObjectType(m.Output)
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

// objectOnly says schema (a part of root) admits objects only: its type is
// "object", or one of its allOf parts admits objects only (allOf holds a
// value to every part), a local $ref followed.
func objectOnly(schema, root []byte, depth int) bool {
	if depth > 32 {
		return false
	}
	s := gjson.ParseBytes(schema)
	if ref := s.Get(`\$ref`); ref.Type == gjson.String {
		target, ok := localRef(root, ref.Str)
		return ok && objectOnly(target, root, depth+1)
	}
	if t := s.Get("type"); t.Type == gjson.String {
		return t.Str == "object"
	}
	for _, part := range s.Get("allOf").Array() {
		if objectOnly([]byte(part.Raw), root, depth+1) {
			return true
		}
	}
	return false
}

// localRef is the part of root a local reference (#/$defs/Name) names.
func localRef(root []byte, ref string) ([]byte, bool) {
	ptr, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var path []string
	for _, tok := range strings.Split(ptr, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		path = append(path, gjson.Escape(tok))
	}
	r := gjson.GetBytes(root, strings.Join(path, "."))
	return []byte(r.Raw), r.Exists()
}

// withObjectType is schema with "type": "object" at its top.
func withObjectType(schema json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(schema, &m) != nil {
		return schema
	}
	m["type"] = json.RawMessage(`"object"`)
	b, err := json.Marshal(m)
	if err != nil {
		return schema
	}
	return b
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
