package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWrongMethodIs405: a route's path with another method is 405 with
// the methods it takes in Allow (GET …/invoke: POST), not 404 "no route";
// a path no route has is still 404.
func TestWrongMethodIs405(t *testing.T) {
	_, h, key := memServer(t, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/v1/tools/bench.get-issue/invoke", 405, "POST"},
		{"DELETE", "/v1/tools", 405, "GET"},
		{"POST", "/v1/secrets/production/TOKEN", 405, "PUT, DELETE"},
		{"GET", "/v1/nope", 404, ""},
		{"POST", "/v1/tools/bench.get-issue/invoke", 200, ""},
	} {
		r := httptest.NewRequest(c.method, c.path, strings.NewReader(`{"input":{"id":"1"}}`))
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.status || w.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d, Allow %q; want %d, %q: %s", c.method, c.path, w.Code, w.Header().Get("Allow"), c.status, c.allow, w.Body)
		}
		if c.status == 405 && !strings.Contains(w.Body.String(), `"code":"method-not-allowed"`) {
			t.Errorf("%s %s: %s", c.method, c.path, w.Body)
		}
	}
}

// TestDryRunAnswerIsCompact: the REST dry run answers compact JSON, as
// every route does, not an indented description inside a compact one.
func TestDryRunAnswerIsCompact(t *testing.T) {
	_, h, key := memServer(t, slog.New(slog.NewTextHandler(io.Discard, nil)))
	r := httptest.NewRequest("POST", "/v1/tools/bench.get-issue/dry-run", strings.NewReader(`{"input":{"id":"1"}}`))
	r.Header.Set("Authorization", "Bearer "+key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	body := w.Body.String()
	if w.Code != 200 || !strings.HasPrefix(body, `{"request":{`) || strings.Contains(strings.TrimSuffix(body, "\n"), "\n") || !json.Valid([]byte(body)) {
		t.Errorf("%d %q", w.Code, body)
	}
}
