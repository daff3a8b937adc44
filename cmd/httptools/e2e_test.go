package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/internal/pgtest"
	"github.com/httptools/httptools/internal/testkit"

	toolstest "github.com/httptools/httptools/httptest"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary builds cmd/httptools once per test run.
func binary(t *testing.T) string {
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "httptools-e2e")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "httptools")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a running httptools serve.
type proc struct {
	cmd    *exec.Cmd
	url    string
	key    string
	stderr *syncBuffer
	done   chan error
}

// syncBuffer is a buffer safe to read while a logger or a process writes it.
type syncBuffer = testkit.Buffer

var listenLine = regexp.MustCompile(`REST +(http://[0-9.:]+)/v1/tools`)

func startServe(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return startProc(t, cmd, args)
}

// startServeNoFile is startServe in a process whose descriptor limit
// (soft and hard) is nofile.
func startServeNoFile(t *testing.T, nofile int, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" serve "$@"`, nofile), binary(t)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return startProc(t, cmd, args)
}

// startProc starts a serve command and waits for its banner.
func startProc(t *testing.T, cmd *exec.Cmd, args []string) *proc {
	t.Helper()
	stdout, _ := cmd.StdoutPipe()
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	deadline := time.After(testkit.WaitLimit)
	for p.url == "" || (p.key == "" && !strings.Contains(strings.Join(args, " "), "postgres")) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("serve exited: %s", p.stderr)
			}
			if m := listenLine.FindStringSubmatch(l); m != nil {
				p.url = m[1]
			}
			if k, ok := strings.CutPrefix(l, "API key for tenant local: "); ok {
				p.key = k
			}
		case <-deadline:
			t.Fatalf("serve did not start: %s", p.stderr)
		}
	}
	go func() {
		for range lines {
		}
	}()
	return p
}

func (p *proc) do(t *testing.T, key, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, p.url+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// e2eWorld is a fake upstream, a fake OAuth provider, a tools folder and an
// apps.json for the binary to serve.
type e2eWorld struct {
	up       *httptest.Server
	provider *toolstest.OAuthProvider
	tools    string
	apps     string
	hold     chan struct{} // /slow waits on it
	arrived  chan struct{}
	calls    atomic.Int64
}

func newWorld(t *testing.T) *e2eWorld {
	// The provider grants the scope the apps.json below asks for, set
	// before it serves: the binary's requests reach it from another
	// process.
	provider := toolstest.NewUnstartedOAuthProvider()
	provider.Scope = "mail.send"
	provider.Start()
	w := &e2eWorld{provider: provider, hold: make(chan struct{}), arrived: make(chan struct{}, 8)}
	t.Cleanup(w.provider.Close)
	w.up = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.calls.Add(1)
		if r.URL.Path == "/slow" {
			w.arrived <- struct{}{}
			<-w.hold
		}
		if strings.HasPrefix(r.URL.Path, "/mail") && !w.provider.ValidAccess(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) {
			rw.WriteHeader(401)
			return
		}
		// The credential comes back masked: authFP says which was sent.
		sum := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		fmt.Fprintf(rw, `{"path":%q,"auth":%q,"authFP":"fp-%x"}`, r.URL.Path, r.Header.Get("Authorization"), sum[:6])
	}))
	t.Cleanup(w.up.Close)
	w.tools = t.TempDir()
	w.write("echo.json", `{"id":"t.echo","description":"Echo.","version":"1.0.0","mutating":false,"input":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/items/{id}"}}`)
	w.write("slow.json", `{"id":"t.slow","description":"Slow.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/slow","timeoutMs":20000}}`)
	w.write("mail.json", `{"id":"t.mail","description":"Mail.","version":"1.0.0","mutating":true,"input":{"type":"object"},"output":{"type":"object"},
		"needsSpec":{"connections":{"gmail":{"app":"google","permissions":["gmail.send"],"as":"company"}}},
		"spec":{"kind":"http","method":"POST","urlTemplate":"{UP}/mail","authorization":{"kind":"connection","connection":"gmail"}}}`)
	w.write("secret.json", `{"id":"t.secret","description":"Secret.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/secret","authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}}`)
	w.apps = filepath.Join(t.TempDir(), "apps.json")
	os.WriteFile(w.apps, []byte(fmt.Sprintf(`{"apps":{"google":{"authURL":%q,"tokenURL":%q,"clientID":"client-1","clientSecretEnv":"E2E_GOOGLE_SECRET","authStyle":"params","permissions":{"gmail.send":["mail.send"]}}}}`,
		w.provider.AuthURL(), w.provider.TokenURL())), 0o644)
	return w
}

func (w *e2eWorld) write(name, body string) {
	os.WriteFile(filepath.Join(w.tools, name), []byte(strings.ReplaceAll(body, "{UP}", w.up.URL)), 0o644)
}

var e2eEnv = []string{"E2E_GOOGLE_SECRET=secret-1"}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeSQLite drives the binary on SQLite: routes, SIGHUP (good and
// bad), and SIGTERM with a call in flight.
func TestServeSQLite(t *testing.T) {
	w := newWorld(t)
	db := filepath.Join(t.TempDir(), "e2e.db")
	p := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+db, "--addr", "127.0.0.1:0", "--allow-cidr", "127.0.0.0/8", "--apps", w.apps)
	if st, body := p.do(t, p.key, "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"}}`); st != 200 || !strings.Contains(body, `"path":"/items/1"`) {
		t.Fatalf("invoke: %d %s", st, body)
	}
	if st, _ := p.do(t, "", "GET", "/v1/tools", ""); st != 401 {
		t.Errorf("no key: %d", st)
	}
	// Every route of the API on the binary.
	for _, tc := range []struct {
		method, path, body string
		status             int
		contains           string
	}{
		{"GET", "/v1/tools", "", 200, `"id":"t.echo"`},
		{"GET", "/v1/tools/t.mail", "", 200, `"t.mail"`},
		{"PUT", "/v1/secrets/production/TOKEN", `{"value":"tok-e2e"}`, 204, ""},
		{"GET", "/v1/secrets", "", 200, `"name":"TOKEN"`},
		{"POST", "/v1/tools/t.secret/invoke", `{}`, 200, fmt.Sprintf("fp-%x", fpOf("Bearer tok-e2e"))},
		{"DELETE", "/v1/secrets/production/TOKEN", "", 204, ""},
		{"POST", "/v1/tools/t.secret/invoke", `{}`, 409, "secret-unavailable"},
		{"GET", "/v1/connections", "", 200, `"connections":[]`},
		{"GET", "/healthz", "", 200, "ok"},
		{"GET", "/readyz", "", 200, "ready"},
		{"GET", "/metrics", "", 200, `httptools_calls_total{outcome="ok",tool="t.secret"} 1`},
		{"GET", "/nowhere", "", 404, "not-found"},
	} {
		if st, body := p.do(t, p.key, tc.method, tc.path, tc.body); st != tc.status || !strings.Contains(body, tc.contains) {
			t.Errorf("%s %s: %d %.200s", tc.method, tc.path, st, body)
		}
	}
	_, body := p.do(t, p.key, "POST", "/v1/connections/google/authorize", `{"as":"company"}`)
	var auth struct{ URL string }
	json.Unmarshal([]byte(body), &auth)
	req, _ := http.NewRequest("GET", auth.URL, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var conn struct{ Connection struct{ ID, Status string } }
	json.Unmarshal(cb, &conn)
	if conn.Connection.Status != "active" {
		t.Fatalf("callback: %s", cb)
	}
	if st, body := p.do(t, p.key, "POST", "/v1/tools/t.mail/invoke", `{}`); st != 200 {
		t.Errorf("call with the connection: %d %s", st, body)
	}
	if st, _ := p.do(t, p.key, "DELETE", "/v1/connections/"+conn.Connection.ID, ""); st != 204 {
		t.Errorf("revoke: %d", st)
	}
	// MCP over HTTP on the binary, with the SDK's client.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(p.key)}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "m"}})
	if err != nil || res.IsError {
		t.Errorf("MCP call: %+v %v", res, err)
	}
	cs.Close()
	// SIGHUP with a new tool.
	w.write("two.json", strings.Replace(`{"id":"t.two","description":"Two.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/two"}}`, "{UP}", w.up.URL, 1))
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { st, _ := p.do(t, p.key, "GET", "/v1/tools/t.two", ""); return st == 200 })
	// SIGHUP with a broken file: the old set stays, the error is logged.
	w.write("broken.json", `{"id":"t.broken"}`)
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return strings.Contains(p.stderr.String(), "reload failed") })
	if st, _ := p.do(t, p.key, "GET", "/v1/tools/t.two", ""); st != 200 {
		t.Errorf("after a failed reload t.two is gone: %d", st)
	}
	// SIGTERM with a call in flight: the call completes, then exit 0.
	result := make(chan string, 1)
	go func() {
		st, body := p.do(t, p.key, "POST", "/v1/tools/t.slow/invoke", `{}`)
		result <- fmt.Sprint(st, " ", body)
	}()
	<-w.arrived
	p.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, func() bool { return strings.Contains(p.stderr.String(), "draining") })
	if _, err := http.Get(p.url + "/healthz"); err == nil {
		t.Error("still accepting new connections while draining")
	}
	close(w.hold)
	if got := <-result; !strings.HasPrefix(got, "200 ") {
		t.Errorf("the call in flight: %s", got)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, p.stderr)
		}
		p.done <- nil
	case <-time.After(testkit.WaitLimit): // its --drain-delay (5 s), then the drain
		t.Fatal("serve did not exit after SIGTERM")
	}
}

// bearer adds an API key to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func waitFor(t *testing.T, cond func() bool) { t.Helper(); testkit.WaitFor(t, "a condition", cond) }

// TestServeRefusesInvalidTools: start-up validates every manifest.
func TestServeRefusesInvalidTools(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"id":"x","description":"d","version":"1","input":{},"output":{}}`), 0o644)
	cmd := exec.Command(binary(t), "serve", "--tools", dir, "--db", "sqlite:"+filepath.Join(t.TempDir(), "db"), "--addr", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bad.json: version: must be X.Y.Z") {
		t.Fatalf("%v: %s", err, out)
	}
}

// TestServeRefusesStdioCommandsNotAllowed: a tool whose endpoint starts a
// command is refused by serve and mcp unless the operator allowed that
// exact command (--allow-stdio); validate takes it (the author's machine).
func TestServeRefusesStdioCommandsNotAllowed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "local.json"), []byte(`{"id":"acme.local","description":"A local MCP server's tool.","version":"1.0.0","mutating":false,
		"transport":"mcp","mcpEndpoint":"mcp+stdio:///usr/local/bin/acme-mcp --read-only","input":{"type":"object"},"output":{"type":"object"}}`), 0o644)
	args := []string{"serve", "--tools", dir, "--db", "sqlite:" + filepath.Join(t.TempDir(), "db"), "--addr", freeAddr(t)}
	out, err := exec.Command(binary(t), append(args, "--allow-stdio", "/usr/local/bin/other")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "local.json: mcpEndpoint: starts /usr/local/bin/acme-mcp, which the operator has not allowed") {
		t.Fatalf("serve: %v: %s", err, out)
	}
	if _, _, code := runCLI(t, "validate", dir); code != 0 {
		t.Errorf("validate refused it: exit %d", code)
	}
	// mcp, on a person's own desktop, refuses it the same way.
	mcpCmd := exec.Command(binary(t), "mcp", "--tools", dir)
	mcpCmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	if out, err := mcpCmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "which the operator has not allowed") {
		t.Errorf("mcp: %v: %s", err, out)
	}
	ok := exec.Command(binary(t), append(args, "--allow-stdio", "/usr/local/bin/acme-mcp")...)
	var outb testkit.Buffer // written by the process's copying goroutine
	ok.Stdout, ok.Stderr = &outb, &outb
	if err := ok.Start(); err != nil {
		t.Fatal(err)
	}
	defer ok.Process.Kill()
	testkit.WaitFor(t, "serve to start with the command allowed", func() bool { return strings.Contains(outb.String(), "API key for") })
}

// TestServeRefusesFilesystemHandlers: a handler that is a file on the
// author's disk is refused by serve, as the definition says production
// servers should (and serve holds no port), and accepted with a warning by
// validate (the author's own machine).
func TestServeRefusesFilesystemHandlers(t *testing.T) {
	dir := t.TempDir()
	src, _ := os.ReadFile("../../fixtures/warnings/filesystem-handler.json")
	os.WriteFile(filepath.Join(dir, "local.json"), src, 0o644)
	addr := freeAddr(t)
	cmd := exec.Command(binary(t), "serve", "--tools", dir, "--db", "sqlite:"+filepath.Join(t.TempDir(), "db"), "--addr", addr)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `local.json: codeArtifactRef.kind: "filesystem" names a file on the author's disk`) {
		t.Fatalf("serve: %v: %s", err, out)
	}
	if ln, err := net.Listen("tcp", addr); err != nil {
		t.Errorf("serve held %s after refusing its tools: %v", addr, err)
	} else {
		ln.Close()
	}
	vout, _, code := runCLI(t, "validate", dir)
	if code != 0 || !strings.Contains(vout, `warning: codeArtifactRef.kind: "filesystem" is for local development`) {
		t.Errorf("validate: exit %d, printed %q", code, vout)
	}
}

// TestReplicasOnPostgres: two serve processes on one PostgreSQL: a key made
// by the CLI works on both, a connection authorized on one is completed by
// the other's callback, and a connection expiring under load on both is
// refreshed once.
func TestReplicasOnPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	w := newWorld(t)
	env := append([]string{"HTTPTOOLS_MASTER_KEY=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32))}, e2eEnv...)
	addrA, addrB := freeAddr(t), freeAddr(t)
	// A's OAuth callback is B's: authorize on one, complete on the other.
	a := startServe(t, env, "--tools", w.tools, "--db", dsn, "--addr", addrA, "--allow-cidr", "127.0.0.0/8", "--apps", w.apps, "--public-url", "http://"+addrB)
	b := startServe(t, env, "--tools", w.tools, "--db", dsn, "--addr", addrB, "--allow-cidr", "127.0.0.0/8", "--apps", w.apps, "--public-url", "http://"+addrB)
	key := createKey(t, env, dsn)
	for _, p := range []*proc{a, b} {
		if st, body := p.do(t, key, "GET", "/v1/tools", ""); st != 200 {
			t.Fatalf("key on %s: %d %s", p.url, st, body)
		}
	}
	// A secret stored through A is used by B.
	if st, _ := a.do(t, key, "PUT", "/v1/secrets/production/TOKEN", `{"value":"tok-shared"}`); st != 204 {
		t.Fatalf("put on A: %d", st)
	}
	if st, body := b.do(t, key, "POST", "/v1/tools/t.secret/invoke", `{}`); st != 200 || !strings.Contains(body, fmt.Sprintf("fp-%x", fpOf("Bearer tok-shared"))) {
		t.Errorf("B uses A's secret: %d %s", st, body)
	}
	_, body := a.do(t, key, "POST", "/v1/connections/google/authorize", `{"as":"company"}`)
	var auth struct{ URL string }
	json.Unmarshal([]byte(body), &auth)
	resp, err := http.Get(auth.URL) // the provider redirects the browser to B
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "Connected") || !strings.HasPrefix(resp.Request.URL.String(), "http://"+addrB) {
		t.Fatalf("callback on B: %s %s", resp.Request.URL, page)
	}
	// Make the token expire, then load both replicas at once.
	db, _ := sql.Open("pgx", dsn)
	defer db.Close()
	if _, err := db.Exec(`UPDATE connections SET expiry = 1`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := []*proc{a, b}[i%2]
			if st, body := p.do(t, key, "POST", "/v1/tools/t.mail/invoke", `{}`); st != 200 {
				failed.Add(1)
				t.Log(st, body)
			}
		}()
	}
	wg.Wait()
	if g := w.provider.RefreshGrants.Load(); g != 1 || failed.Load() != 0 {
		t.Errorf("%d refresh grants and %d failed calls over two replicas; want 1 and 0", g, failed.Load())
	}
}

// TestMCPStdioToolset: httptools mcp --toolset serves one toolset of the
// policy to a desktop client: it lists that toolset's tools only, a tool
// outside it called by name gets the unknown tool's error with 0 upstream
// requests, and an unknown toolset stops the command before it serves.
func TestMCPStdioToolset(t *testing.T) {
	w := newWorld(t)
	state := t.TempDir()
	pol := filepath.Join(state, "policy.json")
	os.WriteFile(pol, []byte(`{"rules":[],"toolsets":{"echo-only":{"ids":["t.echo"]}}}`), 0o644)
	args := []string{"mcp", "--tools", w.tools, "--db", "sqlite:" + filepath.Join(state, "db"), "--allow-cidr", "127.0.0.0/8", "--policy", pol}
	out, err := exec.Command(binary(t), append(args, "--toolset", "nope")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `no toolset "nope"`) {
		t.Fatalf("an unknown toolset: %v %s", err, out)
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(binary(t), append(args, "--toolset", "echo-only")...)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "t.echo" {
		t.Fatalf("tools %v %v", tools, err)
	}
	before := w.calls.Load()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.slow", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), `unknown tool "t.slow"`) || w.calls.Load() != before {
		t.Errorf("a tool outside the toolset: %v, %d upstream requests", err, w.calls.Load()-before)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "3"}}); err != nil || res.IsError {
		t.Errorf("t.echo: %v %v", res, err)
	}
}

// TestApprovalFromADesktopClient: a pending approval of the person's call
// is asked in their MCP client (form elicitation, httptools mcp --person):
// the client is shown the tool and the input, answers yes, and the
// approval is approved by that person; a client answering no denies the
// next one.
func TestApprovalFromADesktopClient(t *testing.T) {
	w := newWorld(t)
	db := filepath.Join(t.TempDir(), "db")
	var mu sync.Mutex
	var shown []string
	answer := true
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			shown = append(shown, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": answer}}, nil
		}})
	cmd := exec.Command(binary(t), "mcp", "--tools", w.tools, "--db", "sqlite:"+db, "--allow-cidr", "127.0.0.0/8", "--person", "u1")
	ctx := context.Background()
	// The version the desktop clients speak today: from 2026-07-28 a
	// server asks only inside a call's answer.
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	store := testkit.SQLiteStore(t, db, nil)
	ask := func(input string) *auth.Approval {
		a, err := store.CreateApproval(ctx, &auth.Approval{Tenant: "local", Tool: "t.mail", Person: "u1", Run: "nightly", InputHash: "h", Input: input,
			RequestedBy: "key_kernel", Expires: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	decided := func(id string) *auth.Approval {
		var a *auth.Approval
		testkit.WaitFor(t, "the client's answer", func() bool {
			a, _ = store.Approval(ctx, "local", id)
			return a != nil && a.State != auth.ApprovalPending
		})
		return a
	}
	yes := ask(`{"to":"boss@example.com"}`)
	if a := decided(yes.ID); a.State != auth.ApprovalApproved || a.DecidedBy != "mcp-person:u1" {
		t.Errorf("after yes: %+v", a)
	}
	mu.Lock()
	if len(shown) != 1 || !strings.Contains(shown[0], "t.mail") || !strings.Contains(shown[0], "boss@example.com") {
		t.Errorf("the client was shown %q", shown)
	}
	answer = false
	mu.Unlock()
	if a := decided(ask(`{"to":"all@example.com"}`).ID); a.State != auth.ApprovalDenied {
		t.Errorf("after no: %+v", a)
	}
}

// TestMCPStdio runs httptools mcp as a subprocess and talks to it with the
// SDK's client.
func TestMCPStdio(t *testing.T) {
	w := newWorld(t)
	cmd := exec.Command(binary(t), "mcp", "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "db"), "--allow-cidr", "127.0.0.0/8", "--person", "u1")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 4 {
		t.Fatalf("tools %v %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "9"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "/items/9") {
		t.Fatalf("call %+v %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "input-validation-failed") {
		t.Fatalf("bad call %+v %v", res, err)
	}
}

// TestMCPStdioListChanged: on stdio, SIGHUP reloads the folder and the
// client is sent notifications/tools/list_changed; the new tool lists.
func TestMCPStdioListChanged(t *testing.T) {
	w := newWorld(t)
	cmd := exec.Command(binary(t), "mcp", "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "db"), "--allow-cidr", "127.0.0.0/8")
	changed := make(chan struct{}, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Fatalf("stdio capabilities %+v: want tools.listChanged", caps.Tools)
	}
	w.write("extra.json", `{"id":"t.extra","description":"Extra.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/extra"}}`)
	os.Remove(filepath.Join(w.tools, "slow.json"))
	cmd.Process.Signal(syscall.SIGHUP)
	select {
	case <-changed:
	case <-time.After(testkit.WaitLimit):
		t.Fatal("no notifications/tools/list_changed after SIGHUP")
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "t.extra") || strings.Contains(got, "t.slow") {
		t.Errorf("tools after reload: %s", got)
	}
}

// createKey makes an API key for tenant acme with the binary's keys create
// on the store dsn, in env, and returns it (the last line it prints).
func createKey(t *testing.T, env []string, dsn string) string {
	t.Helper()
	keyCmd := exec.Command(binary(t), "keys", "create", "--tenant", "acme", "--db", dsn)
	keyCmd.Env = append(os.Environ(), env...)
	out, err := keyCmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// TestMCPStdioKeepsItsHistory: a desktop session's calls are the local
// tenant's — its environment secrets serve them — and are in the store's
// history once the client has gone, though the writer had not flushed
// them yet.
func TestMCPStdioKeepsItsHistory(t *testing.T) {
	w := newWorld(t)
	db := filepath.Join(t.TempDir(), "db")
	cmd := exec.Command(binary(t), "mcp", "--tools", w.tools, "--db", "sqlite:"+db, "--allow-cidr", "127.0.0.0/8")
	cmd.Env = append(os.Environ(), "HTTPTOOLS_SECRET_PRODUCTION_TOKEN=stdio-secret-value-123")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.secret", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Errorf("t.secret with the local tenant's environment secret: %v %+v", err, res)
	}
	cs.Close() // ends the process
	cmd.Wait()
	calls, err := testkit.SQLiteStore(t, db, nil).Calls(ctx, "local", history.Filter{})
	if err != nil || len(calls) != 4 {
		t.Errorf("%d calls of tenant local kept, %v; want 4", len(calls), err)
	}
	for _, c := range calls {
		if strings.Contains(c.Answer, "stdio-secret-value-123") {
			t.Errorf("the secret is kept: %s", c.Answer)
		}
	}
}

// fpOf is the digest start the test upstream says of an Authorization.
func fpOf(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:6]
}
