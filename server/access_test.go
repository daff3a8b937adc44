package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAccessRecordsKeepNoClientValues: the access log formats a route's
// fixed attributes once, but only for routes and tools that answered and
// usual methods. 300 unknown tools and 300 made-up methods leave nothing
// kept, and every record still names its own method, route, tool and
// status.
func TestAccessRecordsKeepNoClientValues(t *testing.T) {
	var logs syncBuffer
	srv, h, key := memServer(t, slog.New(slog.NewJSONHandler(&logs, nil)))
	do := func(method, path, body string) int {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i := range 300 {
		if c := do("POST", fmt.Sprintf("/v1/tools/nope-%d/invoke", i), `{"input":{}}`); c != http.StatusNotFound {
			t.Fatalf("unknown tool: status %d", c)
		}
		if c := do(fmt.Sprintf("FOO%d", i), "/mcp", ""); c < 400 {
			t.Fatalf("made-up method: status %d", c)
		}
	}
	for range 3 {
		if c := do("POST", "/v1/tools/bench.get-issue/invoke", `{"input":{"id":"1"}}`); c != 200 {
			t.Fatalf("invoke: status %d", c)
		}
	}
	if n := srv.routeLogs.Len(); n != 1 {
		t.Errorf("%d route attribute sets kept, want 1 (the invoke route of the one tool that answered)", n)
	}
	var records, tools, methods int
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if rec["msg"] != "request" {
			continue
		}
		records++
		switch {
		case rec["route"] == "POST /v1/tools/{id}/invoke" && strings.HasPrefix(fmt.Sprint(rec["tool"]), "nope-") && rec["status"] == 404.0:
			tools++
		case strings.HasPrefix(fmt.Sprint(rec["method"]), "FOO") && rec["status"].(float64) >= 400:
			methods++
		case rec["tool"] == "bench.get-issue" && rec["method"] == "POST" && rec["status"] == 200.0:
		default:
			t.Errorf("unexpected record %v", rec)
		}
	}
	if records != 603 || tools != 300 || methods != 300 {
		t.Errorf("%d records (%d unknown tools, %d made-up methods), want 603 (300, 300)", records, tools, methods)
	}
}
