package mcpauth_test

import (
	"context"
	"testing"

	"github.com/httptools/httptools/mcpauth"
)

// BenchmarkFlowAuthorize is one whole authorization of a server first met:
// the protected resource and authorization server metadata, a dynamic
// registration, the authorization URL followed to the loopback callback,
// the code's exchange: five requests to an in-process fake that redirects
// at once (no person), and the callback's to the loopback listener.
func BenchmarkFlowAuthorize(b *testing.B) {
	f := newFakeAS(b)
	cfg := testConfig()
	h, err := mcpauth.ListenHeadless(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	req := f.challenge401("mcp:basic")
	b.ReportAllocs()
	for b.Loop() {
		flow := &mcpauth.Flow{Config: cfg, Registrar: &mcpauth.Registrar{Config: cfg, Store: &mcpauth.MemoryStore{}}, Opener: h}
		if _, err := flow.Authorize(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(f.count("/token")+f.count("/authorize")+f.count("/register")+f.count("/.well-known/oauth-protected-resource/mcp")+f.count("/.well-known/oauth-authorization-server"))/float64(b.N), "requests/op")
}

// BenchmarkParseChallenge reads a typical step-up challenge.
func BenchmarkParseChallenge(b *testing.B) {
	v := []string{`Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="more"`}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := mcpauth.ParseChallenge(v); err != nil {
			b.Fatal(err)
		}
	}
}
