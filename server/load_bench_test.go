package server

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/httptools/httptools/synth"
)

// BenchmarkLoadTools: loading (and reloading) a folder of 1000 and 5000
// generated manifests; reports the heap the loaded set holds.
func BenchmarkLoadTools(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		dir := b.TempDir()
		for i := range n {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("t%05d.json", i)), []byte(fmt.Sprintf(`{"id":"gen.tool-%05d","description":"Generated tool %d: gets one item.","version":"1.0.0","mutating":false,
				"input":{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z0-9-]+$"},"page":{"type":"integer","minimum":1}},"required":["id"]},
				"output":{"type":"object","properties":{"id":{"type":"string"},"items":{"type":"array","items":{"type":"object"}}}},
				"network":{"kind":"allowlist","hosts":["api.example.com"]},
				"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/items/{id}{?page}"}}`, i, i)), 0o644)
		}
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			var ts *Toolset
			for b.Loop() {
				var err error
				if ts, err = LoadTools(dir, &synth.Loader{}, nil); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			runtime.KeepAlive(ts)
			ts = nil
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(before.HeapAlloc-after.HeapAlloc)/(1<<20), "MiB-held")
			_ = ts
		})
	}
}

// BenchmarkReloadUnchanged: a reload of 1000 manifests none of which
// changed (each file read and compared, no compilation).
func BenchmarkReloadUnchanged(b *testing.B) {
	dir := b.TempDir()
	for i := range 1000 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("t%05d.json", i)), []byte(fmt.Sprintf(`{"id":"gen.tool-%05d","description":"Generated tool %d.","version":"1.0.0","mutating":false,
			"input":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},"output":{"type":"object"},
			"network":{"kind":"allowlist","hosts":["api.example.com"]},
			"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/items/{id}"}}`, i, i)), 0o644)
	}
	prev, err := LoadTools(dir, &synth.Loader{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if prev, err = loadTools(dir, &synth.Loader{}, nil, prev); err != nil {
			b.Fatal(err)
		}
	}
}
