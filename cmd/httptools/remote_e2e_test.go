package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nodeInterop says whether interop/'s TypeScript SDK is installed; in CI
// it must be.
func nodeInterop(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("../../interop/node_modules/@modelcontextprotocol/sdk"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("interop/node_modules is missing: .ci/run must npm ci --prefix interop")
		}
		t.Skip("interop/node_modules is missing: npm ci --prefix interop")
	}
}

// startTSRemote starts interop/remote-server.mjs over HTTP (the TypeScript
// SDK's streamable HTTP and SSE servers) and returns its host:port.
func startTSRemote(t *testing.T, key string) string {
	cmd := exec.Command("node", "remote-server.mjs")
	cmd.Dir = "../../interop"
	cmd.Env = append(os.Environ(), "REMOTE_KEY="+key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the TypeScript remote server did not start: %v", err)
	}
	var hello struct{ Port int }
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Port == 0 {
		t.Fatalf("the TypeScript remote server said %q", line)
	}
	return fmt.Sprintf("127.0.0.1:%d", hello.Port)
}

// TestRemoteMCPTools serves tools of remote MCP servers — the official
// TypeScript SDK's over streamable HTTP, SSE and stdio, the Go SDK's over
// streamable HTTP behind a bearer — and runs each over REST, MCP and the
// console.
func TestRemoteMCPTools(t *testing.T) {
	nodeInterop(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	node, _ = filepath.EvalSymlinks(node)
	script, _ := filepath.Abs("../../interop/remote-server.mjs")
	const key = "remote-key-7f3a"
	ts := startTSRemote(t, key)

	// The Go SDK's server, wanting a bearer.
	var goCalls atomic.Int64
	gs := mcp.NewServer(&mcp.Implementation{Name: "go-remote", Version: "1"}, nil)
	gs.AddTool(&mcp.Tool{Name: "sum", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			goCalls.Add(1)
			var in struct{ A, B float64 }
			json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": in.A + in.B}}, nil
		})
	gh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return gs }, nil)
	goSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer go-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		gh.ServeHTTP(w, r)
	}))
	t.Cleanup(goSrv.Close)

	// The same server behind the company's OAuth connection: the fake
	// provider's access tokens only.
	w := newWorld(t)
	var tokensSeen sync.Map
	var lastToken atomic.Value
	connSrv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !w.provider.ValidAccess(tok) {
			http.Error(rw, "unauthorized", http.StatusUnauthorized)
			return
		}
		tokensSeen.Store(tok, true)
		lastToken.Store(tok)
		gh.ServeHTTP(rw, r)
	}))
	t.Cleanup(connSrv.Close)

	tools := t.TempDir()
	write := func(name, body string) { os.WriteFile(filepath.Join(tools, name), []byte(body), 0o644) }
	write("go-conn.json", `{"id":"go.conn-sum","description":"Adds, as the company.","version":"1.0.0","mutating":false,"transport":"mcp",
		"mcpEndpoint":"mcp+http://`+strings.TrimPrefix(connSrv.URL, "http://")+`/#sum",
		"input":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}},"output":{"type":"object"},
		"needsSpec":{"connections":{"gmail":{"app":"google","permissions":["gmail.send"],"as":"company"}}},
		"spec":{"kind":"mcp","authorization":{"kind":"connection","connection":"gmail"}}}`)
	text := `"input":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`
	write("ts-http.json", `{"id":"ts.http-echo","description":"Echo over streamable HTTP.","version":"1.0.0","mutating":false,"transport":"mcp",
		"mcpEndpoint":"mcp+http://`+ts+`/mcp-key#echo",`+text+`,"output":{"type":"object","properties":{"echo":{"type":"string"}}},
		"spec":{"kind":"mcp","authorization":{"kind":"header","headerName":"X-Api-Key","secretRef":{"envName":"production","name":"REMOTE_KEY"}}}}`)
	write("ts-sse.json", `{"id":"ts.sse-echo","description":"Echo over SSE.","version":"1.0.0","mutating":false,"transport":"mcp",
		"mcpEndpoint":"mcp+sse://`+ts+`/sse#echo",`+text+`,"output":{"type":"object"}}`)
	write("ts-shout.json", `{"id":"ts.shout","description":"Text only.","version":"1.0.0","transport":"mcp",
		"mcpEndpoint":"mcp+http://`+ts+`/mcp",`+text+`,"output":{"type":"string"}}`)
	write("ts-fail.json", `{"id":"ts.fail","description":"Fails.","version":"1.0.0","transport":"mcp",
		"mcpEndpoint":"mcp+http://`+ts+`/mcp",`+text+`,"output":{}}`)
	write("ts-stdio.json", `{"id":"ts.stdio-echo","description":"Echo over stdio.","version":"1.0.0","mutating":false,"transport":"mcp",
		"mcpEndpoint":"mcp+stdio://`+node+` `+script+` --stdio#echo",`+text+`,"output":{"type":"object"}}`)
	write("go-sum.json", `{"id":"go.sum","description":"Adds.","version":"1.0.0","mutating":false,"transport":"mcp",
		"mcpEndpoint":"mcp+http://`+strings.TrimPrefix(goSrv.URL, "http://")+`/",
		"input":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}},"output":{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]},
		"spec":{"kind":"mcp","authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"GO_TOKEN"}}}}`)

	state := t.TempDir()
	p := startServe(t, e2eEnv, "--tools", tools, "--db", "sqlite:"+filepath.Join(state, "serve.db"), "--addr", "127.0.0.1:0",
		"--allow-cidr", "127.0.0.1/32", "--mcp-plain-http", "127.0.0.1", "--allow-stdio", node, "--apps", w.apps)
	for _, s := range [][2]string{{"REMOTE_KEY", key}, {"GO_TOKEN", "go-token"}} {
		if st, body := p.do(t, p.key, "PUT", "/v1/secrets/production/"+s[0], `{"value":"`+s[1]+`"}`); st != 204 {
			t.Fatalf("secret %s: %d %s", s[0], st, body)
		}
	}

	// REST.
	for _, c := range []struct{ tool, input, want string }{
		{"ts.http-echo", `{"text":"hi"}`, `"via":"streamable-http"`},
		{"ts.sse-echo", `{"text":"hi"}`, `"via":"sse"`},
		{"ts.stdio-echo", `{"text":"hi"}`, `"via":"stdio"`},
		{"ts.shout", `{"text":"hi"}`, `"HI!"`},
		{"go.sum", `{"a":2,"b":3}`, `"sum":5`},
	} {
		st, body := p.do(t, p.key, "POST", "/v1/tools/"+c.tool+"/invoke", `{"input":`+c.input+`}`)
		if st != 200 || !strings.Contains(body, c.want) {
			t.Errorf("REST %s: %d %s", c.tool, st, body)
		}
	}
	st, body := p.do(t, p.key, "POST", "/v1/tools/ts.fail/invoke", `{"input":{"text":"that"}}`)
	if st != 502 && st != 500 || !strings.Contains(body, "remote-tool-error") || !strings.Contains(body, "cannot do that") {
		t.Errorf("REST ts.fail: %d %s", st, body)
	}
	if st, body := p.do(t, p.key, "POST", "/v1/tools/ts.http-echo/invoke", `{"input":{"text":5}}`); st != 400 || !strings.Contains(body, "input-validation-failed") {
		t.Errorf("REST bad input: %d %s", st, body)
	}
	// A dry run names the server, the tool and the credential's header,
	// never its value, and sends nothing.
	if st, body := p.do(t, p.key, "POST", "/v1/tools/ts.http-echo/dry-run", `{"input":{"text":"dry"}}`); st != 200 ||
		!strings.Contains(body, `"tool":"echo"`) || !strings.Contains(body, `X-Api-Key: ***`) || strings.Contains(body, key) {
		t.Errorf("REST dry run: %d %s", st, body)
	}
	if strings.Contains(p.stderr.String(), key) || strings.Contains(p.stderr.String(), "go-token") {
		t.Error("the service's log holds a remote credential")
	}

	// The company's connection: its token, then a new one when the
	// server refuses the first (refreshed once, the call sent again).
	_, body = p.do(t, p.key, "POST", "/v1/connections/google/authorize", `{"as":"company"}`)
	var authz struct{ URL string }
	json.Unmarshal([]byte(body), &authz)
	req, _ := http.NewRequest("GET", authz.URL, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st, body := p.do(t, p.key, "POST", "/v1/tools/go.conn-sum/invoke", `{"input":{"a":1,"b":1}}`); st != 200 || !strings.Contains(body, `"sum":2`) {
		t.Fatalf("connection call: %d %s", st, body)
	}
	w.provider.ExpireAccess(lastToken.Load().(string))
	if st, body := p.do(t, p.key, "POST", "/v1/tools/go.conn-sum/invoke", `{"input":{"a":2,"b":2}}`); st != 200 || !strings.Contains(body, `"sum":4`) {
		t.Fatalf("connection call after the token expired: %d %s", st, body)
	}
	n := 0
	tokensSeen.Range(func(any, any) bool { n++; return true })
	if n != 2 {
		t.Errorf("the server accepted %d tokens, want 2 (the first, then the refreshed one)", n)
	}

	// MCP, through the Go SDK's client.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(p.key)}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "go.sum", Arguments: map[string]any{"a": 40, "b": 2}})
	if err != nil || res.IsError || !strings.Contains(fmt.Sprint(res.StructuredContent), "42") {
		t.Errorf("MCP go.sum: %+v %v", res, err)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ts.fail", Arguments: map[string]any{"text": "it"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "cannot do it") {
		t.Errorf("MCP ts.fail: %+v %v", res, err)
	}

	// The console.
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	resp, err = hc.PostForm(p.url+"/ui/login", url.Values{"key": {p.key}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = hc.PostForm(p.url+"/ui/tools/ts.sse-echo", url.Values{"in.text": {"from the console"}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "from the console") || !strings.Contains(string(page), "sse") {
		t.Errorf("console run: %d\n%.3000s", resp.StatusCode, page)
	}
	if n := goCalls.Load(); n != 4 {
		t.Errorf("the Go server ran %d calls, want 4", n)
	}
}

// TestValidateRemote: validate --remote compares each remote tool with
// what its server (the TypeScript SDK's) lists.
func TestValidateRemote(t *testing.T) {
	nodeInterop(t)
	const key = "remote-key-validate"
	ts := startTSRemote(t, key)
	dir := t.TempDir()
	write := func(name, body string) { os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644) }
	head := `"description":"d","version":"1.0.0","mutating":false,"transport":"mcp","output":{"type":"object"},`
	write("same.json", `{"id":"ts.echo",`+head+`"mcpEndpoint":"mcp+http://`+ts+`/mcp-key",
		"input":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},
		"spec":{"kind":"mcp","authorization":{"kind":"header","headerName":"X-Api-Key","secretRef":{"envName":"production","name":"REMOTE_KEY"}}}}`)
	write("differs.json", `{"id":"ts.shout",`+head+`"mcpEndpoint":"mcp+sse://`+ts+`/sse","input":{"type":"object"}}`)
	write("missing.json", `{"id":"ts.gone",`+head+`"mcpEndpoint":"mcp+http://`+ts+`/mcp","input":{"type":"object"}}`)
	run := func(args ...string) (string, int) {
		cmd := exec.Command(binary(t), append([]string{"validate", "--remote", "--allow-cidr", "127.0.0.1/32", "--mcp-plain-http", "127.0.0.1"}, args...)...)
		cmd.Env = append(os.Environ(), "HTTPTOOLS_SECRET_PRODUCTION_REMOTE_KEY="+key)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, rc := run(dir)
	if rc != 0 || !strings.Contains(out, `differs.json: warning: mcpEndpoint: the server's input schema of tool "shout" differs`) ||
		!strings.Contains(out, `missing.json: warning: mcpEndpoint: the server offers no tool "gone"`) || strings.Contains(out, "same.json") ||
		!strings.Contains(out, "3 manifests, 0 errors, 2 warnings") {
		t.Errorf("rc %d:\n%s", rc, out)
	}
	write("closed.json", `{"id":"ts.closed",`+head+`"mcpEndpoint":"mcp+http://127.0.0.1:1/mcp","input":{"type":"object"}}`)
	out, rc = run(filepath.Join(dir, "closed.json"))
	if rc != 1 || !strings.Contains(out, "closed.json: mcpEndpoint: the server could not be asked for its tools") {
		t.Errorf("an unreachable server: rc %d:\n%s", rc, out)
	}
}
