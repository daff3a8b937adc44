package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/internal/benchkit"
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/internal/jsonlog"
	"github.com/httptools/httptools/synth"
)

// BenchmarkRESTOverhead is one REST invoke handled in process, with the
// network taken out on both sides (the request is handed to the handler,
// the upstream answers from memory): what is left is the service's own
// work per request — key check, tenant, limits, envelope, input and output
// checks, the call, metrics, the audit record and the access log, all on —
// beside bench/floor's handler doing the least (envelope in, one GET,
// json.Valid, envelope out) the same way. The load benchmark (bench/run.sh)
// adds the sockets both pay alike.
func BenchmarkRESTOverhead(b *testing.B) {
	body := []byte(`{"input":{"id":"1"}}`)
	b.Run("floor", func(b *testing.B) {
		h := benchkit.Floor(&http.Client{Transport: benchkit.Memory{}}, "http://api.example")
		serveBench(b, h, "/invoke", body, "", nil)
	})
	b.Run("httptools", func(b *testing.B) {
		_, h, key := memServer(b, slog.New(jsonlog.New(io.Discard, nil)))
		serveBench(b, h, "/v1/tools/bench.get-issue/invoke", body, key, nil)
	})
	// With a policy store, as serve has it (a tenant policy of three
	// rules and one for all tenants, read again every 2 s): every call
	// passes the gate.
	b.Run("httptools-policy", func(b *testing.B) {
		_, h, key := memServer(b, slog.New(jsonlog.New(io.Discard, nil)), func(c *Config) {
			st := c.Store.(*testStore)
			c.Policies = st
			st.PutPolicy(context.Background(), AllTenants, []byte(`{"rules":[{"name":"no-deletes","effect":"deny","tools":{"effects":[{"kind":"deletes"}]}}]}`))
			st.PutPolicy(context.Background(), "t", []byte(`{"rules":[{"effect":"deny","tools":{"ids":["x.*"]}},{"effect":"allow","tools":{"ids":["bench.*"]}},{"effect":"deny","tools":{"mutating":true},"subjects":{"roles":["person"]}}]}`))
		})
		serveBench(b, h, "/v1/tools/bench.get-issue/invoke", body, key, nil)
	})
	// With the call history on, as serve has it: each call's record is
	// queued, redacted and written in batches to the SQLite store off the
	// request path (its goroutine shares the machine's cores).
	b.Run("httptools-history", func(b *testing.B) {
		_, h, key := memServer(b, slog.New(jsonlog.New(io.Discard, nil)), func(c *Config) {
			rec := &history.Recorder{Sink: c.Store.(*testStore)}
			rec.Start()
			b.Cleanup(rec.Close)
			c.History = rec
		})
		serveBench(b, h, "/v1/tools/bench.get-issue/invoke", body, key, nil)
	})
}

// BenchmarkMCPOverhead is BenchmarkRESTOverhead's httptools row as one MCP
// tools/call (the fast path), for the MCP / REST ratio without the network.
func BenchmarkMCPOverhead(b *testing.B) {
	_, h, key := memServer(b, slog.New(jsonlog.New(io.Discard, nil)))
	serveBench(b, h, "/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench.get-issue","arguments":{"id":"1"}}}`), key,
		map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
}

// memServer is a service with the load benchmark's tool on benchkit.Memory,
// logging to logger (serve logs JSON), with a memory budget, and an admin key.
func memServer(tb testing.TB, logger *slog.Logger, opts ...func(*Config)) (*Server, http.Handler, string) {
	return memServerOver(tb, logger, benchkit.Memory{}, opts...)
}

// memServerOver is memServer with the upstream rt.
func memServerOver(tb testing.TB, logger *slog.Logger, rt http.RoundTripper, opts ...func(*Config)) (*Server, http.Handler, string) {
	dir := tb.TempDir()
	os.WriteFile(filepath.Join(dir, "get.json"), []byte(`{"id":"bench.get-issue","description":"Get an issue.","version":"1.0.0","mutating":false,
		"input":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"http://api.example/items/{id}"}}`), 0o644)
	keys, _ := sqlstore.NewKeyring(bytes.Repeat([]byte{9}, 32))
	store := openTestStore(tb, filepath.Join(tb.TempDir(), "db"), keys)
	// A memory budget, as serve has by default: every call holds its
	// bytes on it.
	mem := budget.New(1 << 30)
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(fetch.NewClient(fetch.Config{
		UserAgent: httpspec.UserAgent, Logger: logger, Budget: mem,
		WrapTransport: func(http.RoundTripper) http.RoundTripper { return rt },
	})))
	cfg := Config{Store: store, Keys: store, ToolsDir: dir, Loader: &synth.Loader{Registry: reg}, Logger: logger, AccessLogger: logger, Budget: mem}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	key, _, _ := store.CreateAPIKey(context.Background(), "t", auth.RoleAdmin, "")
	return srv, srv.Handler(), key
}

// serveBench posts body to path on h once per iteration.
func serveBench(b *testing.B, h http.Handler, path string, body []byte, key string, header map[string]string) {
	rd := bytes.NewReader(body)
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		r := httptest.NewRequest("POST", path, rd)
		r.Header.Set("Content-Type", "application/json")
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 || w.Body.Len() < len(benchkit.Answer) {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// FuzzBareInput: whatever the reflection-free read of an invoke body
// accepts, encoding/json reads the same way: the same input, no context.
func FuzzBareInput(f *testing.F) {
	for _, s := range []string{`{"input":{"id":"1"}}`, ` {"input" : {"a":[1,2]} } `, `{"Input":{}}`, `{"input":{},"context":{"person":"p"}}`,
		`{"\u0069nput":{}}`, `{"input":null}`, `{"input":[]}`, `[]`, `{"input":{"x":"\u00e9"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if jsoncheck.Check(body, jsoncheck.MaxDocumentDepth) != nil {
			return
		}
		var fast callRequest
		if !bareInput(body, &fast) {
			return
		}
		var slow callRequest
		if err := json.Unmarshal(body, &slow); err != nil {
			t.Fatalf("%q: read without reflection, but encoding/json refuses it: %v", body, err)
		}
		if !bytes.Equal(fast.Input, slow.Input) || !reflect.DeepEqual(fast.Context, slow.Context) {
			t.Fatalf("%q: input %q and context %+v, encoding/json reads %q and %+v", body, fast.Input, fast.Context, slow.Input, slow.Context)
		}
	})
}

// FuzzAppendQuoted: the fast quoting of a tools/call's text is
// jsontext.AppendQuote's, byte for byte, whatever the text (invalid UTF-8,
// control characters, quotes and backslashes anywhere).
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{"", `{"a":"b"}`, "a\"b\\c", "tab\there", "\x00\x1f\x7f", "café", "\xff\xfe", "a\u2028b", "\"\xe9\"", strings.Repeat("x", 300) + "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := jsontext.AppendQuote([]byte("prefix"), s)
		if got := appendQuoted([]byte("prefix"), s); !bytes.Equal(got, want) {
			t.Fatalf("%q: %q, jsontext gives %q", s, got, want)
		}
	})
}
