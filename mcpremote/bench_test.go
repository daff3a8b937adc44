package mcpremote_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/mcpremote"
	"github.com/httptools/httptools/synth"
)

// BenchmarkRemoteCall: one call of a remote tool (the Go SDK's server over
// streamable HTTP, on loopback) through httptools — input and output
// validation, the pooled session, the guarded session client, the audit —
// against the same call made directly with the Go SDK's client on a
// session of its own. BENCHMARKS.md records the ratio.
func BenchmarkRemoteCall(b *testing.B) {
	srv := newServer()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)

	b.Run("sdk-direct", func(b *testing.B) { sdkCalls(b, hs.URL+"/mcp", nil) })
	b.Run("sdk-over-fetch", func(b *testing.B) {
		sdkCalls(b, hs.URL+"/mcp", testkit.LoopbackClient(fetch.Config{}).SessionClient(fetch.Session{Tool: "bench", Tenant: "t"}))
	})
	b.Run("httptools", func(b *testing.B) {
		syn := mcpremote.NewSynthesizer(mcpremote.Config{Client: testkit.LoopbackClient(fetch.Config{}), PlainHTTP: []string{"127.0.0.1"}})
		defer syn.Close()
		reg := &synth.Registry{}
		reg.MustRegister(synth.KindMCP, syn)
		tool, err := (&synth.Loader{Registry: reg}).Load(manifest("acme.echo", "mcp+http://"+hs.Listener.Addr().String()+"/mcp#echo", `,"mutating":false`))
		if err != nil {
			b.Fatal(err)
		}
		cc := synth.CallContext{Tenant: "t"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tool.Invoke(ctx, cc, args, synth.InvokeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// sdkCalls calls echo with the Go SDK's client alone, over hc (nil:
// http.DefaultClient), on one session.
func sdkCalls(b *testing.B, endpoint string, hc *http.Client) {
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
			b.Fatal(err)
		}
	}
}
