package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/httptools/httptools/internal/testkit"
)

// The CLI as a newcomer meets it (issue 14): help, errors that name the
// flag, nothing created by a start that fails.

// TestHelpOnStdout: -h and --help of every command print its usage on
// stdout and exit 0.
func TestHelpOnStdout(t *testing.T) {
	for _, cmd := range [][]string{
		{"validate"}, {"call"}, {"test"}, {"import"}, {"import", "openapi"}, {"serve"},
		{"keys"}, {"keys", "create"}, {"keys", "list"}, {"keys", "revoke"}, {"mcp"}, {"help"},
	} {
		for _, h := range []string{"-h", "--help", "-help"} {
			args := append(append([]string{}, cmd...), h)
			out, errOut, code := runCLI(t, args...)
			if code != 0 || errOut != "" || !strings.Contains(out, "usage: httptools") && cmd[0] != "help" || out == "" {
				t.Errorf("%v: exit %d, stdout %.60q, stderr %.80q", args, code, out, errOut)
			}
		}
	}
	// A bad flag is still an error, on stderr, in one line (issue 45).
	out, errOut, code := runCLI(t, "serve", "--bogus")
	if code != 2 || out != "" || errOut != "httptools serve: unknown flag --bogus (httptools serve --help lists every flag)\n" {
		t.Errorf("bad flag: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestDryRunWithoutTheSecret: the request is printed, the secret as its
// variable, though the secret is not set.
func TestDryRunWithoutTheSecret(t *testing.T) {
	t.Chdir("../..")
	t.Setenv("HTTPTOOLS_SECRET_PRODUCTION_GITHUB_TOKEN", "")
	out, errOut, code := runCLI(t, "call", "fixtures/tools/github.get-issue.json", "--input", `{"owner":"a","repo":"b","issue_number":1}`, "--dry-run")
	if code != 0 || !strings.Contains(out, `-H 'Authorization: Bearer '"$HTTPTOOLS_SECRET_PRODUCTION_GITHUB_TOKEN"`) || strings.Contains(out, "dry-run-secret") {
		t.Errorf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	out, _, code = runCLI(t, "call", "fixtures/tools/github.get-issue.json", "--input", `{"owner":"a","repo":"b","issue_number":1}`, "--dry-run", "--format", "json")
	if code != 0 || !strings.Contains(out, `"Authorization: Bearer [REDACTED]"`) || strings.Contains(out, "dry-run-secret") {
		t.Errorf("json: exit %d, %s", code, out)
	}
}

// TestTestWithNothingToRun: a folder without cases, or a manifest without
// its cases file, is an error (exit 2), not "0 passed"; a manifest with
// cases runs them.
func TestTestWithNothingToRun(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.json"), []byte(`{}`), 0o644)
	for _, arg := range []string{dir, filepath.Join(dir, "t.json")} {
		out, errOut, code := runCLI(t, "test", arg)
		if code != 2 || strings.Contains(out, "passed") || !strings.Contains(errOut, "no case to run") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, code, out, errOut)
		}
	}
	t.Chdir("../..")
	out, _, code := runCLI(t, "test", "fixtures/tools/brave.web-search.json")
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), " passed, 0 failed") || strings.HasSuffix(strings.TrimSpace(out), "0 passed, 0 failed") {
		t.Errorf("one manifest: exit %d, %s", code, out)
	}
}

// TestToolsFlagProblems: every --tools problem names the flag, exits 1 and
// creates nothing (no database, no key file), even with the port taken.
func TestToolsFlagProblems(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	fixtures, _ := filepath.Abs("../../fixtures/tools")
	cwd := t.TempDir()
	t.Chdir(cwd)
	os.Mkdir("empty", 0o755)
	os.WriteFile("tool.json", []byte(`{}`), 0o644)
	os.Mkdir("broken", 0o755)
	os.WriteFile(filepath.Join("broken", "a.json"), []byte(`{"id":`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "name the manifests folder with --tools DIR"},
		{[]string{"--tools", "empty"}, "--tools empty: no manifest (*.json) below it"},
		{[]string{"--tools", "/nonexistent"}, "--tools /nonexistent: no such file or directory"},
		{[]string{"--tools", "tool.json"}, "--tools tool.json: not a folder"},
		{[]string{"--tools", "broken"}, "--tools broken: 1 problem; nothing was started"},
	} {
		for _, cmd := range []string{"serve", "mcp"} {
			args := append([]string{cmd, "--addr", taken}, c.args...)
			if cmd == "mcp" {
				args = append([]string{cmd}, c.args...)
				t.Setenv("XDG_STATE_HOME", filepath.Join(cwd, "state"))
			}
			_, errOut, code := runCLI(t, args...)
			want := 1
			if c.args == nil {
				want = 2 // no --tools: a usage error, exit 2 as every other
			}
			if code != want || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "address already in use") {
				t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
			}
		}
	}
	entries, _ := os.ReadDir(".")
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "broken empty tool.json" {
		t.Errorf("the folder now holds %v", names)
	}
	// With good tools, a taken port names --addr.
	_, errOut, code := runCLI(t, "serve", "--tools", fixtures, "--addr", taken)
	if code != 1 || !strings.Contains(errOut, "--addr "+taken+": address already in use") {
		t.Errorf("taken port: exit %d, %q", code, errOut)
	}
}

// TestServeStderrIsOneStream: serve's own messages and its buffered log
// records reach stderr through one writer, in the order written. A start
// whose port is taken logs 1 record ("call limits") before it fails: that
// record comes first and 0 records follow the message naming --addr (it
// used to be written after it, by the log flusher, which also wrote
// stderr beside serve's own writes: a data race under -race).
func TestServeStderrIsOneStream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tools, _ := filepath.Abs("../../fixtures/tools")
	_, errOut, code := runCLI(t, "serve", "--tools", tools, "--addr", ln.Addr().String(), "--db", "sqlite:"+filepath.Join(t.TempDir(), "db"))
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	failed, after := -1, 0
	for i, l := range lines {
		switch {
		case strings.Contains(l, "httptools serve: --addr"):
			failed = i
		case failed >= 0 && strings.HasPrefix(l, "time="):
			after++
		}
	}
	if code != 1 || failed < 1 || after != 0 || !strings.Contains(lines[0], "msg=\"call limits\"") {
		t.Errorf("exit %d; the message naming --addr is line %d, with %d records after it; want it after the records, last:\n%s", code, failed, after, errOut)
	}
}

// TestServeFromEnvironment: serve takes its flags from HTTPTOOLS_*
// variables; the banner names the REST and MCP URLs.
func TestServeFromEnvironment(t *testing.T) {
	tools, _ := filepath.Abs("../../fixtures/tools")
	db := filepath.Join(t.TempDir(), "env.db")
	p := startServe(t, []string{"HTTPTOOLS_TOOLS=" + tools, "HTTPTOOLS_ADDR=127.0.0.1:0", "HTTPTOOLS_DB=sqlite:" + db, "HTTPTOOLS_ALLOW_CIDR=127.0.0.0/8,::1/128"})
	if _, err := os.Stat(db); err != nil {
		t.Errorf("HTTPTOOLS_DB not used: %v", err)
	}
	resp, err := http.Get(p.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	// A bad value names the variable.
	t.Setenv("HTTPTOOLS_MAX_TIMEOUT", "soon")
	_, errOut, code := runCLI(t, "serve", "--tools", tools)
	if code != 2 || !strings.Contains(errOut, `HTTPTOOLS_MAX_TIMEOUT="soon"`) {
		t.Errorf("bad variable: exit %d, %q", code, errOut)
	}
}

// TestAccessLog: a line per request, refused ones too, with the route
// pattern, status, tenant and error code, and never the key.
func TestAccessLog(t *testing.T) {
	tools, _ := filepath.Abs("../../fixtures/tools")
	p := startServe(t, nil, "--tools", tools, "--addr", "127.0.0.1:0", "--db", "sqlite:"+filepath.Join(t.TempDir(), "db"))
	do := func(method, path, key, body string) int {
		req, _ := http.NewRequest(method, p.url+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	codes := []int{
		do("GET", "/v1/tools", "", ""),
		do("GET", "/v1/tools", "htk_wrong", ""),
		do("POST", "/v1/tools/nope/invoke", p.key, `{}`),
		do("POST", "/v1/tools/open-meteo.forecast/invoke", p.key, `{"latitude":1}`),
		do("GET", "/v1/tools?secret=s3cr3t", p.key, ""),
		do("POST", "/mcp", p.key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
		do("POST", "/mcp", p.key, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{}}}`),
		do("POST", "/mcp", p.key, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"open-meteo.forecast","arguments":{}}}`),
	}
	if fmt.Sprint(codes) != "[401 401 404 400 200 200 200 200]" {
		t.Errorf("statuses %v", codes)
	}
	testkit.WaitFor(t, "8 access records", func() bool { return strings.Count(p.stderr.String(), "msg=request") >= 8 })
	log := p.stderr.String()
	for _, want := range []string{
		`method=GET route="GET /v1/tools" status=401 `,
		`code=unauthorized`,
		`route="POST /v1/tools/{id}/invoke" status=404 `,
		`tool=nope tenant=local key=key_`,
		`code=tool-not-found`,
		`status=400 `,
		`code=bad-request reason=input-invalid`,
		`route=/mcp status=200`,
		`rpc=tools/list`,
		`rpc=tools/call tool=nope outcome="rpc-error -32602"`,
		`rpc=tools/call tool=open-meteo.forecast outcome=tool-error`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the access log lacks %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "msg=request"); n != 8 {
		t.Errorf("%d access records, want 8:\n%s", n, log)
	}
	for _, leak := range []string{p.key, "htk_wrong", "s3cr3t", "latitude"} {
		if strings.Contains(log, leak) {
			t.Errorf("the log holds %q", leak)
		}
	}
	if !regexp.MustCompile(`ms=[0-9.]+`).MatchString(log) {
		t.Error("no duration")
	}
}

// TestKeysListAndRevoke: keys create, list and revoke from the command
// line; a revoked key is gone from the list and revoking it again fails.
func TestKeysListAndRevoke(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "keys.db")
	out, errOut, code := runCLI(t, "keys", "create", "--tenant", "acme", "--db", db)
	id := regexp.MustCompile(`API key (key_[0-9a-f]+)`).FindStringSubmatch(out)
	if code != 0 || id == nil {
		t.Fatalf("create: exit %d, %s %s", code, out, errOut)
	}
	out, _, code = runCLI(t, "keys", "list", "--db", db)
	if code != 0 || !strings.Contains(out, id[1]) || !strings.Contains(out, "acme") || strings.Contains(out, "htk_") {
		t.Errorf("list: exit %d, %s", code, out)
	}
	if out, errOut, code = runCLI(t, "keys", "revoke", id[1], "--db", db); code != 0 || !strings.Contains(out, "revoked "+id[1]) {
		t.Errorf("revoke: exit %d, %s %s", code, out, errOut)
	}
	if out, _, _ = runCLI(t, "keys", "list", "--db", db); strings.Contains(out, id[1]) {
		t.Errorf("still listed: %s", out)
	}
	if _, errOut, code = runCLI(t, "keys", "revoke", id[1], "--db", db); code != 1 || !strings.Contains(errOut, "no key "+id[1]) {
		t.Errorf("revoke twice: exit %d, %s", code, errOut)
	}
}

// TestKeysListInAFolderWithoutAStore: keys list and keys revoke where no
// store is say so and name the way to the store (exit 1), and create
// nothing; keys create there makes the store.
func TestKeysListInAFolderWithoutAStore(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HTTPTOOLS_DB", "")
	for _, args := range [][]string{{"keys", "list"}, {"keys", "revoke", "key_123"}} {
		out, errOut, code := runCLI(t, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, "no store at ./httptools.db (nothing was created)") || !strings.Contains(errOut, "--db sqlite:PATH") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
		if entries, _ := os.ReadDir("."); len(entries) != 0 {
			t.Fatalf("%v created %v", args, entries)
		}
	}
	if _, errOut, code := runCLI(t, "keys", "create", "--tenant", "acme"); code != 0 {
		t.Fatalf("create: exit %d, %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "keys", "list")
	if code != 0 || !strings.Contains(out, "acme") {
		t.Errorf("list after create: exit %d, %q %q", code, out, errOut)
	}
}

// TestTestALoopbackTool: httptools test runs the cases of a tool whose API
// is on loopback (its fake upstream answers every address: nothing reaches
// 127.0.0.1), and a flag it does not take is a usage error, never a path.
func TestTestALoopbackTool(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "local.ping.json"), []byte(`{"id":"local.ping","description":"Ping a local API.","version":"1.0.0","mutating":false,
		"input":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"http://127.0.0.1:8081/ping/{id}"}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "local.ping.cases.json"), []byte(`[{"name":"answers","input":{"id":"7"},
		"request":{"method":"GET","url":"http://127.0.0.1:8081/ping/7"},
		"response":{"json":{"pong":7}},"output":{"pong":7}}]`), 0o644)
	out, errOut, code := runCLI(t, "test", dir)
	if code != 0 || !strings.Contains(out, "1 passed, 0 failed") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "test", "--allow-cidr", "127.0.0.0/8", dir)
	if code != 2 || out != "" || !strings.Contains(errOut, "unknown flag --allow-cidr; httptools test needs none") {
		t.Errorf("--allow-cidr: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestValidateCountsInWords: one manifest is "1 manifest", one error "1
// error".
func TestValidateCountsInWords(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.json"), []byte(`{}`), 0o644)
	_, errOut, code := runCLI(t, "validate", dir)
	if code != 1 || !strings.Contains(errOut, "1 manifest, ") || strings.Contains(errOut, "1 manifests") || !strings.Contains(errOut, " errors, 0 warnings") {
		t.Errorf("exit %d, %q", code, errOut)
	}
}

// TestHelpSaysWhatIsThere: the top-level help names every command and the
// flags a newcomer needs; flags print as they are typed (--addr); a
// default the usage words itself is not printed twice; mcp lists no flag
// of serve's HTTP side.
func TestHelpSaysWhatIsThere(t *testing.T) {
	top, _, _ := runCLI(t, "--help")
	for _, want := range []string{"keys list", "keys revoke", "--role", "--person", "--format json", "--allow-external-refs", "Swagger 2.0", "--env-name", "--check"} {
		if !strings.Contains(top, want) {
			t.Errorf("top-level help lacks %q", want)
		}
	}
	serve, _, _ := runCLI(t, "serve", "--help")
	if !strings.Contains(serve, "\n  --addr string\n") || strings.Contains(serve, "\n  -addr") {
		t.Errorf("serve --help:\n%s", serve)
	}
	for _, line := range strings.Split(serve, "\n") {
		if strings.Count(line, "(default") > 1 {
			t.Errorf("two defaults: %s", line)
		}
	}
	mcp, _, _ := runCLI(t, "mcp", "--help")
	for _, serveOnly := range []string{"--ui", "--oidc", "--public-url", "--tenant-limit", "--tenant-max-inflight", "--no-access-log"} {
		if strings.Contains(mcp, "  "+serveOnly+" ") {
			t.Errorf("mcp --help lists %s, a flag of serve's HTTP side", serveOnly)
		}
	}
}

// TestRelativeToolsSaysTheWorkingFolder: a relative --tools that is not
// there names the folder it was read from (a desktop client's is often /).
func TestRelativeToolsSaysTheWorkingFolder(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	_, errOut, code := runCLI(t, "mcp", "--tools", "fixtures/tools")
	if code != 1 || !strings.Contains(errOut, "(a relative path, read from the working folder "+dir+": give an absolute one)") {
		t.Errorf("exit %d, %q", code, errOut)
	}
}
