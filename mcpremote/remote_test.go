package mcpremote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/mcpremote"
	"github.com/httptools/httptools/synth"
)

const secret = "s3cr3t-remote-token"

// remote is a real MCP server of the official Go SDK, over streamable HTTP
// and over SSE, on loopback, with the tools the tests call.
type remote struct {
	t        *testing.T
	srv      *httptest.Server
	handler  atomic.Pointer[http.Handler] // swapped to forget every session
	live     atomic.Pointer[mcp.Server]   // the server behind handler: its tools may be changed
	calls    atomic.Int64                 // tools/call requests that reached a tool
	requests atomic.Int64                 // HTTP requests
	sessions atomic.Int64                 // initialize requests
	wantAuth string                       // the Authorization a request must carry, "" for none
	hang     chan struct{}
	forget   func() // a new server behind the same address: every session forgotten
	// before, when set, sees each request first; true means it answered.
	before func(w http.ResponseWriter, r *http.Request) bool
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	obj := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Text string }
		json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{StructuredContent: map[string]any{"echo": in.Text}, Content: []mcp.Content{&mcp.TextContent{Text: `{"echo":"` + in.Text + `"}`}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "say", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Text string }
		json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you said " + in.Text}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such account; your token " + secret + " is fine"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "bad", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"n": "not a number"}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "big", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("answered by the test's own writer")
	})
	return s
}

func startRemote(t *testing.T, transport string) *remote {
	r := &remote{t: t, hang: make(chan struct{})}
	mk := func() http.Handler {
		s := newServer()
		obj := map[string]any{"type": "object"}
		s.AddTool(&mcp.Tool{Name: "hang", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
			case <-r.hang:
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil
		})
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				switch method {
				case "tools/call":
					r.calls.Add(1)
				case "initialize":
					r.sessions.Add(1)
				}
				return next(ctx, method, req)
			}
		})
		r.live.Store(s)
		if transport == "sse" {
			return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
		}
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}
	h := mk()
	r.handler.Store(&h)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if r.before != nil && r.before(w, req) {
			return
		}
		if r.wantAuth != "" && req.Header.Get("Authorization") != r.wantAuth {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		(*r.handler.Load()).ServeHTTP(w, req)
	}))
	r.forget = func() { h := mk(); r.handler.Store(&h) }
	t.Cleanup(func() { close(r.hang); r.srv.Close() })
	return r
}

// endpoint is the server's mcpEndpoint.
func (r *remote) endpoint(scheme, tool string) string {
	return scheme + "://" + strings.TrimPrefix(r.srv.URL, "http://") + "/mcp#" + tool
}

// env is a synthesizer over a guarded client that allows loopback plain
// HTTP, as serve --allow-cidr 127.0.0.1/32 would, with its log.
type env struct {
	syn    *mcpremote.Synthesizer
	client *fetch.Client // every request of its HTTP sessions
	loader *synth.Loader
	log    *testkit.Buffer
	mem    *budget.Budget
	read   *atomic.Int64 // bytes of answers read from the wire
}

func newEnv(t *testing.T) *env {
	e := &env{log: &testkit.Buffer{}, mem: budget.New(256 << 20), read: &atomic.Int64{}}
	logger := slog.New(slog.NewTextHandler(e.log, nil))
	client := fetch.NewClient(fetch.Config{
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Logger: logger, Budget: e.mem,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripper(func(r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				if err == nil {
					resp.Body = &counted{ReadCloser: resp.Body, n: e.read}
				}
				return resp, err
			})
		},
	})
	e.client = client
	e.syn = mcpremote.NewSynthesizer(mcpremote.Config{Client: client, PlainHTTP: []string{"127.0.0.1"}, Logger: logger, IdleTimeout: time.Minute})
	t.Cleanup(func() { e.syn.Close() })
	reg := &synth.Registry{}
	reg.MustRegister(synth.KindMCP, e.syn)
	e.loader = &synth.Loader{Registry: reg}
	return e
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type counted struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// manifest is a remote tool's manifest; extra members are added to it.
func manifest(id, endpoint string, extra string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"description":"a remote tool","version":"1.0.0","transport":"mcp","mcpEndpoint":%q,
		"input":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},
		"output":{}%s}`, id, endpoint, extra))
}

func (e *env) load(t *testing.T, src []byte) *synth.Tool {
	t.Helper()
	tool, err := e.loader.Load(src)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return tool
}

var tenant = synth.CallContext{Tenant: "t1", Secrets: auth.Map{"production/TOKEN": secret}}

func call(t *testing.T, tool *synth.Tool, input string) (*synth.Result, *synth.Error) {
	t.Helper()
	res, err := tool.Invoke(context.Background(), tenant, json.RawMessage(input), synth.InvokeOptions{})
	if err != nil {
		var e *synth.Error
		if !errors.As(err, &e) {
			t.Fatalf("not a *synth.Error: %v", err)
		}
		return nil, e
	}
	return res, nil
}

func TestRemoteToolOverHTTPAndSSE(t *testing.T) {
	for _, tr := range []string{"http", "sse"} {
		t.Run(tr, func(t *testing.T) {
			r := startRemote(t, tr)
			e := newEnv(t)
			echo := e.load(t, manifest("acme.echo", r.endpoint("mcp+"+tr, "echo"), `,"mutating":false`))
			res, ferr := call(t, echo, `{"text":"hi"}`)
			if ferr != nil || string(res.Output) != `{"echo":"hi"}` {
				t.Fatalf("echo: %s, %v", res.Output, ferr)
			}
			say := e.load(t, manifest("acme.say", r.endpoint("mcp+"+tr, "say"), ""))
			res, ferr = call(t, say, `{"text":"hi"}`)
			if ferr != nil || string(res.Output) != `"you said hi"` {
				t.Fatalf("say: %s, %v", res.Output, ferr)
			}
			// The input is checked before anything is sent.
			before := r.requests.Load()
			if _, ferr := call(t, echo, `{"text":5}`); ferr == nil || ferr.Code != synth.CodeInputValidationFailed {
				t.Fatalf("bad input: %v", ferr)
			}
			if n := r.requests.Load() - before; n != 0 {
				t.Errorf("a refused input sent %d requests", n)
			}
			// Ten calls of two tools share one session.
			for range 10 {
				if _, ferr := call(t, echo, `{"text":"again"}`); ferr != nil {
					t.Fatal(ferr)
				}
			}
			if got := r.sessions.Load(); got != 1 {
				t.Errorf("%d sessions opened for 12 calls of one tenant, want 1", got)
			}
			if got := r.calls.Load(); got != 12 {
				t.Errorf("%d calls reached the server, want 12", got)
			}
			// Another tenant gets a session of its own.
			if _, err := echo.Invoke(context.Background(), synth.CallContext{Tenant: "t2"}, json.RawMessage(`{"text":"x"}`), synth.InvokeOptions{}); err != nil {
				t.Fatal(err)
			}
			// The server counts a handshake as it handles it, which over
			// SSE may finish on its own goroutine a moment after the answer.
			deadline := time.Now().Add(testkit.WaitLimit)
			for r.sessions.Load() < 2 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := r.sessions.Load(); got != 2 {
				t.Errorf("%d sessions after a second tenant's call, want 2", got)
			}
			if !strings.Contains(e.log.String(), "outbound call") || !strings.Contains(e.log.String(), "tool=acme.echo") {
				t.Errorf("no audit record of the session's requests:\n%s", e.log)
			}
		})
	}
}

func TestRemoteToolErrors(t *testing.T) {
	r := startRemote(t, "http")
	e := newEnv(t)
	// isError: a handler error with the remote text, the secret redacted.
	fail := e.load(t, manifest("acme.fail", r.endpoint("mcp+http", "fail"), `,"spec":{"kind":"mcp","authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}`))
	_, ferr := call(t, fail, `{"text":"x"}`)
	if ferr == nil || ferr.Code != synth.CodeHandlerError || ferr.Reason != mcpremote.ReasonRemoteToolError ||
		!strings.Contains(ferr.Outside, "no such account") || strings.Contains(ferr.Message, "no such account") || strings.Contains(ferr.Error(), secret) {
		t.Fatalf("isError: %#v", ferr)
	}
	// A result that fails the manifest's output schema.
	src := bytes.Replace(manifest("acme.bad", r.endpoint("mcp+http", "bad"), ""), []byte(`"output":{}`),
		[]byte(`"output":{"type":"object","properties":{"n":{"type":"number"}}}`), 1)
	bad := e.load(t, src)
	if _, ferr := call(t, bad, `{"text":"x"}`); ferr == nil || ferr.Code != synth.CodeOutputValidationFailed {
		t.Fatalf("bad output: %v", ferr)
	}
	// An unknown remote tool: refused by the server.
	missing := e.load(t, manifest("acme.nothere", r.endpoint("mcp+http", "nothere"), ""))
	if _, ferr := call(t, missing, `{"text":"x"}`); ferr == nil || ferr.Reason != mcpremote.ReasonRemoteRefused && ferr.Reason != mcpremote.ReasonRemoteToolError {
		t.Fatalf("unknown tool: %v", ferr)
	}
}

func TestRemoteToolCredential(t *testing.T) {
	r := startRemote(t, "http")
	r.wantAuth = "Bearer " + secret
	e := newEnv(t)
	none := e.load(t, manifest("acme.echo", r.endpoint("mcp+http", "echo"), ""))
	if _, ferr := call(t, none, `{"text":"x"}`); ferr == nil || ferr.Reason != mcpremote.ReasonRemoteUnauthorized {
		t.Fatalf("without a credential: %v", ferr)
	}
	with := e.load(t, manifest("acme.echo", r.endpoint("mcp+http", "echo"), `,"spec":{"kind":"mcp","authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}`))
	if res, ferr := call(t, with, `{"text":"x"}`); ferr != nil || string(res.Output) != `{"echo":"x"}` {
		t.Fatalf("with the credential: %v", ferr)
	}
	if strings.Contains(e.log.String(), secret) {
		t.Errorf("the log holds the secret")
	}
}

func TestRemoteToolHangs(t *testing.T) {
	r := startRemote(t, "http")
	e := newEnv(t)
	hang := e.load(t, manifest("acme.hang", r.endpoint("mcp+http", "hang"), `,"spec":{"kind":"mcp","timeoutMs":300}`))
	start := time.Now()
	_, ferr := call(t, hang, `{"text":"x"}`)
	if ferr == nil || ferr.Reason != synth.ReasonTimeout {
		t.Fatalf("hang: %v", ferr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %v past its 300ms", d)
	}
}

// TestRemoteToolAnswersTooMuch: a server that answers a call with 100 MiB,
// as one JSON body or as one event of a stream, is cut at the tool's cap
// (limits.memMB 1): at most the cap and a little is read, the budget is
// given back, the call fails with response-too-large.
func TestRemoteToolAnswersTooMuch(t *testing.T) {
	for _, ct := range []string{"application/json", "text/event-stream"} {
		t.Run(ct, func(t *testing.T) {
			r := startRemote(t, "http")
			var sent atomic.Int64
			r.before = func(w http.ResponseWriter, req *http.Request) bool {
				body, _ := io.ReadAll(req.Body)
				req.Body = io.NopCloser(bytes.NewReader(body))
				if !bytes.Contains(body, []byte(`"name":"big"`)) {
					return false
				}
				var msg struct{ ID json.RawMessage }
				json.Unmarshal(body, &msg)
				w.Header().Set("Content-Type", ct)
				head := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"`
				if ct == "text/event-stream" {
					head = "event: message\ndata: " + head
				}
				io.WriteString(w, head)
				chunk := bytes.Repeat([]byte("x"), 64<<10)
				for range 100 << 20 / len(chunk) {
					n, err := w.Write(chunk)
					sent.Add(int64(n))
					if err != nil {
						break
					}
				}
				return true
			}
			e := newEnv(t)
			big := e.load(t, manifest("acme.big", r.endpoint("mcp+http", "big"), `,"limits":{"memMB":1,"cpuMs":1000}`))
			_, ferr := call(t, big, `{"text":"x"}`)
			if ferr == nil || ferr.Reason != httpspec.ReasonResponseTooLarge {
				t.Fatalf("100 MiB answer: %v", ferr)
			}
			if n := e.read.Load(); n > 2<<20 {
				t.Errorf("read %d bytes of a 100 MiB answer with a 1 MiB cap", n)
			}
			testkit.WaitFor(t, "the budget given back", func() bool { return e.mem.InUse() == 0 })
			t.Logf("%s: %v; %d bytes read of the %d the server got out", ct, ferr, e.read.Load(), sent.Load())
		})
	}
}

func TestRemoteToolRedirectToLoopback(t *testing.T) {
	forbidden, reached := forbiddenListener(t)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+forbidden+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	e := newEnv(t)
	tool := e.load(t, manifest("acme.echo", "mcp+http://"+strings.TrimPrefix(redirector.URL, "http://")+"/mcp#echo", ""))
	_, ferr := call(t, tool, `{"text":"x"}`)
	if ferr == nil || !strings.Contains(ferr.Error(), "127.0.0.2") {
		t.Fatalf("redirect to loopback: %v", ferr)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d connections reached the loopback address a redirect named", n)
	}
}

func TestRemoteSessionExpires(t *testing.T) {
	r := startRemote(t, "http")
	e := newEnv(t)
	// Mutating: the call goes again only because the server said it
	// never saw it (404 to the session).
	echo := e.load(t, manifest("acme.echo", r.endpoint("mcp+http", "echo"), ""))
	if _, ferr := call(t, echo, `{"text":"a"}`); ferr != nil {
		t.Fatal(ferr)
	}
	r.forget()
	if res, ferr := call(t, echo, `{"text":"b"}`); ferr != nil || string(res.Output) != `{"echo":"b"}` {
		t.Fatalf("after the server forgot the session: %v", ferr)
	}
	if s, c := r.sessions.Load(), r.calls.Load(); s != 2 || c != 2 {
		t.Errorf("%d sessions and %d calls, want 2 and 2 (no call run twice)", s, c)
	}
}

// TestSSEEndpointElsewhere: an SSE server whose endpoint event sends the
// client's messages to another host (a loopback address the guard does
// not allow, a metadata address) gets nothing there, and never the
// credential.
func TestSSEEndpointElsewhere(t *testing.T) {
	forbidden, reached := forbiddenListener(t)
	for _, target := range []string{"http://" + forbidden + "/messages", "http://169.254.169.254/latest/meta-data/"} {
		var gotAuth atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "" {
				gotAuth.Add(1)
			}
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: endpoint\ndata: "+target+"\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		e := newEnv(t)
		tool := e.load(t, manifest("acme.echo", "mcp+sse://"+strings.TrimPrefix(srv.URL, "http://")+"/sse#echo",
			`,"spec":{"kind":"mcp","timeoutMs":2000,"authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}`))
		_, ferr := call(t, tool, `{"text":"x"}`)
		if ferr == nil || strings.Contains(ferr.Error(), secret) {
			t.Errorf("%s: %v", target, ferr)
		}
		t.Logf("%s: %v", target, ferr)
		if n := gotAuth.Load(); n != 1 {
			t.Errorf("the SSE server itself got the credential %d times, want 1", n)
		}
		srv.CloseClientConnections()
		srv.Close()
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d connections reached the address an endpoint event named", n)
	}
}

// forbiddenListener listens on a second loopback address, which the
// tests' guard does not allow, and counts the connections that reach it.
func forbiddenListener(t *testing.T) (string, *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skip("no 127.0.0.2 on this machine:", err)
	}
	reached := &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), reached
}

// TestRemoteAllowlist: the tool's network allowlist must cover its server
// (at load) and holds on every redirect hop: a redirect to another name of
// the same machine is refused before anything is sent there.
func TestRemoteAllowlist(t *testing.T) {
	r := startRemote(t, "http")
	e := newEnv(t)
	if _, err := e.loader.Load(manifest("acme.echo", r.endpoint("mcp+http", "echo"), `,"network":{"kind":"allowlist","hosts":["api.example.com"]}`)); err == nil ||
		!strings.Contains(err.Error(), "network.hosts: does not allow the server's host 127.0.0.1") {
		t.Errorf("an allowlist without the server: %v", err)
	}
	if _, err := e.loader.Load(manifest("acme.echo", r.endpoint("mcp+http", "echo"), `,"network":{"kind":"none"}`)); err == nil {
		t.Error("network none loads")
	}
	_, port, _ := net.SplitHostPort(r.srv.Listener.Addr().String())
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "http://localhost:"+port+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	tool := e.load(t, manifest("acme.echo", "mcp+http://"+strings.TrimPrefix(redirector.URL, "http://")+"/mcp#echo", `,"network":{"kind":"allowlist","hosts":["127.0.0.1"]}`))
	_, ferr := call(t, tool, `{"text":"x"}`)
	if ferr == nil || !strings.Contains(ferr.Error(), "not in the tool's network allowlist") {
		t.Fatalf("a redirect off the allowlist: %v", ferr)
	}
	if n := r.requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server behind the refused hop", n)
	}
}
