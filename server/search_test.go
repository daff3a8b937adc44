package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/synth"
)

// importedCatalogue is every tool imported from openapi/testdata (its
// golden manifests: what `httptools import openapi` writes), loaded as
// one tool set.
func importedCatalogue(t testing.TB) *Toolset {
	t.Helper()
	files, err := filepath.Glob("../openapi/testdata/golden/*/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("the imported manifests: %v (%d files)", err, len(files))
	}
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{Logger: quiet})))
	ts, err := LoadTools(dir, &synth.Loader{Registry: reg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestSearchRecallOnImportedAPIs: of 30 plain-language tasks for three
// imported APIs (petstore, Twilio Messaging, PagerDuty; 10 each, in
// testdata/discovery/tasks.json), searched over every imported tool of
// openapi/testdata (37 tools of 11 APIs on 5 December 2026), the right tool is in the top 5
// for at least 28, and first for at least 24.
func TestSearchRecallOnImportedAPIs(t *testing.T) {
	ts := importedCatalogue(t)
	if n := len(ts.IDs()); n < 30 {
		t.Fatalf("%d imported tools: the golden imports of openapi/testdata are more", n)
	}
	b, err := os.ReadFile("testdata/discovery/tasks.json")
	if err != nil {
		t.Fatal(err)
	}
	var fixture struct {
		Tasks []struct{ Task, Tool string }
	}
	if err := json.Unmarshal(b, &fixture); err != nil {
		t.Fatal(err)
	}
	if len(fixture.Tasks) != 30 {
		t.Fatalf("%d tasks, want 30", len(fixture.Tasks))
	}
	top5, first := 0, 0
	for _, task := range fixture.Tasks {
		if _, ok := ts.Tool(task.Tool); !ok {
			t.Fatalf("task %q names %s, not an imported tool", task.Task, task.Tool)
		}
		hits := ts.searchIndexOf().search(task.Task, nil, 5)
		i := slices.IndexFunc(hits, func(h searchHit) bool { return h.ID == task.Tool })
		switch {
		case i == 0:
			first++
			top5++
		case i > 0:
			top5++
		default:
			t.Logf("missed: %q → %v (want %s)", task.Task, hits, task.Tool)
		}
	}
	t.Logf("recall: %d of %d in the top 5, %d first, among %d tools", top5, len(fixture.Tasks), first, len(ts.IDs()))
	if top5 < 28 || first < 24 {
		t.Errorf("recall: %d of %d in the top 5 (want ≥ 28), %d first (want ≥ 24)", top5, len(fixture.Tasks), first)
	}
}

// TestSearchWords: ids, camelCase and snake_case split into words, plurals
// and an API's verbs brought to one word, common words dropped.
func TestSearchWords(t *testing.T) {
	for in, want := range map[string][]string{
		"swagger-petstore3.find-pets-by-status": {"swagger", "petstore3", "list", "pet", "status"},
		"listCustomers customer_id":             {"list", "customer", "customer", "id"},
		"Remove the addresses, please":          {"delete", "address"},
		"policies FETCH":                        {"policy", "get"},
		"":                                      nil,
	} {
		if got := words(in); !slices.Equal(got, want) {
			t.Errorf("words(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzSearch: no query panics the search, and every hit is a tool of the
// set, once, at most the limit.
func FuzzSearch(f *testing.F) {
	ts := importedCatalogue(f)
	for _, s := range []string{"add a pet", "", "ÄÖÜ ǅ ﬁ", "a\x00b", "customerID__x--y", "ſ K"} {
		f.Add(s, 5)
	}
	x := ts.searchIndexOf()
	f.Fuzz(func(t *testing.T, q string, limit int) {
		hits := x.search(q, nil, limit)
		seen := map[string]bool{}
		for _, h := range hits {
			if _, ok := ts.Tool(h.ID); !ok || seen[h.ID] {
				t.Fatalf("hit %q", h.ID)
			}
			seen[h.ID] = true
		}
		if limit > 0 && len(hits) > limit {
			t.Fatalf("%d hits over the limit %d", len(hits), limit)
		}
	})
}

// importedService serves the imported catalogue (importedCatalogue's
// manifests), each copied times with its id suffixed (-0, -1, …) when
// times > 1, with the discovery threshold; it returns the service's
// address and an admin key.
func importedService(t *testing.T, times, threshold int) (base, key string, tools int) {
	t.Helper()
	dir, tools := importedCopies(t, times)
	keys, _ := sqlstore.NewKeyring(bytes.Repeat([]byte{9}, 32))
	store := openTestStore(t, filepath.Join(t.TempDir(), "db"), keys)
	t.Cleanup(func() { store.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{Logger: quiet})))
	srv, err := New(Config{Store: store, Keys: store, ToolsDir: dir, Loader: &synth.Loader{Registry: reg}, Logger: quiet, MCPDiscoveryThreshold: threshold})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	key, _, _ = store.CreateAPIKey(context.Background(), "t", auth.RoleAdmin, "")
	return hs.URL, key, tools
}

// importedCopies is a folder of the imported manifests, each copied times
// with its id suffixed when times > 1, and how many it holds.
func importedCopies(t testing.TB, times int) (dir string, tools int) {
	files, _ := filepath.Glob("../openapi/testdata/golden/*/*.json")
	dir = t.TempDir()
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var m map[string]any
		if json.Unmarshal(b, &m) != nil || m["id"] == nil {
			continue
		}
		id := m["id"].(string)
		for i := range times {
			if times > 1 {
				m["id"] = fmt.Sprintf("%s-%d", id, i)
			}
			out, _ := json.Marshal(m)
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s.json", m["id"])), out, 0o644)
			tools++
		}
	}
	return dir, tools
}

// BenchmarkCatalogueSearch: one search_tools query over 1,036 imported
// tools (28 copies of openapi/testdata's imports), the index built.
func BenchmarkCatalogueSearch(b *testing.B) {
	dir, _ := importedCopies(b, 28)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{Logger: quiet})))
	ts, err := LoadTools(dir, &synth.Loader{Registry: reg}, nil)
	if err != nil {
		b.Fatal(err)
	}
	x := ts.searchIndexOf()
	b.ReportAllocs()
	for b.Loop() {
		x.search("delete the data of a cache variable on a global orchestration", nil, 10)
	}
}

// listBytes is the body of a tools/list at url (every page) and how many
// tools it gave.
func listBytes(t *testing.T, url, key string) (size, tools int) {
	t.Helper()
	cursor := ""
	for {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`+params+`}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out struct {
			Result struct {
				Tools      []json.RawMessage
				NextCursor string
			}
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		size += len(b)
		tools += len(out.Result.Tools)
		if cursor = out.Result.NextCursor; cursor == "" {
			return size, tools
		}
	}
}

// TestDiscoveryConnectBytes: what a model reads at connect (the
// tools/list answer, every page), whole and in discovery mode, for the
// imported catalogue of openapi/testdata (37 tools) and for 1,036 tools
// made of 28 copies of it: discovery mode's list is 3 tools and under
// 3 KiB whatever the catalogue. The sizes are logged (BENCHMARKS.md):
// go test ./server -run TestDiscoveryConnectBytes -v
func TestDiscoveryConnectBytes(t *testing.T) {
	for _, times := range []int{1, 28} {
		base, key, n := importedService(t, times, 30)
		fullSize, fullTools := listBytes(t, base+"/mcp?catalogue=full", key)
		size, tools := listBytes(t, base+"/mcp", key)
		if fullTools != n || tools != 3 || size >= 3<<10 {
			t.Errorf("%d tools: the whole list gave %d tools, discovery mode %d tools in %d bytes", n, fullTools, tools, size)
		}
		t.Logf("%d tools: tools/list %d bytes (~%d tokens), %d a tool; discovery mode %d bytes (~%d tokens)",
			n, fullSize, fullSize/4, fullSize/n, size, size/4)
	}
}

// BenchmarkCatalogueIndex: building the search index of 1,036 imported
// tools, which the first search after a load or reload pays.
func BenchmarkCatalogueIndex(b *testing.B) {
	dir, _ := importedCopies(b, 28)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{Logger: quiet})))
	ts, err := LoadTools(dir, &synth.Loader{Registry: reg}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ts.searchOnce = sync.Once{}
		ts.searchIndexOf()
	}
}

// BenchmarkDiscoveryToolsList: tools/list at 1000 tools, whole (the fast
// path's cached page) and in discovery mode (the SDK's answer with its
// tools replaced), in one run.
func BenchmarkDiscoveryToolsList(b *testing.B) {
	srv, base, key := benchService(b, 1000)
	client := &http.Client{}
	for _, mode := range []string{"full", "discovery"} {
		b.Run(mode, func(b *testing.B) {
			srv.cfg.MCPDiscoveryThreshold = 0
			if mode == "discovery" {
				srv.cfg.MCPDiscoveryThreshold = 40
			}
			b.ReportAllocs()
			for b.Loop() {
				mcpPost(b, client, base, key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			}
		})
	}
}
