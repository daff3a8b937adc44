package openapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// imported decodes the manifests of res by id.
func imported(t *testing.T, res *Result) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, m := range res.Manifests {
		var v map[string]any
		if err := json.Unmarshal(m.JSON, &v); err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(m.ID, "example.")] = v
	}
	return out
}

func at(v any, path ...string) any {
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// TestImportClasses: what the importer got wrong on real descriptions,
// one operation a class: each imported as the API expects, or skipped
// with a reason the summary counts.
func TestImportClasses(t *testing.T) {
	doc := `{"openapi": "3.0.3", "info": {"title": "Classes", "version": "1.0.0"},
  "servers": [{"url": "https://api.example.com"}],
  "components": {"securitySchemes": {
    "email": {"type": "apiKey", "in": "header", "name": "X-Email"},
    "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
    "queryKey": {"type": "apiKey", "in": "query", "name": "api_key"},
    "bearer": {"type": "http", "scheme": "bearer"}}},
  "paths": {
    "/together": {"get": {"operationId": "together", "security": [{"email": [], "key": []}], "responses": {"200": {"description": "ok"}}}},
    "/query-key": {"get": {"operationId": "queryKey", "security": [{"queryKey": []}], "responses": {"200": {"description": "ok"}}}},
    "/either": {"get": {"operationId": "either", "security": [{"queryKey": []}, {"email": [], "key": []}, {"bearer": []}], "responses": {"200": {"description": "ok"}}}},
    "/no-schema": {"post": {"operationId": "noSchema", "requestBody": {"content": {"application/json": {}}}, "responses": {"204": {"description": "ok"}}}},
    "/array": {"post": {"operationId": "array", "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "array", "items": {"type": "integer"}}}}}, "responses": {"204": {"description": "ok"}}}},
    "/string": {"post": {"operationId": "string", "requestBody": {"content": {"application/json": {"schema": {"type": "string"}}}}, "responses": {"204": {"description": "ok"}}}},
    "/patch/{name}": {"patch": {"operationId": "patch", "parameters": [{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}],
      "requestBody": {"content": {"application/json-patch+json": {"schema": {"type": "array", "items": {"type": "object"}}}}}, "responses": {"200": {"description": "ok"}}}},
    "/merge": {"patch": {"operationId": "merge", "requestBody": {"content": {"application/merge-patch+json": {"schema": {"type": "object", "properties": {"a": {"type": "string"}}}}}}, "responses": {"200": {"description": "ok"}}}},
    "/tenant": {"post": {"operationId": "tenant", "parameters": [{"name": "Xero-Tenant-Id", "in": "header", "required": true, "schema": {"type": "string"}}, {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}],
      "requestBody": {"content": {"application/json": {"schema": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "id": {"type": "string", "readOnly": true}}}}}}, "responses": {"200": {"description": "ok"}}}},
    "/defaults": {"get": {"operationId": "defaults", "parameters": [
      {"name": "size", "in": "query", "schema": {"type": "string", "default": 20}},
      {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"], "default": "up"}},
      {"name": "code", "in": "query", "schema": {"type": "string", "pattern": "^(?!x)[a-z]+$"}},
      {"name": "who", "in": "query", "schema": {"oneOf": [{"type": "string"}, {"type": "string", "enum": ["me"]}]}}],
      "responses": {"200": {"description": "ok"}}}},
    "/token": {"post": {"operationId": "token", "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["client_secret"], "properties": {"client_secret": {"type": "string"}, "grant": {"type": "string"}}}}}}, "responses": {"200": {"description": "ok"}}}},
    "/send": {"post": {"operationId": "send", "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"api_key": {"type": "string"}, "to": {"type": "string"}}}}}}, "responses": {"200": {"description": "ok"}}}},
    "/search": {"get": {"operationId": "search", "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"query": {"type": "object"}}}}}}, "responses": {"200": {"description": "ok"}}}}
  }}`
	res, err := Import([]byte(doc), Options{Prefix: "example"})
	if err != nil {
		t.Fatal(err)
	}
	got := imported(t, res)
	// 1, 3: two credentials together, an API key in the query: skipped
	// and counted; where an alternative can be sent, it is.
	for _, id := range []string{"together", "query-key", "string"} {
		if got[id] != nil {
			t.Errorf("%s imported", id)
		}
	}
	// 5: a credential in the body: required, the operation is skipped;
	// optional, it is left out of the input.
	if n := res.Skipped[SkipCredential]; n != 3 || got["token"] != nil {
		t.Errorf("%d skipped for their credentials, want 3 (token among them): %s", n, res.Summary())
	}
	if at(got["send"], "input", "properties", "api_key") != nil || at(got["send"], "input", "properties", "to") == nil {
		t.Errorf("send: %v", at(got["send"], "input"))
	}
	if a := at(got["either"], "spec", "authorization", "kind"); a != "bearer" {
		t.Errorf("either: authorization %v, want the bearer alternative", a)
	}
	// 2: JSON bodies that are not one object, or have no schema: one
	// member sent whole, required when the body is (issue 43, class 1:
	// optional bodies stay optional).
	for id, bodyRequired := range map[string]bool{"no-schema": false, "array": true, "patch": false} {
		if tpl := at(got[id], "spec", "requestBody", "template"); tpl != "{body}" {
			t.Errorf("%s: body %v, want {body}", id, at(got[id], "spec", "requestBody"))
		}
		req, _ := at(got[id], "input", "required").([]any)
		if required := len(req) > 0 && req[len(req)-1] == "body"; required != bodyRequired {
			t.Errorf("%s: required %v, want body required %v", id, req, bodyRequired)
		}
	}
	if ty := at(got["array"], "input", "properties", "body", "type"); ty != "array" {
		t.Errorf("array: body member of type %v", ty)
	}
	if n := res.Skipped[SkipBody]; n != 1 {
		t.Errorf("%d skipped for their bodies (the bare string), want 1", n)
	}
	// 4: the media type is sent as the document names it.
	for id, ct := range map[string]string{"patch": "application/json-patch+json", "merge": "application/merge-patch+json"} {
		hs, _ := at(got[id], "spec", "headers").([]any)
		found := false
		for _, h := range hs {
			found = found || at(h, "name") == "Content-Type" && at(h, "value") == ct
		}
		if !found {
			t.Errorf("%s: headers %v, want Content-Type %s", id, hs, ct)
		}
	}
	// 7, 10, 11: header inputs are not sent again in the body; the
	// optional header is kept (sent only when given); the read-only id is
	// no input.
	tenant := got["tenant"]
	if at(tenant, "spec", "requestBody", "template") != "{body}" || at(tenant, "input", "properties", "body", "properties", "id") != nil ||
		at(tenant, "input", "properties", "x_trace") == nil {
		t.Errorf("tenant: %v", tenant)
	}
	if req, _ := at(tenant, "input", "required").([]any); len(req) != 1 {
		t.Errorf("tenant requires %v, want xero_tenant_id (its body is optional)", req)
	}
	// 6, 8, 13: defaults the member refuses and a pattern Go cannot
	// compile are dropped with a warning; oneOf is anyOf.
	props := at(got["defaults"], "input", "properties")
	if at(props, "size", "default") != nil || at(props, "sort", "default") != nil || at(props, "code", "pattern") != nil || at(props, "who", "anyOf") == nil {
		t.Errorf("defaults: %v", props)
	}
	w := strings.Join(res.Warnings, "\n")
	for _, want := range []string{"default 20 dropped", `default "up" dropped`, "pattern ^(?!x)[a-z]+$ dropped"} {
		if !strings.Contains(w, want) {
			t.Errorf("no warning %q in\n%s", want, w)
		}
	}
	// 11: a GET with a body sends it.
	if at(got["search"], "spec", "requestBody", "kind") != "json-input" {
		t.Errorf("search: %v", at(got["search"], "spec"))
	}
}

// TestSwagger2Classes: a definition that does not decode costs only the
// operations that use it; an array parameter without collectionFormat is
// sent comma-joined (2.0's default); a JSON document with escapes a YAML
// parser refuses is read as JSON.
func TestSwagger2Classes(t *testing.T) {
	doc := `{"swagger": "2.0", "info": {"title": "Two \ud83d\ude00", "version": "1.0"}, "host": "api.example.com", "schemes": ["https"],
  "definitions": {"Broken": {"type": "object", "properties": [{"name": "x"}]}, "Uses": {"type": "object", "properties": {"b": {"$ref": "#/definitions/Broken"}}}},
  "paths": {
    "/list": {"get": {"operationId": "list", "parameters": [{"name": "ids", "in": "query", "type": "array", "items": {"type": "string"}}], "responses": {"200": {"description": "ok"}}}},
    "/bad": {"post": {"operationId": "bad", "parameters": [{"name": "body", "in": "body", "schema": {"$ref": "#/definitions/Uses"}}], "responses": {"200": {"description": "ok"}}}}
  }}`
	res, err := Import([]byte(doc), Options{Prefix: "example"})
	if err != nil {
		t.Fatal(err)
	}
	got := imported(t, res)
	if tpl := at(got["list"], "spec", "urlTemplate"); tpl != "https://api.example.com/list{?ids}" {
		t.Errorf("list: %v, want ids comma-joined ({?ids}, not exploded)", tpl)
	}
	if got["bad"] != nil || res.Skipped[SkipBrokenComponent] != 1 {
		t.Errorf("bad imported or not counted: %s", res.Summary())
	}
}

// TestSharedFilesBesideTheDocument: schemas in a sibling folder
// (../common/) are read with RefsRoot naming their parent, each file once
// however many references name it, and a quoted scalar with a comment
// right after it ('…'# note) is read as other YAML parsers read it.
func TestSharedFilesBesideTheDocument(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "api"), 0o755)
	os.MkdirAll(filepath.Join(dir, "common"), 0o755)
	var paths strings.Builder
	for i := range 50 {
		fmt.Fprintf(&paths, `
  /things/%d:
    post:
      operationId: make%d
      requestBody:
        content:
          application/json:
            schema: {$ref: '../common/schemas.yaml#/Thing'}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: '../common/schemas.yaml#/Thing'}`, i, i)
	}
	main := "openapi: 3.0.3\ninfo: {title: Shared, version: '1'}\nservers: [{url: 'https://api.example.com'}]\npaths:" + paths.String() + "\n"
	os.WriteFile(filepath.Join(dir, "api", "main.yaml"), []byte(main), 0o644)
	os.WriteFile(filepath.Join(dir, "common", "schemas.yaml"), []byte(`Thing:
  type: object
  description: 'A thing'# the shared one
  properties:
    name: {type: string}
    part: {$ref: 'parts.yaml#/Part'}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "common", "parts.yaml"), []byte("Part: {type: object, properties: {size: {type: integer}}}\n"), 0o644)
	path := filepath.Join(dir, "api", "main.yaml")
	if _, err := Import([]byte(main), Options{Path: path, AllowExternalRefs: true}); err == nil || !strings.Contains(err.Error(), "--refs-root") {
		t.Fatalf("a sibling folder without RefsRoot: %v", err)
	}
	reads := map[string]int{}
	readFile = func(p string) ([]byte, error) { reads[filepath.Base(p)]++; return os.ReadFile(p) }
	defer func() { readFile = os.ReadFile }()
	res, err := Import([]byte(main), Options{Path: path, AllowExternalRefs: true, RefsRoot: dir})
	if err != nil || len(res.Manifests) != 50 {
		t.Fatalf("%v: %s %v", err, res.Summary(), res.Warnings)
	}
	if reads["schemas.yaml"] != 1 || reads["parts.yaml"] > 1 {
		t.Errorf("reads %v, want each file once", reads)
	}
	var m struct{ Input map[string]any }
	json.Unmarshal(res.Manifests[0].JSON, &m)
	if b, _ := json.Marshal(m.Input); !strings.Contains(string(b), `"size"`) {
		t.Errorf("input %s", b)
	}
}

// TestRealExcerptsShowTheClasses: the trims of real descriptions in
// testdata/classes, each imported as the API expects (their sources in
// its README).
func TestRealExcerptsShowTheClasses(t *testing.T) {
	load := func(name string) *Result {
		t.Helper()
		p := filepath.Join("testdata", "classes", name)
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Import(src, Options{Path: p, Server: map[bool]string{true: "https://kubernetes.default.svc"}[strings.HasPrefix(name, "kubernetes")]})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	// Slack: items written as a list no longer refuse the document.
	if res := load("slack-web-items-list.json"); len(res.Manifests) != 3 {
		t.Errorf("slack: %s", res.Summary())
	}
	// Twilio: a JSON document with surrogate-pair escapes reads as JSON.
	if res := load("twilio-2010-escapes.json"); len(res.Manifests) != 2 {
		t.Errorf("twilio: %s", res.Summary())
	}
	// Kubernetes: a PATCH whose JSON media type is json-patch+json (not
	// application/json, which the API answers 415) and whose body is
	// RFC 6902's list of operations, though the document calls it an object.
	for _, m := range imported(t, load("kubernetes-json-patch.json")) {
		hs, _ := at(m, "spec", "headers").([]any)
		if len(hs) != 1 || at(hs[0], "value") != "application/json-patch+json" || at(m, "spec", "requestBody", "template") != "{body}" ||
			at(m, "input", "properties", "body", "type") != "array" {
			t.Errorf("kubernetes: %v", at(m, "spec"))
		}
	}
	// Xero: the tenant header is not sent again in the body; the string
	// default "false" of a boolean is dropped, not refused at every call.
	res := load("xero-accounting-tenant-header.yaml")
	got := imported(t, res)
	for id, m := range got {
		if at(m, "spec", "requestBody", "template") != "{body}" || at(m, "input", "properties", "xero_tenant_id") == nil {
			t.Errorf("%s: body %v", id, at(m, "spec", "requestBody"))
		}
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, `input: default "false" dropped: it is a string, the member a boolean`) {
		t.Errorf("xero: no warning of the dropped default:\n%s", w)
	}
	// Algolia: every operation needs the application id and the key
	// together, which a tool cannot send: skipped, each with its reason.
	res = load("algolia-search-two-keys.yaml")
	if len(res.Manifests) != 0 || res.Skipped[SkipCredential] != 2 || !strings.Contains(strings.Join(res.Warnings, "\n"), "apiKey and appId together") {
		t.Errorf("algolia: %s\n%s", res.Summary(), strings.Join(res.Warnings, "\n"))
	}
	// Slack: the form member token ("Authentication token") is the
	// credential the connection sends in the Authorization header, not an
	// input the model must fill; the checker flags the tool that asks.
	src, _ := os.ReadFile(filepath.Join("testdata", "classes", "slack-web-body-token.json"))
	res = load("slack-web-body-token.json")
	emoji := imported(t, res)["slack.admin-emoji-add"]
	if at(emoji, "input", "properties", "token") != nil || at(emoji, "spec", "requestBody", "template") != "name={name}&url={url}" ||
		at(emoji, "needsSpec", "connections", "slackauth", "app") != "slack" {
		t.Errorf("slack: %v %v", at(emoji, "input"), at(emoji, "spec", "requestBody"))
	}
	asked := emoji["input"].(map[string]any)
	asked["properties"].(map[string]any)["token"] = map[string]any{"type": "string"}
	asked["required"] = []any{"name", "token", "url"}
	emoji["spec"].(map[string]any)["requestBody"] = map[string]any{"kind": "text", "template": "name={name}&token={token}&url={url}"}
	b, _ := json.Marshal(emoji)
	rep, err := Check(src, Options{}, []Manifest{{ID: "slack.admin-emoji-add", JSON: b}})
	if err != nil || rep.ByClass[ClassCredentials] != 1 {
		t.Errorf("slack: the tool asking for the token is not flagged: %v %v", err, rep.Findings)
	}
}
