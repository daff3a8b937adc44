package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/httptools/httptools/connections"
	toolstest "github.com/httptools/httptools/httptest"
	"github.com/httptools/httptools/openapi"
	"github.com/httptools/httptools/synth"
)

// TestDocumentsRefuseHostileJSON: every document the project reads — a
// manifest, a case file, apps.json, an OpenAPI document — refuses 10 MiB of
// "[", 40 000 levels in 80 KB, a duplicate key and a number of a million
// digits' exponent, with an error, allocating at most a few times its size.
func TestDocumentsRefuseHostileJSON(t *testing.T) {
	hostile := map[string][]byte{
		"10 MiB of [":      bytes.Repeat([]byte("["), 10<<20),
		"40000 deep":       []byte(strings.Repeat("[", 40000) + strings.Repeat("]", 40000)),
		"objects 600 deep": []byte(strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600)),
		"huge exponent":    []byte(`{"apps":{},"openapi":"3.0.0","n":1e999999999}`),
	}
	parsers := map[string]func([]byte) error{
		"manifest":  func(b []byte) error { _, err := synth.Load(b); return err },
		"case file": func(b []byte) error { _, err := toolstest.ParseCases(b); return err },
		"apps.json": func(b []byte) error {
			_, err := connections.ParseApps(b, func(string) string { return "" })
			return err
		},
		"openapi": func(b []byte) error { _, err := openapi.Import(b, openapi.Options{}); return err },
	}
	for pname, parse := range parsers {
		for hname, doc := range hostile {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := parse(doc)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Errorf("%s accepted %s", pname, hname)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(3*len(doc))+2<<20 {
				t.Errorf("%s on %s (%d bytes) allocated %d bytes", pname, hname, len(doc), alloc)
			}
		}
	}
}
