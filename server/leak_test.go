package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/testkit"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/redact/redacttest"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuffer is a log sink several goroutines write.
type syncBuffer = testkit.Buffer

// fanout sends every record to several handlers.
type fanout []slog.Handler

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool { return true }
func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range f {
		h.Handle(ctx, r.Clone())
	}
	return nil
}
func (f fanout) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(as)
	}
	return out
}
func (f fanout) WithGroup(g string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(g)
	}
	return out
}

// TestNoSecretInAnySink: random secrets × every spelling an upstream may
// echo × every sink: an upstream error body (REST message and
// details.body, MCP isError text), an output that fails a const, enum and
// pattern (details.violations, MCP), a redirect whose Location does not
// parse (the audit record in text and JSON at debug level) and /metrics.
// The count of the secret, raw or in the echoed spelling, over all of them
// is 0.
func TestNoSecretInAnySink(t *testing.T) {
	var mu sync.Mutex
	form := "" // what the upstream echoes now
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		f := form
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/status":
			w.WriteHeader(500)
			fmt.Fprintf(w, `{"error":"bad token %s","auth":%q}`, redacttest.JSONString(f), r.Header.Get("Authorization"))
		case "/output":
			fmt.Fprintf(w, `{"c":"%s","e":"%s","p":"%s"}`, redacttest.JSONString(f), redacttest.JSONString(f), redacttest.JSONString(f))
		case "/redirect":
			w.Header()["Location"] = []string{"/next?t=" + f + "%zz\x7f"}
			w.WriteHeader(302)
		}
	}))
	defer up.Close()
	dir := t.TempDir()
	for name, spec := range map[string]string{
		"status":   `"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/status",`,
		"output":   `"output":{"type":"object","properties":{"c":{"const":"x"},"e":{"enum":["a","b"]},"p":{"type":"string","pattern":"^[0-9]+$"}}},"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/output",`,
		"redirect": `"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/redirect",`,
	} {
		src := `{"id":"t.` + name + `","description":"d","version":"1.0.0","mutating":false,"input":{"type":"object"},` + spec +
			`"authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}}`
		os.WriteFile(filepath.Join(dir, name+".json"), []byte(strings.ReplaceAll(src, "{UP}", up.URL)), 0o644)
	}
	keys, _ := sqlstore.NewKeyring(bytes.Repeat([]byte{9}, 32))
	store := openTestStore(t, filepath.Join(t.TempDir(), "db"), keys)
	var text, js syncBuffer
	log := slog.New(fanout{
		slog.NewTextHandler(&text, &slog.HandlerOptions{Level: slog.LevelDebug}),
		slog.NewJSONHandler(&js, &slog.HandlerOptions{Level: slog.LevelDebug}),
	})
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{Logger: log,
		RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond})))
	srv, err := New(Config{Store: store, Keys: store, ToolsDir: dir, Loader: &synth.Loader{Registry: reg}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	key, _, _ := store.CreateAPIKey(context.Background(), "tenant-a", auth.RoleAdmin, "")
	session := mcpSession(t, hs.URL, key)

	r := rand.New(rand.NewPCG(7, 9))
	encodings := slices.Sorted(func(yield func(string) bool) {
		for k := range redacttest.Encodings() {
			if !yield(k) {
				return
			}
		}
	})
	leaks, checks := 0, 0
	for range 12 {
		secret := redacttest.RandomSecret(r)
		if err := store.PutSecret(context.Background(), "tenant-a", synth.SecretRef{EnvName: "production", Name: "TOKEN"}, secret); err != nil {
			t.Fatal(err)
		}
		for _, enc := range encodings {
			f := redacttest.Encodings()[enc](secret)
			mu.Lock()
			form = f
			mu.Unlock()
			var sinks []string
			for _, tool := range []string{"t.status", "t.output", "t.redirect"} {
				req, _ := http.NewRequest("POST", hs.URL+"/v1/tools/"+tool+"/invoke", strings.NewReader(`{"input":{}}`))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					t.Fatalf("%s: 200 %s", tool, b)
				}
				sinks = append(sinks, string(b), unescapeJSON(string(b)))
				res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range res.Content {
					if tc, ok := c.(*mcp.TextContent); ok {
						sinks = append(sinks, tc.Text)
					}
				}
			}
			logs := js.Take()
			sinks = append(sinks, text.Take(), logs, unescapeJSON(logs), metricsText(t, hs.URL, key))
			for i, s := range sinks {
				checks++
				if strings.Contains(s, secret) || (len(f) >= 8 && strings.Contains(s, f)) {
					leaks++
					if leaks <= 5 {
						t.Errorf("secret %q as %s leaked in sink %d: %.400s", secret, enc, i, s)
					}
				}
			}
		}
	}
	t.Logf("%d sink checks, %d leaks", checks, leaks)
	if leaks != 0 {
		t.Errorf("%d leaks in %d checks", leaks, checks)
	}
}

func unescapeJSON(s string) string {
	var out []string
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		var v any
		if dec.Decode(&v) != nil {
			break
		}
		b, _ := json.Marshal(v)
		var sb strings.Builder
		collect(v, &sb)
		out = append(out, string(b), sb.String())
	}
	return strings.Join(out, "\n")
}

// collect writes every string in v.
func collect(v any, b *strings.Builder) {
	switch v := v.(type) {
	case string:
		b.WriteString(v + "\n")
	case []any:
		for _, x := range v {
			collect(x, b)
		}
	case map[string]any:
		for k, x := range v {
			b.WriteString(k + "\n")
			collect(x, b)
		}
	}
}

// metricsText reads /metrics with an admin key.
func metricsText(t *testing.T, base, key string) string {
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func mcpSession(t *testing.T, base, key string) *mcp.ClientSession {
	return mcpSessionAt(t, base+"/mcp", key)
}

// mcpSessionAt is an SDK client's session with the MCP endpoint (a
// toolset's, say), with key, closed when t ends.
func mcpSessionAt(t *testing.T, endpoint, key string) *mcp.ClientSession {
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: keyTransport{key: key}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
