package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestFirstCallWorksOffline (issue 45 point 1): the README's serve
// command on fixtures/tools, with no --allow-cidr, answers demo.hello from
// the demo API in memory; demo.add-note then demo.list-notes show one
// note. A non-demo tool of a local API beside the demo tools is still
// refused by the SSRF guard, and its server sees no request.
func TestFirstCallWorksOffline(t *testing.T) {
	p := startServe(t, nil, "--tools", "../../fixtures/tools", "--db", "sqlite:"+filepath.Join(t.TempDir(), "h.db"), "--addr", "127.0.0.1:0")
	st, body := p.do(t, p.key, "POST", "/v1/tools/demo.hello/invoke", `{"input":{"name":"Ada"}}`)
	if st != 200 || !strings.Contains(body, `"greeting":"Hello, Ada!"`) {
		t.Fatalf("demo.hello: %d %s", st, body)
	}
	if st, body := p.do(t, p.key, "POST", "/v1/tools/demo.add-note/invoke", `{"input":{"text":"buy milk"},"context":{"approved":true}}`); st != 200 || !strings.Contains(body, `"id":"n_1"`) {
		t.Fatalf("demo.add-note: %d %s", st, body)
	}
	if st, body := p.do(t, p.key, "POST", "/v1/tools/demo.list-notes/invoke", `{"input":{}}`); st != 200 || !strings.Contains(body, `"count":1`) || strings.Count(body, `"id":"n_`) != 1 {
		t.Fatalf("demo.list-notes: %d %s", st, body)
	}

	var hits atomic.Int64
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer local.Close()
	dir := t.TempDir()
	demos, _ := filepath.Glob("../../fixtures/tools/demo/*.json")
	for _, f := range demos {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "local.ping.json"), []byte(`{"id":"local.ping","description":"Ping a local API.","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{},"spec":{"kind":"http","method":"GET","urlTemplate":"`+local.URL+`/ping"}}`), 0o644)
	q := startServe(t, nil, "--tools", dir, "--db", "sqlite:"+filepath.Join(t.TempDir(), "h.db"), "--addr", "127.0.0.1:0")
	if st, body := q.do(t, q.key, "POST", "/v1/tools/local.ping/invoke", `{"input":{}}`); st != 403 || !strings.Contains(body, "egress") {
		t.Errorf("local.ping: %d %s; want 403 egress", st, body)
	}
	if st, _ := q.do(t, q.key, "POST", "/v1/tools/demo.hello/invoke", `{"input":{}}`); st != 200 {
		t.Errorf("demo.hello beside it: %d", st)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the local API got %d requests, want 0", n)
	}
}
