package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/redact/redacttest"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallHistory: every call through REST, MCP and the console is kept,
// off the request path; GET /v1/calls filters by tool, person, status and
// time, a person key sees its own calls only, the console lists them with
// "dry-run this again", and no record holds the secret a call used, in any
// spelling the upstream echoed it in.
func TestCallHistory(t *testing.T) {
	r, rec := newHistoryRig(t)
	ctx := context.Background()
	secret := "hist-secret-4eC39HqLyjWDarjt"
	r.store.PutSecret(ctx, "tenant-a", synth.SecretRef{EnvName: "production", Name: "TOKEN"}, secret)
	person, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RolePerson, "u1")

	r.do(t, r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"a-1"},"context":{"person":"u2"}}`)
	r.do(t, r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input":{},"context":{"person":"u2"}}`) // refused input: an error kept too
	r.do(t, person, "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"p-1"}}`)
	r.do(t, r.keyA, "POST", "/v1/tools/t.secret/invoke", `{"input":{}}`) // its upstream echoes the Authorization header
	cs := mcpSession(t, r.http.URL, r.keyA)
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "m-1"}})
	testkit.WaitFor(t, "5 calls in the history", func() bool { return rec.Written() >= 5 })

	list := func(key, query string) []history.Record {
		var out struct{ Calls []history.Record }
		json.Unmarshal([]byte(r.do(t, key, "GET", "/v1/calls"+query, "").raw), &out)
		return out.Calls
	}
	for q, want := range map[string]int{"": 5, "?tool=t.echo": 4, "?person=u2": 2, "?status=error": 1, "?status=ok": 4, "?since=1h": 5, "?limit=2": 2} {
		if got := list(r.keyA, q); len(got) != want {
			t.Errorf("GET /v1/calls%s: %d calls, want %d", q, len(got), want)
		}
	}
	if got := list(r.keyB, ""); len(got) != 0 {
		t.Errorf("another tenant sees %d calls", len(got))
	}
	own := list(person, "?person=u2")
	if len(own) != 1 || own[0].Person != "u1" || !strings.Contains(own[0].Request, "p-1") {
		t.Errorf("a person key sees %+v", own)
	}
	all := list(r.keyA, "")
	for _, c := range all {
		for name, enc := range redacttest.Encodings() {
			if strings.Contains(c.Request+c.Answer, enc(secret)) {
				t.Errorf("%s: the secret is kept (%s spelling): %s", c.Tool, name, c.Answer)
			}
		}
		if c.Key == "" || c.At.IsZero() {
			t.Errorf("a record without its key or time: %+v", c)
		}
	}
	if page := consolePage(t, r, r.keyA, "GET", "/ui/calls", nil); !strings.Contains(page, "m-1") || !strings.Contains(page, "Dry-run this again") || strings.Contains(page, secret) {
		t.Error("the console's Calls page")
	}
}

// newHistoryRig is a rig with the console on and a history recorder that
// writes every call to the rig's store at once, closed when t ends.
func newHistoryRig(t *testing.T) (*rig, *history.Recorder) {
	rec := &history.Recorder{}
	r := newRig(t, func(c *Config) {
		c.UI = true
		st := c.Store.(*testStore)
		rec.Sink, rec.Flush = st, 1
		rec.Start()
		c.History, c.Calls = rec, st
	})
	t.Cleanup(rec.Close)
	return r, rec
}
