package openapi

import (
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
		total += rep.Tools
		flagged += rep.Flagged
		for _, f := range rep.Findings {
			t.Errorf("%s: %s: %s: %s", name, f.Tool, f.Class, f.Detail)
		}
		t.Logf("%s: %s", name, strings.ReplaceAll(rep.String(), "\\n", "; "))
	}
	t.Logf("%d tools checked, %d flagged", total, flagged)
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
	out["digitalocean"] = Options{Path: filepath.Join("testdata", "digitalocean", "DigitalOcean-public.v2.yaml"), AllowExternalRefs: true}
	out["docker-engine-2.0"] = Options{Path: filepath.Join("testdata", "docker-engine-2.0.yaml"), Server: "http://localhost:2375"}
	return out
}
