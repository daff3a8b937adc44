package openapi

import (
	"os"
	"testing"
)

// BenchmarkImportFile imports the whole description HTTPTOOLS_IMPORT_FILE
// names (a real one is megabytes, so none is kept in testdata), with
// HTTPTOOLS_IMPORT_AUTH as --auth-scheme: what BENCHMARKS.md's "OpenAPI
// import, second round" profiles.
func BenchmarkImportFile(b *testing.B) {
	path := os.Getenv("HTTPTOOLS_IMPORT_FILE")
	if path == "" {
		b.Skip("HTTPTOOLS_IMPORT_FILE names no description")
	}
	src, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Path: path, AuthScheme: os.Getenv("HTTPTOOLS_IMPORT_AUTH")}
	b.SetBytes(int64(len(src)))
	tools := 0
	for b.Loop() {
		res, err := Import(src, opts)
		if err != nil {
			b.Fatal(err)
		}
		tools = len(res.Manifests)
	}
	b.ReportMetric(float64(tools), "tools")
}
