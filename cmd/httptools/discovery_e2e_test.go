package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeDiscoveryThreshold: serve's default threshold (40) lists 40
// tools whole and 41 as the 3 discovery tools; --mcp-discovery-threshold
// 0 lists the 41 whole, as ?catalogue=full does.
func TestServeDiscoveryThreshold(t *testing.T) {
	dir := t.TempDir()
	write := func(i int) {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("t%02d.json", i)), []byte(fmt.Sprintf(`{"id":"gen.tool-%02d","description":"Generated tool %d.","version":"1.0.0","mutating":false,
			"input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"http://127.0.0.1:1/%d"}}`, i, i, i)), 0o644)
	}
	for i := range 40 {
		write(i)
	}
	state := t.TempDir()
	list := func(p *proc, path string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", p.url+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+p.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out struct {
			Result struct{ Tools []json.RawMessage }
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return len(out.Result.Tools)
	}
	p40 := startServe(t, e2eEnv, "--tools", dir, "--db", "sqlite:"+filepath.Join(state, "a.db"), "--addr", "127.0.0.1:0")
	if n := list(p40, "/mcp"); n != 40 {
		t.Errorf("40 tools, the default threshold: %d listed, want 40", n)
	}
	write(40)
	p41 := startServe(t, e2eEnv, "--tools", dir, "--db", "sqlite:"+filepath.Join(state, "b.db"), "--addr", "127.0.0.1:0")
	if n := list(p41, "/mcp"); n != 3 {
		t.Errorf("41 tools, the default threshold: %d listed, want the 3 discovery tools", n)
	}
	if n := list(p41, "/mcp?catalogue=full"); n != 41 {
		t.Errorf("41 tools, ?catalogue=full: %d listed, want 41", n)
	}
	off := startServe(t, e2eEnv, "--tools", dir, "--db", "sqlite:"+filepath.Join(state, "c.db"), "--addr", "127.0.0.1:0", "--mcp-discovery-threshold", "0")
	if n := list(off, "/mcp"); n != 41 {
		t.Errorf("41 tools, --mcp-discovery-threshold 0: %d listed, want 41", n)
	}
}
