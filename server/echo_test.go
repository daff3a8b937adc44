package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/redact/redacttest"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEchoedCredentialsReachNoSink: an upstream that echoes the request's
// Authorization — in a small answer, in a big one that is streamed on, in
// a member name, in a 500's body, in every spelling package redact knows —
// hands the credential to no one: 0 occurrences in REST answers (held and
// streamed), MCP results (through the SDK and the fast path), the history
// records and the console's Calls page.
func TestEchoedCredentialsReachNoSink(t *testing.T) {
	const secret = "echo-secret-4eC39HqLyjWDarjt"
	pad := strings.Repeat("p", 80<<10) // past the first read: the answer is streamed
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		auth := req.Header.Get("Authorization")
		tok := strings.TrimPrefix(auth, "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		var spellings []string
		for _, enc := range redacttest.Encodings() {
			spellings = append(spellings, enc(tok))
		}
		sp, _ := json.Marshal(spellings)
		switch req.URL.Path {
		case "/small":
			fmt.Fprintf(w, `{"headers":{"Authorization":%q},"spellings":%s,%q:1}`, auth, sp, tok)
		case "/big":
			fmt.Fprintf(w, `{"pad":%q,"headers":{"Authorization":%q},"spellings":%s,"tail":%q}`, pad, auth, sp, pad+tok)
		case "/fail":
			w.WriteHeader(500)
			fmt.Fprintf(w, `{"error":"bad token %s"}`, tok)
		}
	}))
	t.Cleanup(up.Close)
	r, rec := newHistoryRig(t)
	ctx := context.Background()
	r.store.PutSecret(ctx, "tenant-a", synth.SecretRef{EnvName: "production", Name: "TOKEN"}, secret)
	// e.big's output needs no whole-value check: over REST it streams.
	output := map[string]string{"small": `{"type":"object"}`, "big": `{}`, "fail": `{"type":"object"}`}
	for _, name := range []string{"small", "big", "fail"} {
		os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "e"+name+".json"), []byte(`{"id":"e.`+name+`","description":"Echoes.","version":"1.0.0","mutating":false,
			"input":{"type":"object"},"output":`+output[name]+`,
			"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/`+name+`","authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}}`), 0o644)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	leaks, sinks := 0, 0
	check := func(sink, text string) {
		t.Helper()
		sinks++
		for name, enc := range redacttest.Encodings() {
			if n := strings.Count(text, enc(secret)); n > 0 {
				leaks += n
				t.Errorf("%s holds the credential %d times (%s spelling)", sink, n, name)
			}
		}
	}
	cs := mcpSession(t, r.http.URL, r.keyA)
	calls := 0
	for _, name := range []string{"e.small", "e.big", "e.fail"} {
		rp := r.do(t, r.keyA, "POST", "/v1/tools/"+name+"/invoke", `{"input":{}}`)
		if name != "e.fail" && (rp.status != 200 || !strings.Contains(rp.raw, "[REDACTED]")) {
			t.Errorf("REST %s: %d %.300s", name, rp.status, rp.raw)
		}
		if name == "e.big" && !json.Valid([]byte(rp.raw)) {
			t.Errorf("REST %s: the streamed answer is not JSON", name)
		}
		check("REST "+name, rp.raw)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		check("MCP (SDK) "+name, string(b))
		check("MCP (fast path) "+name, fastCall(t, r, r.keyA, name, `{}`))
		calls += 3
	}
	testkit.WaitFor(t, "the calls in the history", func() bool { return rec.Written() >= int64(calls) })
	var hist struct{ Calls []history.Record }
	raw := r.do(t, r.keyA, "GET", "/v1/calls?limit=100", "").raw
	json.Unmarshal([]byte(raw), &hist)
	if len(hist.Calls) < calls {
		t.Errorf("%d records, want %d", len(hist.Calls), calls)
	}
	check("GET /v1/calls", raw)
	check("the console's Calls page", consolePage(t, r, r.keyA, "GET", "/ui/calls", nil))
	t.Logf("%d sinks checked, %d occurrences of the credential", sinks, leaks)
}
