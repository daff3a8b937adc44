package openapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckerOverExcerpts imports every real excerpt of testdata and
// checks each tool against its operation, sending nothing: a finding of
// any class fails the test, with the class and the tool.
func TestCheckerOverExcerpts(t *testing.T) {
	total, flagged := 0, 0
	for name, opts := range excerpts(t) {
		src, err := os.ReadFile(opts.Path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Import(src, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rep, err := Check(src, opts, res.Manifests)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want, ok := skippedWhole[name]; ok {
			if len(res.Manifests) != 0 || res.Skipped[want] != res.Operations {
				t.Errorf("%s: %s: every operation is skipped as %q", name, res.Summary(), want)
			}
		} else if strings.HasPrefix(name, "classes/") && len(res.Manifests) != res.Operations {
			t.Errorf("%s: %s: every operation of a class excerpt imports", name, res.Summary())
		}
		total += rep.Tools
		flagged += rep.Flagged
		for _, f := range rep.Findings {
			t.Errorf("%s: %s: %s: %s", name, f.Tool, f.Class, f.Detail)
		}
		t.Logf("%s: %s", name, strings.ReplaceAll(rep.String(), "\\n", "; "))
	}
	t.Logf("%d tools checked, %d flagged", total, flagged)
}

// skippedWhole are the class excerpts whose requests the Tool definition
// cannot express, each operation skipped with the reason the summary
// counts: Algolia's two keys sent together.
var skippedWhole = map[string]SkipReason{
	"classes/algolia-search-two-keys.yaml": SkipCredential,
}

// excerpts are the real descriptions of testdata, with the options the
// golden test imports them with.
func excerpts(t *testing.T) map[string]Options {
	out := map[string]Options{}
	entries, _ := os.ReadDir("testdata")
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !(strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".yaml")) {
			continue
		}
		out[strings.TrimSuffix(strings.TrimSuffix(n, ".json"), ".yaml")] = Options{Path: filepath.Join("testdata", n)}
	}
	classes, _ := os.ReadDir(filepath.Join("testdata", "classes"))
	for _, e := range classes {
		if n := e.Name(); strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".yaml") {
			out["classes/"+n] = Options{Path: filepath.Join("testdata", "classes", n)}
			switch {
			case strings.HasPrefix(n, "kubernetes"):
				// Kubernetes names no server: the cluster's is the user's.
				out["classes/"+n] = Options{Path: filepath.Join("testdata", "classes", n), Server: "https://kubernetes.default.svc"}
			case strings.HasPrefix(n, "elasticsearch"):
				// Elasticsearch names none either: the cluster's.
				out["classes/"+n] = Options{Path: filepath.Join("testdata", "classes", n), Server: "https://localhost:9200"}
			case strings.HasPrefix(n, "cloudflare"):
				// Its API tokens work where the document asks for the
				// email and key together (issue 43, class 7).
				out["classes/"+n] = Options{Path: filepath.Join("testdata", "classes", n), AuthScheme: "api_token"}
			}
		}
	}
	out["digitalocean"] = Options{Path: filepath.Join("testdata", "digitalocean", "DigitalOcean-public.v2.yaml"), AllowExternalRefs: true}
	out["docker-engine-2.0"] = Options{Path: filepath.Join("testdata", "docker-engine-2.0.yaml"), Server: "http://localhost:2375"}
	return out
}

// TestCheckerFindsEachClass: the checker is a test that can fail. One
// right tool, then that tool with one mistake a class, each of which the
// checker must flag with its class (and only the right one passes).
func TestCheckerFindsEachClass(t *testing.T) {
	doc := []byte(`openapi: 3.0.3
info: {title: Mut, version: '1'}
servers: [{url: 'https://api.example.com/v1'}]
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Key}
security: [{key: []}]
paths:
  /items/{id}:
    post:
      operationId: make
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: X-Tenant, in: header, required: true, schema: {type: string}}
        - {name: tags, in: query, explode: false, schema: {type: array, items: {type: string}}}
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [name], properties: {name: {type: string}}}
      responses: {"200": {description: ok}}
`)
	res, err := Import(doc, Options{Prefix: "example"})
	if err != nil || len(res.Manifests) != 1 {
		t.Fatalf("%v %v", err, res)
	}
	right := res.Manifests[0]
	if rep, err := Check(doc, Options{}, []Manifest{right}); err != nil || rep.Flagged != 0 {
		t.Fatalf("the right tool is flagged: %v %v", err, rep.Findings)
	}
	spec := func(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
	for class, mutate := range map[string]func(m map[string]any){
		ClassMethod: func(m map[string]any) { spec(m)["method"] = "PUT" },
		ClassServer: func(m map[string]any) {
			spec(m)["urlTemplate"] = "https://other.example.com/v1/items/{id}{?tags}"
			m["network"] = map[string]any{"kind": "allowlist", "hosts": []any{"other.example.com"}}
		},
		ClassPath:  func(m map[string]any) { spec(m)["urlTemplate"] = "https://api.example.com/v1/item/{id}{?tags}" },
		ClassQuery: func(m map[string]any) { spec(m)["urlTemplate"] = "https://api.example.com/v1/items/{id}{?tags*}" },
		ClassHeader: func(m map[string]any) {
			spec(m)["headers"] = []any{map[string]any{"name": "X-Tenant-Id", "value": "{x_tenant}"}, map[string]any{"name": "Content-Type", "value": "application/json"}}
		},
		ClassMediaType: func(m map[string]any) {
			spec(m)["headers"] = []any{map[string]any{"name": "X-Tenant", "value": "{x_tenant}"}, map[string]any{"name": "Content-Type", "value": "text/plain"}}
		},
		ClassBodyLeak: func(m map[string]any) {
			// As the importer had it: the body's members beside a header
			// input, sent by json-input, which sends the header's too.
			in := m["input"].(map[string]any)
			props := in["properties"].(map[string]any)
			delete(props, "body")
			props["name"] = map[string]any{"type": "string"}
			in["required"] = []any{"id", "x_tenant", "name"}
			spec(m)["requestBody"] = map[string]any{"kind": "json-input"}
		},
		ClassCredentials: func(m map[string]any) { delete(spec(m), "authorization") },
		ClassRefuses: func(m map[string]any) {
			m["input"].(map[string]any)["properties"].(map[string]any)["id"] = map[string]any{"type": "integer"}
		},
	} {
		var m map[string]any
		json.Unmarshal(right.JSON, &m)
		mutate(m)
		b, _ := json.Marshal(m)
		rep, err := Check(doc, Options{}, []Manifest{{ID: right.ID, JSON: b}})
		if err != nil {
			t.Fatal(err)
		}
		if rep.ByClass[class] != 1 {
			t.Errorf("%s: not flagged: %v", class, rep.Findings)
		}
	}
}

// TestSummaryCountsEachReason: the coverage line says how many were
// skipped for each reason before the reason, never "… send 1".
func TestSummaryCountsEachReason(t *testing.T) {
	r := &Result{Operations: 50, Skipped: map[SkipReason]int{SkipServer: 26, SkipBody: 1}}
	if got := r.Summary(); got != "50 operations: 0 imported, 27 skipped (reasons: 1 × a request body a tool cannot send; 26 × a server a tool cannot name)" {
		t.Errorf("%s", got)
	}
}
