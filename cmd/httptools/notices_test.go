package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/httptools/httptools/internal/testkit"
)

// everyNotice is a manifest for each warning validate gives (without
// --remote, whose drift needs the remote server) and its note, by file:
// together 10 warnings and 1 note.
var everyNotice = map[string]string{
	// codeArtifactRef.kind: a handler on the author's disk (serve refuses it).
	"filesystem.json": `{"id":"acme.local-handler","description":"A handler on disk.","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{"type":"object"},
		"codeArtifactRef":{"kind":"filesystem","modulePath":"/home/author/acme/handlers/local.ts"}}`,
	// sandbox: a sandbox on a declarative call.
	"sandbox.json": `{"id":"acme.sandboxed","description":"Sandboxed.","version":"1.0.0","mutating":false,"sandbox":"strict",
		"input":{"type":"object"},"output":{"type":"object"},
		"effects":[{"kind":"network","resource":"external:api.acme.test"}],
		"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.acme.test/status"}}`,
	// transport: "mcp" with an http spec, with and without an endpoint.
	"mcp-spec.json": `{"id":"acme.status","description":"Status.","version":"1.0.0","mutating":false,
		"transport":"mcp","mcpEndpoint":"mcp+http://mcp.acme.test/mcp","input":{"type":"object"},"output":{"type":"object"},
		"effects":[{"kind":"network","resource":"external:api.acme.test"}],
		"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.acme.test/status"}}`,
	"mcp-spec-bare.json": `{"id":"acme.status-bare","description":"Status.","version":"1.0.0","mutating":false,
		"transport":"mcp","input":{"type":"object"},"output":{"type":"object"},
		"effects":[{"kind":"network","resource":"external:api.acme.test"}],
		"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.acme.test/status"}}`,
	// effects, mutating, spec.requestBody and both spec.urlTemplate rules.
	"warnings.json": `{"id":"acme.warnings","description":"Warnings.","version":"1.0.0",
		"input":{"type":"object","properties":{"id":{"type":"string"}}},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.acme.test/items/{id}{?page}","requestBody":{"kind":"json-input"}}}`,
	// spec.headers[0].value: a placeholder input.properties does not declare.
	"header.json": `{"id":"acme.header","description":"Header.","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{"type":"object"},
		"effects":[{"kind":"network","resource":"external:api.acme.test"}],
		"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.acme.test/h","headers":[{"name":"X-Trace","value":"{trace}"}]}}`,
	// The note: an output MCP clients see wrapped.
	"text.json": `{"id":"acme.text","description":"Text.","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{"type":"string"},
		"effects":[{"kind":"network","resource":"external:api.acme.test"}],
		"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.acme.test/t","parseJson":false}}`,
}

// noticeLines are the lines of out that say a notice, as validate prints
// them, sorted.
func noticeLines(out string) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, ": warning: ") || strings.Contains(l, ": note: ") {
			got = append(got, l)
		}
	}
	slices.Sort(got)
	return got
}

// loggedNotices are the notices serve or mcp logged (--log-format json),
// written as validate prints them, sorted.
func loggedNotices(t *testing.T, log string) []string {
	t.Helper()
	var got []string
	for _, l := range strings.Split(log, "\n") {
		var rec struct{ Msg, File, Path, Message string }
		if json.Unmarshal([]byte(l), &rec) != nil {
			continue
		}
		if kind, ok := strings.CutPrefix(rec.Msg, "manifest "); ok {
			got = append(got, fmt.Sprintf("%s: %s: %s: %s", rec.File, kind, rec.Path, rec.Message))
		}
	}
	slices.Sort(got)
	return got
}

// TestSameWarningsOnEveryCommand: a folder with a manifest for each
// warning validate gives and its note (11 notices: 10 warnings, 1 note)
// gets the same 11 from validate, call --dry-run (each manifest), test,
// and mcp, and serve, which refuses the filesystem handler (1 error, no
// start), says the other 10 on a folder without it. A reload says the
// notices of the manifests it loaded anew: 1 for 1 new file, none again
// for the others. (Before, serve and mcp said none.)
func TestSameWarningsOnEveryCommand(t *testing.T) {
	dir := t.TempDir()
	for name, body := range everyNotice {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
		os.WriteFile(filepath.Join(dir, strings.TrimSuffix(name, ".json")+".cases.json"),
			[]byte(`[{"name":"refused","input":{"id":1},"error":{"code":"input-validation-failed"}}]`), 0o644)
	}
	out, errOut, code := runCLI(t, "validate", dir)
	want := noticeLines(out)
	warnings := 0
	for _, l := range want {
		if strings.Contains(l, ": warning: ") {
			warnings++
		}
	}
	if code != 0 || len(want) != 11 || warnings != 10 {
		t.Fatalf("validate: exit %d, %d notices (%d warnings); want 11 (10):\n%s%s", code, len(want), warnings, out, errOut)
	}
	says := map[string][]string{}
	var call []string
	for name := range everyNotice {
		_, errOut, _ := runCLI(t, "call", filepath.Join(dir, name), "--input", "{}", "--dry-run")
		call = append(call, noticeLines(errOut)...)
	}
	slices.Sort(call)
	says["call"] = call
	_, errOut, _ = runCLI(t, "test", dir)
	says["test"] = noticeLines(errOut)
	mcp := exec.Command(binary(t), "mcp", "--tools", dir, "--db", "sqlite:"+filepath.Join(t.TempDir(), "mcp.db"), "--log-format", "json")
	mcp.Stdin = strings.NewReader("") // the client is gone at once: mcp starts, then ends
	log, err := mcp.CombinedOutput()
	if err != nil {
		t.Fatalf("mcp: %v\n%s", err, log)
	}
	says["mcp"] = loggedNotices(t, string(log))
	for cmd, got := range says {
		if !slices.Equal(got, want) {
			t.Errorf("%s says %d notices, validate %d:\n%s\nwant\n%s", cmd, len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	// serve refuses the filesystem handler, with 1 error at its path.
	log, err = exec.Command(binary(t), "serve", "--tools", dir, "--db", "sqlite:"+filepath.Join(t.TempDir(), "refused.db"), "--addr", "127.0.0.1:0").CombinedOutput()
	if err == nil || strings.Count(string(log), "filesystem.json: codeArtifactRef.kind: ") != 1 || !strings.Contains(string(log), "1 problem; nothing was started") {
		t.Errorf("serve on a filesystem handler: %v\n%s", err, log)
	}
	os.Remove(filepath.Join(dir, "filesystem.json"))
	os.Remove(filepath.Join(dir, "filesystem.cases.json"))
	out, _, _ = runCLI(t, "validate", dir)
	want = noticeLines(out)
	p := startServe(t, nil, "--tools", dir, "--db", "sqlite:"+filepath.Join(t.TempDir(), "serve.db"), "--addr", "127.0.0.1:0", "--log-format", "json")
	// A reload with one file more, which warns once.
	os.WriteFile(filepath.Join(dir, "sandbox2.json"), []byte(strings.Replace(everyNotice["sandbox.json"], "acme.sandboxed", "acme.sandboxed-2", 1)), 0o644)
	p.cmd.Process.Signal(syscall.SIGHUP)
	testkit.WaitFor(t, "the reload's record", func() bool { return strings.Contains(p.stderr.String(), `"msg":"reloaded"`) })
	p.cmd.Process.Signal(syscall.SIGINT) // its log is written out as it stops
	p.done <- <-p.done
	got := loggedNotices(t, p.stderr.String())
	reloaded := slices.DeleteFunc(slices.Clone(got), func(l string) bool { return !strings.Contains(l, "sandbox2.json") })
	got = slices.DeleteFunc(got, func(l string) bool { return strings.Contains(l, "sandbox2.json") })
	if len(want) != 10 || !slices.Equal(got, want) {
		t.Errorf("serve says %d notices at start, validate %d (want 10):\n%s\nwant\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(reloaded) != 1 || !strings.Contains(reloaded[0], "sandbox2.json: warning: sandbox: ") {
		t.Errorf("the reload says %d notices of the new file, want 1: %v", len(reloaded), reloaded)
	}
}
