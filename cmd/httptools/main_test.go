package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of fixtures/invalid and fixtures/warnings")

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

// TestValidateGolden runs validate on every broken fixture and compares its
// stdout with NAME.golden beside it (go test -update rewrites them).
func TestValidateGolden(t *testing.T) {
	t.Chdir("../..")
	for _, dir := range []struct {
		glob string
		exit int
	}{{"fixtures/invalid/*.json", 1}, {"fixtures/warnings/*.json", 0}} {
		files, _ := filepath.Glob(dir.glob)
		if len(files) == 0 {
			t.Fatalf("no fixtures match %s", dir.glob)
		}
		for _, f := range files {
			t.Run(f, func(t *testing.T) {
				out, _, code := runCLI(t, "validate", f)
				if code != dir.exit {
					t.Errorf("exit %d, want %d", code, dir.exit)
				}
				golden := strings.TrimSuffix(f, ".json") + ".golden"
				if *update {
					if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./cmd/httptools -update to create it)", err)
				}
				if out != string(want) {
					t.Errorf("validate printed:\n%s\nwant (%s):\n%s", out, golden, want)
				}
			})
		}
	}
}

func TestValidateFixturesClean(t *testing.T) {
	t.Chdir("../..")
	out, errOut, code := runCLI(t, "validate", "fixtures/tools")
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	var n int
	if _, err := fmt.Sscanf(errOut, "%d manifests, 0 errors, 0 warnings", &n); err != nil || n < 6 {
		t.Fatalf("summary %q: want at least 6 manifests without errors or warnings", errOut)
	}
}

func TestCallDryRunRedactsAndSendsNothing(t *testing.T) {
	t.Chdir("../..")
	out, errOut, code := runCLI(t, "call", "fixtures/tools/github.create-issue.json",
		"--input", `{"owner":"octo","repo":"hello","title":"Bug","labels":["a"],"id":9007199254740993}`,
		"--secret", "production/GITHUB_TOKEN=ghp_supersecret", "--dry-run")
	if strings.Contains(out+errOut, "ghp_supersecret") {
		t.Fatalf("a refused dry run prints the token: %s%s", out, errOut)
	}
	if code != 1 { // additionalProperties: false refuses "id"
		t.Fatalf("exit %d, want 1 for an input the schema refuses; stderr %s", code, errOut)
	}
	if !strings.Contains(errOut, `"code": "input-validation-failed"`) {
		t.Fatalf("stderr %s", errOut)
	}
	out, errOut, code = runCLI(t, "call", "fixtures/tools/github.create-issue.json",
		"--input", `{"owner":"octo","repo":"hello","title":"Bug","labels":["a"]}`,
		"--secret", "production/GITHUB_TOKEN=ghp_supersecret", "--dry-run", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "ghp_supersecret") || !strings.Contains(out, "Bearer [REDACTED]") {
		t.Fatalf("dry run must redact the token:\n%s", out)
	}
	var req struct {
		Method string
		URL    string
		Body   json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &req); err != nil {
		t.Fatal(err)
	}
	if req.Method != "POST" || req.URL != "https://api.github.com/repos/octo/hello/issues" {
		t.Errorf("request %s %s", req.Method, req.URL)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, req.Body)
	if compact.String() != `{"title":"Bug","labels":["a"]}` {
		t.Errorf("body %s, want the input minus owner and repo", compact.String())
	}
}

func TestCallAgainstServer(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id": 9007199254740993, "echo": true}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	manifest := filepath.Join(dir, "t.json")
	os.WriteFile(manifest, []byte(`{"id":"t.echo","description":"d","version":"1.0.0","mutating":true,
	  "input":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]},"output":{"type":"object"},
	  "effects":[{"kind":"network","resource":"external:127.0.0.1"}],
	  "spec":{"kind":"http","method":"PUT","urlTemplate":"`+srv.URL+`/things/{id}",
	    "authorization":{"kind":"header","headerName":"X-Api-Key","secretRef":{"envName":"local","name":"KEY"}}}}`), 0o644)
	input := filepath.Join(dir, "in.json")
	os.WriteFile(input, []byte(`{"id": 7, "extra": 1.50}`), 0o644)
	t.Setenv("HTTPTOOLS_SECRET_LOCAL_KEY", "k-123")
	_, errOut, code := runCLI(t, "call", manifest, "--input", "@"+input)
	if code != 1 || !strings.Contains(errOut, `"reason": "egress-denied"`) || got != nil {
		t.Fatalf("without --allow-cidr a loopback upstream must be refused unsent: exit %d, %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "call", manifest, "--input", "@"+input, "--allow-cidr", "127.0.0.0/8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "9007199254740993") {
		t.Errorf("output %s lost the big id", out)
	}
	if got.URL.Path != "/things/7" || got.Header.Get("X-Api-Key") != "k-123" || string(gotBody) != `{"extra":1.50}` {
		t.Errorf("upstream saw %s %s key=%q body=%s", got.Method, got.URL, got.Header.Get("X-Api-Key"), gotBody)
	}
	// The secret is missing: exit 1 and a precondition error naming the env var.
	t.Setenv("HTTPTOOLS_SECRET_LOCAL_KEY", "")
	_, errOut, code = runCLI(t, "call", manifest, "--input", "@"+input, "--allow-cidr", "127.0.0.0/8")
	if code != 1 || !strings.Contains(errOut, `"reason": "secret-unavailable"`) || !strings.Contains(errOut, "HTTPTOOLS_SECRET_LOCAL_KEY") {
		t.Errorf("exit %d, stderr %s", code, errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"validate"}, {"call"}, {"call", "a.json", "b.json"}} {
		if _, _, code := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestTestVerb(t *testing.T) {
	t.Chdir("../..")
	out, _, code := runCLI(t, "test", "fixtures/tools")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || !strings.HasSuffix(lines[len(lines)-1], " passed, 0 failed") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.json"), []byte(`{"id":"t","description":"d","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
		"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/x"}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "t.cases.json"), []byte(`[{"name":"wrong url","input":{},"request":{"url":"https://api.example.com/y"}}]`), 0o644)
	out, _, code = runCLI(t, "test", dir)
	if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "+ https://api.example.com/x") || !strings.HasSuffix(strings.TrimSpace(out), "0 passed, 1 failed") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestDryRunCurlPastes runs the printed curl line in a shell, with the
// secret in its variable, against a local server: it sends the same request.
func TestDryRunCurlPastes(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on this machine")
	}
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, body = r, nil
		body, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	manifest := filepath.Join(t.TempDir(), "t.json")
	os.WriteFile(manifest, []byte(`{"id":"t","description":"d","version":"1.0.0","mutating":true,"input":{"type":"object"},"output":{},
		"spec":{"kind":"http","method":"POST","urlTemplate":"`+srv.URL+`/notes/{id}","headers":[{"name":"X-Note","value":"{note}"}],
		"authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"NOTES_TOKEN"}}}}`), 0o644)
	out, errOut, code := runCLI(t, "call", manifest, "--dry-run", "--secret", "production/NOTES_TOKEN=s3cr'et $x",
		"--input", `{"id":"a b","note":"it's \"quoted\" $HOME","text":"x'y"}`)
	if code != 0 || strings.Contains(out, "s3cr") || !strings.Contains(out, `"$HTTPTOOLS_SECRET_PRODUCTION_NOTES_TOKEN"`) {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	cmd := exec.Command("sh", "-c", out)
	cmd.Env = append(os.Environ(), "HTTPTOOLS_SECRET_PRODUCTION_NOTES_TOKEN=s3cr'et $x")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if got == nil || got.Method != "POST" || got.URL.RequestURI() != "/notes/a%20b" || got.Header.Get("Authorization") != "Bearer s3cr'et $x" ||
		got.Header.Get("X-Note") != `it's "quoted" $HOME` || string(body) != `{"note":"it's \"quoted\" $HOME","text":"x'y"}` {
		t.Errorf("the pasted curl sent %v %v %q %q", got.Method, got.URL, got.Header, body)
	}
}

func TestImportVerb(t *testing.T) {
	t.Chdir("../..")
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "import", "openapi", "openapi/testdata/petstore-3.0.yaml", "--out", out, "--operations", "getPetById,deletePet")
	if code != 0 || strings.Count(stdout, ".json") != 2 || !strings.Contains(stderr, `warning: deletePet: header parameter "api_key" left out`) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	vout, _, vcode := runCLI(t, "validate", out)
	if vcode != 0 || strings.Contains(vout, "error") || strings.Contains(vout, "warning") {
		t.Errorf("validate of the import: %d %s", vcode, vout)
	}
	stdout, _, code = runCLI(t, "import", "openapi", "openapi/testdata/github-issues-3.1.yaml")
	var ms []map[string]any
	if err := json.Unmarshal([]byte(stdout), &ms); code != 0 || err != nil || len(ms) != 3 {
		t.Errorf("stdout import: %d %v %d", code, err, len(ms))
	}
}

// TestDatabasePasswordsStayOut: a DSN's password never reaches an error.
func TestDatabasePasswordsStayOut(t *testing.T) {
	t.Setenv("HTTPTOOLS_MASTER_KEY", "")
	for _, args := range [][]string{
		{"serve", "--tools", "../../fixtures/tools", "--db", "postgres://app:PW-s3cret@127.0.0.1:1/x", "--addr", "127.0.0.1:0"},
		{"keys", "create", "--tenant", "t", "--db", "mysql://app:PW-s3cret@127.0.0.1:1/x"},
	} {
		_, errOut, code := runCLI(t, args...)
		if code == 0 || strings.Contains(errOut, "PW-s3cret") {
			t.Errorf("%v: exit %d, stderr %s", args, code, errOut)
		}
	}
}

// TestDryRunEveryKind: a connection tool dry-runs without a connection
// source (its token shown as its variable), and a one-character secret
// leaves the rest of the line alone.
func TestDryRunEveryKind(t *testing.T) {
	t.Chdir("../..")
	out, errOut, code := runCLI(t, "call", "fixtures/tools/gmail.send.json", "--person", "u_1",
		"--input", `{"raw":"U3ViamVjdDogaGkKCmhp"}`, "--dry-run")
	if code != 0 || !strings.Contains(out, `"$HTTPTOOLS_TOKEN_GMAIL"`) || strings.Contains(out, "dry-run-token") {
		t.Fatalf("connection tool: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "call", "fixtures/tools/github.get-issue.json",
		"--input", `{"owner":"octo","repo":"hello","issue_number":1}`, "--secret", "production/GITHUB_TOKEN=t", "--dry-run")
	if code != 0 || !strings.Contains(out, "https://api.github.com/repos/octo/hello/issues/1") || !strings.Contains(out, `"$HTTPTOOLS_SECRET_PRODUCTION_GITHUB_TOKEN"`) {
		t.Fatalf("a one-character secret: exit %d\n%s%s", code, out, errOut)
	}
	out, _, _ = runCLI(t, "call", "fixtures/tools/github.get-issue.json",
		"--input", `{"owner":"octo","repo":"hello","issue_number":1}`, "--secret", "production/GITHUB_TOKEN=t", "--dry-run", "--format", "json")
	if !strings.Contains(out, `"Authorization: Bearer [REDACTED]"`) || !strings.Contains(out, `"url": "https://api.github.com/repos/octo/hello/issues/1"`) {
		t.Errorf("a one-character secret in the JSON description:\n%s", out)
	}
}

// TestPolicyCheck: policy check prints what each role and each key and
// person the rules name sees of a folder, the deciding rule beside each
// denied tool; a bad policy is every problem with its path, exit 1.
func TestPolicyCheck(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	good := filepath.Join(dir, "policy.json")
	os.WriteFile(good, []byte(`{"rules":[
	  {"name":"no-mutations-for-people","effect":"deny","tools":{"mutating":true},"subjects":{"roles":["person"]}},
	  {"name":"no-brave","effect":"deny","tools":{"ids":["brave.*"]},"subjects":{"keys":["key_abc"]}}]}`), 0o644)
	out, _, code := runCLI(t, "policy", "check", "--policy", good, "--tools", "fixtures/tools")
	for _, want := range []string{
		"role admin: sees 10 of 10 tools", "role person: sees 5 of 10 tools", // the three demo.* tools among them
		"  - gmail.send (denied by no-mutations-for-people)", "key key_abc (a service key): sees 9 of 10 tools",
		"  - brave.web-search (denied by no-brave)",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d; no %q in:\n%s", code, want, out)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"default":"maybe","rules":[{"effect":"allow","subjects":{"roles":["root"]}}]}`), 0o644)
	out, _, code = runCLI(t, "policy", "check", "--policy", bad, "--tools", "fixtures/tools")
	if code != 1 || !strings.Contains(out, bad+": default:") || !strings.Contains(out, bad+": rules[0].subjects.roles[0]:") {
		t.Errorf("a bad policy: exit %d:\n%s", code, out)
	}
}
