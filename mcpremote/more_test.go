package mcpremote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/mcpremote"
	"github.com/httptools/httptools/synth"
)

// cutFirstCall makes the server drop the connection of the first tools/call
// it gets, before the tool runs: the client cannot know whether it ran.
func cutFirstCall(r *remote) *atomic.Int64 {
	var posts atomic.Int64
	r.before = func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodPost {
			return false
		}
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/call"`)) {
			return false
		}
		if posts.Add(1) > 1 {
			return false
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
		return true
	}
	return &posts
}

// TestRemoteRetriesOnlyWhatChangesNothing: a call whose connection breaks
// is sent again only for a tool that is mutating: false.
func TestRemoteRetriesOnlyWhatChangesNothing(t *testing.T) {
	for _, c := range []struct {
		extra    string
		posts    int64
		succeeds bool
	}{
		{``, 1, false},
		{`,"mutating":false`, 2, true},
	} {
		r := startRemote(t, "http")
		posts := cutFirstCall(r)
		e := newEnv(t)
		tool := e.load(t, manifest("acme.echo", r.endpoint("mcp+http", "echo"), c.extra))
		res, ferr := call(t, tool, `{"text":"x"}`)
		if (ferr == nil) != c.succeeds || posts.Load() != c.posts {
			t.Errorf("%q: %d tools/call posts, error %v; want %d, success %v", c.extra, posts.Load(), ferr, c.posts, c.succeeds)
		}
		if ferr != nil && (ferr.Reason != mcpremote.ReasonRemoteUnreachable || !strings.Contains(ferr.Message, "not sent again")) {
			t.Errorf("mutating: %v", ferr)
		}
		if ferr == nil && string(res.Output) != `{"echo":"x"}` {
			t.Errorf("output %s", res.Output)
		}
	}
}

// tokens is a connection source that hands out "old" until asked to
// refresh, then "new", counting the refreshes.
type tokens struct{ refreshes atomic.Int64 }

func (s *tokens) AccessToken(ctx context.Context, req synth.ConnectionRequest) (string, error) {
	if req.ForceRefresh {
		s.refreshes.Add(1)
		return "new-token-5521", nil
	}
	return "old-token-9034", nil
}

// TestRemoteConnectionRefreshed: a connection's token the server refuses
// (401) is refreshed once and the call goes through with the new one.
func TestRemoteConnectionRefreshed(t *testing.T) {
	r := startRemote(t, "http")
	r.wantAuth = "Bearer new-token-5521"
	e := newEnv(t)
	tool := e.load(t, manifest("acme.echo", r.endpoint("mcp+http", "echo"), `,
		"needsSpec":{"connections":{"crm":{"app":"crm","permissions":["read"],"as":"company"}}},
		"spec":{"kind":"mcp","authorization":{"kind":"connection","connection":"crm"}}`))
	src := &tokens{}
	res, err := tool.Invoke(context.Background(), synth.CallContext{Tenant: "t1", Connections: src}, json.RawMessage(`{"text":"c"}`), synth.InvokeOptions{})
	if err != nil || string(res.Output) != `{"echo":"c"}` {
		t.Fatalf("%v %v", res, err)
	}
	if n := src.refreshes.Load(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if _, err := tool.Invoke(context.Background(), synth.CallContext{Tenant: "t1", Connections: src}, json.RawMessage(`{"text":"c"}`), synth.InvokeOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := src.refreshes.Load(); n != 2 {
		t.Errorf("%d refreshes after the second call (its first token is the old one again), want 2", n)
	}
	if strings.Contains(e.log.String(), "token-") {
		t.Error("the log holds a token")
	}
}

// TestRemoteReplicas: two replicas (two synthesizers) call one server in
// turn, with no affinity: each keeps a session of its own, and both
// recover when the server forgets them.
func TestRemoteReplicas(t *testing.T) {
	r := startRemote(t, "http")
	a, b := newEnv(t), newEnv(t)
	src := manifest("acme.echo", r.endpoint("mcp+http", "echo"), "")
	ta, tb := a.load(t, src), b.load(t, src)
	for i := range 10 {
		tool := ta
		if i%2 == 1 {
			tool = tb
		}
		if i == 6 {
			r.forget()
		}
		if _, ferr := call(t, tool, `{"text":"r"}`); ferr != nil {
			t.Fatalf("call %d: %v", i, ferr)
		}
	}
	if s, c := r.sessions.Load(), r.calls.Load(); s != 4 || c != 10 {
		t.Errorf("%d sessions and %d calls, want 4 (two a replica, before and after the server forgot them) and 10", s, c)
	}
}

// TestRemoteTrace: the call's span, and a client span for each request of
// the session under it, the trace context sent along.
func TestRemoteTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	r := startRemote(t, "http")
	var parents atomic.Int64
	r.before = func(w http.ResponseWriter, req *http.Request) bool {
		if req.Header.Get("Traceparent") != "" {
			parents.Add(1)
		}
		return false
	}
	client := testkit.LoopbackClient(fetch.Config{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	syn := mcpremote.NewSynthesizer(mcpremote.Config{Client: client, PlainHTTP: []string{"127.0.0.1"}})
	defer syn.Close()
	reg := &synth.Registry{}
	reg.MustRegister(synth.KindMCP, syn)
	tool, err := (&synth.Loader{Registry: reg, TracerProvider: tp}).Load(manifest("acme.echo", r.endpoint("mcp+http", "echo"), ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tool.Invoke(context.Background(), synth.CallContext{Tenant: "t"}, json.RawMessage(`{"text":"s"}`), synth.InvokeOptions{}); err != nil {
		t.Fatal(err)
	}
	var invoke sdktrace.ReadOnlySpan
	posts := 0
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() == "execute_tool acme.echo" {
			invoke = s
		}
	}
	if invoke == nil {
		t.Fatal("no execute_tool span")
	}
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() == "POST" && s.Parent().SpanID() == invoke.SpanContext().SpanID() {
			posts++
		}
	}
	// initialize, notifications/initialized, tools/list (drift, on its
	// own), tools/call: at least the call's and the handshake's under it.
	if posts < 2 || parents.Load() < 2 {
		t.Errorf("%d POST spans under the call's, %d requests with a traceparent", posts, parents.Load())
	}
}

// TestRemoteDrift: the first use lists the server's tools and warns of a
// remote tool missing or an input schema that differs.
func TestRemoteDrift(t *testing.T) {
	r := startRemote(t, "http")
	e := newEnv(t)
	differs := e.load(t, bytes.Replace(manifest("acme.echo", r.endpoint("mcp+http", "echo"), ""), []byte(`"required":["text"]`), []byte(`"required":[]`), 1))
	call(t, differs, `{"text":"x"}`)
	missing := e.load(t, manifest("acme.gone", r.endpoint("mcp+http", "gone"), ""))
	call(t, missing, `{"text":"x"}`)
	testkit.WaitFor(t, "two drift warnings", func() bool {
		l := e.log.String()
		return strings.Contains(l, `input schema of tool \"echo\" differs`) && strings.Contains(l, `offers no tool \"gone\"`)
	})
	same := e.load(t, manifest("acme.say", r.endpoint("mcp+http", "say"), ""))
	h := same.Handler().(*mcpremote.Handler)
	notes, err := h.Drift(context.Background(), synth.CallContext{Tenant: "t1"})
	if err != nil || len(notes) != 0 {
		t.Errorf("a manifest as the server has it: %v %v", notes, err)
	}
}

// TestRemoteHangsAtInitialize: a server that never answers the handshake
// costs a call its timeoutMs, not more, and the next call tries again.
func TestRemoteHangsAtInitialize(t *testing.T) {
	r := startRemote(t, "http")
	release := make(chan struct{})
	defer close(release)
	var inits atomic.Int64
	r.before = func(w http.ResponseWriter, req *http.Request) bool {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"initialize"`)) {
			return false
		}
		inits.Add(1)
		select {
		case <-req.Context().Done():
		case <-release:
		}
		return true
	}
	e := newEnv(t)
	tool := e.load(t, manifest("acme.echo", r.endpoint("mcp+http", "echo"), `,"spec":{"kind":"mcp","timeoutMs":300}`))
	for i := range 2 {
		start := time.Now()
		_, ferr := call(t, tool, `{"text":"x"}`)
		if ferr == nil || ferr.Reason != synth.ReasonTimeout {
			t.Fatalf("call %d: %v", i, ferr)
		}
		t.Logf("call %d: %v after %v, %d handshakes", i, ferr, time.Since(start), inits.Load())
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("call %d took %v for a timeoutMs of 300", i, d)
		}
	}
	if n := inits.Load(); n != 2 {
		t.Errorf("%d handshakes tried for 2 calls, want 2", n)
	}
}

// TestRemoteFirstCallsShareOneHandshake: twenty calls at once on a cold
// pool open one session.
func TestRemoteFirstCallsShareOneHandshake(t *testing.T) {
	r := startRemote(t, "http")
	e := newEnv(t)
	tool := e.load(t, manifest("acme.echo", r.endpoint("mcp+http", "echo"), `,"mutating":false`))
	errs := make(chan error, 20)
	for range 20 {
		go func() {
			_, err := tool.Invoke(context.Background(), tenant, json.RawMessage(`{"text":"x"}`), synth.InvokeOptions{})
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if s, c := r.sessions.Load(), r.calls.Load(); s != 1 || c != 20 {
		t.Errorf("%d sessions and %d calls, want 1 and 20", s, c)
	}
}

// TestRemoteDriftAgain: after CheckDriftAgain (a reload) the next call
// compares again.
func TestRemoteDriftAgain(t *testing.T) {
	r := startRemote(t, "http")
	e := newEnv(t)
	tool := e.load(t, manifest("acme.gone", r.endpoint("mcp+http", "gone"), ""))
	count := func() int { return strings.Count(e.log.String(), `offers no tool \"gone\"`) }
	call(t, tool, `{"text":"x"}`)
	testkit.WaitFor(t, "the first drift warning", func() bool { return count() == 1 })
	call(t, tool, `{"text":"x"}`)
	tool.Handler().(*mcpremote.Handler).CheckDriftAgain()
	call(t, tool, `{"text":"x"}`)
	testkit.WaitFor(t, "the second drift warning", func() bool { return count() == 2 })
}
