package mcpremote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/mcpremote"
	"github.com/httptools/httptools/synth"
)

// Example calls a tool of another MCP server (the Go SDK's, on loopback)
// as a tool of httptools: its manifest names the endpoint and the bearer
// secret, the input is validated first and the result against the
// manifest's output.
func Example() {
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "forecast", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ City string }
			json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{StructuredContent: map[string]any{"city": in.City, "sky": "clear"}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer w-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	// The guard refuses loopback, and endpoints are https, unless the
	// operator says otherwise.
	syn := mcpremote.NewSynthesizer(mcpremote.Config{
		Client:    fetch.NewClient(fetch.Config{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}),
		PlainHTTP: []string{"127.0.0.1"},
	})
	defer syn.Close()
	reg := &synth.Registry{}
	reg.MustRegister(synth.KindMCP, syn)
	loader := synth.Loader{Registry: reg}
	tool, err := loader.Load([]byte(`{
	  "id": "weather.forecast", "description": "The sky over a city.", "version": "1.0.0", "mutating": false,
	  "transport": "mcp", "mcpEndpoint": "mcp+http://` + strings.TrimPrefix(srv.URL, "http://") + `/mcp",
	  "input": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
	  "output": {"type": "object", "required": ["sky"]},
	  "spec": {"kind": "mcp", "authorization": {"kind": "bearer", "secretRef": {"envName": "production", "name": "WEATHER"}}}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cc := synth.CallContext{Tenant: "acme", Secrets: auth.Map{"production/WEATHER": "w-token"}}
	res, err := tool.Invoke(context.Background(), cc, json.RawMessage(`{"city":"Oslo"}`), synth.InvokeOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Output))
	_, err = tool.Invoke(context.Background(), cc, json.RawMessage(`{"town":"Oslo"}`), synth.InvokeOptions{})
	fmt.Println(err.(*synth.Error).Code)
	// Output:
	// {"city":"Oslo","sky":"clear"}
	// input-validation-failed
}
