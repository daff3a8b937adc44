package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

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
// openapi/testdata (37 tools of 11 APIs), the right tool is in the top 5
// for at least 28, and first for at least 24.
func TestSearchRecallOnImportedAPIs(t *testing.T) {
	ts := importedCatalogue(t)
	if n := len(ts.IDs()); n != 37 {
		t.Fatalf("%d imported tools, want 37", n)
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
	t.Logf("recall: %d of %d in the top 5, %d first", top5, len(fixture.Tasks), first)
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
