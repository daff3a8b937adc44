package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestMCPTraceFromMeta: a tools/call whose params._meta carries
// traceparent and tracestate runs in a span of the caller's trace, a child
// of the caller's span, with its trace state: on the fast path (counted as
// served there) and on the SDK's path (a 2026-07-28 call from the Go SDK's
// client).
func TestMCPTraceFromMeta(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	r := newRig(t, func(c *Config) { c.Loader.TracerProvider = tp })

	const (
		parent = "00f067aa0ba902b7"
		state  = "vendor=abc"
	)
	traceparent := func(trace string) string { return "00-" + trace + "-" + parent + "-01" }
	// spanOf is the invoke span of trace, which must be there once.
	spanOf := func(trace string) sdktrace.ReadOnlySpan {
		t.Helper()
		var found []sdktrace.ReadOnlySpan
		for _, s := range exp.GetSpans().Snapshots() {
			if s.Name() == "execute_tool t.echo" && s.SpanContext().TraceID().String() == trace {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Fatalf("trace %s: %d invoke spans, want 1 (all: %d)", trace, len(found), len(exp.GetSpans()))
		}
		return found[0]
	}
	check := func(path, trace string) {
		t.Helper()
		s := spanOf(trace)
		if got := s.Parent().SpanID().String(); got != parent {
			t.Errorf("%s: the span's parent is %s, want the caller's %s", path, got, parent)
		}
		if !s.Parent().IsRemote() {
			t.Errorf("%s: the parent is not the remote caller's", path)
		}
		if got := s.Parent().TraceState().String(); got != state {
			t.Errorf("%s: trace state %q, want %q", path, got, state)
		}
	}

	// The fast path.
	const fastTrace = "5bf92f3577b34da6a3ce929d0e0e4737"
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t.echo","arguments":{"id":"7"},"_meta":{"traceparent":%q,"tracestate":%q}}}`,
		traceparent(fastTrace), state)
	req, _ := http.NewRequest("POST", r.http.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+r.keyA)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	before := r.srv.fastCalls.Load()
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("fast path: %v %v", err, resp)
	}
	resp.Body.Close()
	if n := r.srv.fastCalls.Load() - before; n != 1 {
		t.Errorf("the fast path served %d calls, want 1", n)
	}
	check("fast path", fastTrace)

	// The SDK's path, 2026-07-28 (the fast path off: it would answer
	// this call too).
	const sdkTrace = "6bf92f3577b34da6a3ce929d0e0e4738"
	r.srv.noFastPath.Store(true)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: r.http.URL + "/mcp", HTTPClient: &http.Client{Transport: keyTransport{key: r.keyA}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s", v)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "7"},
		Meta: mcp.Meta{"traceparent": traceparent(sdkTrace), "tracestate": state}})
	if err != nil || res.IsError {
		t.Fatalf("SDK call: %v %+v", err, res)
	}
	check("SDK path", sdkTrace)

	// A call without trace context starts a trace of its own.
	n := len(exp.GetSpans())
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "7"}}); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans().Snapshots()
	if len(spans) != n+1 || spans[n].Parent().IsValid() {
		t.Errorf("a call without trace context: %d new spans, parent valid %v", len(spans)-n, len(spans) > n && spans[n].Parent().IsValid())
	}
}
