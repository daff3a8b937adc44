package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/testkit"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// benchServer is a service with n generated tools on one local upstream,
// and an admin key.
func benchServer(b *testing.B, n int) (base, key string) {
	_, base, key = benchService(b, n)
	return base, key
}

// benchService is benchServer with its *Server.
func benchService(b *testing.B, n int) (srv *Server, base, key string) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true,"id":"x"}`)
	}))
	b.Cleanup(up.Close)
	dir := b.TempDir()
	for i := range n {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("t%04d.json", i)), []byte(fmt.Sprintf(`{"id":"gen.tool-%04d","description":"Generated tool %d.","version":"1.0.0","mutating":false,
			"input":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},"output":{"type":"object"},
			"spec":{"kind":"http","method":"GET","urlTemplate":"%s/items/{id}"}}`, i, i, up.URL)), 0o644)
	}
	keys, _ := sqlstore.NewKeyring(bytes.Repeat([]byte{9}, 32))
	store := openTestStore(b, filepath.Join(b.TempDir(), "db"), keys)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{Logger: quiet})))
	srv, err := New(Config{Store: store, Keys: store, ToolsDir: dir, Loader: &synth.Loader{Registry: reg}, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	b.Cleanup(hs.Close)
	key, _, _ = store.CreateAPIKey(context.Background(), "t", auth.RoleAdmin, "")
	return srv, hs.URL, key
}

func mcpPost(b *testing.B, client *http.Client, base, key, body string, header ...string) {
	req, _ := http.NewRequest("POST", base+"/mcp", bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// restDo sends one REST request with key and reads its answer to the end.
func restDo(b *testing.B, client *http.Client, method, url, key, body string) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// BenchmarkMCPToolsCall: one tools/call over streamable HTTP (JSON
// response) with 1 and with 1000 tools loaded, REST invoke beside it, and
// the same call as MCP 2026-07-28 sends it (its _meta and headers).
func BenchmarkMCPToolsCall(b *testing.B) {
	for _, n := range []int{1, 1000} {
		base, key := benchServer(b, n)
		client := &http.Client{}
		b.Run(fmt.Sprintf("mcp-tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mcpPost(b, client, base, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gen.tool-0000","arguments":{"id":"x"}}}`)
			}
		})
		b.Run(fmt.Sprintf("mcp-2026-tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mcpPost(b, client, base, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gen.tool-0000","arguments":{"id":"x"},`+
					`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
					"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "gen.tool-0000")
			}
		})
		b.Run(fmt.Sprintf("rest-tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				restDo(b, client, "POST", base+"/v1/tools/gen.tool-0000/invoke", key, `{"input":{"id":"x"}}`)
			}
		})
	}
}

// BenchmarkMCPToolsList: the first page of tools/list at 10, 1000 and
// 5000 tools, answered by the fast path (its pages encoded once) and by
// the SDK alone, in one run.
func BenchmarkMCPToolsList(b *testing.B) {
	for _, n := range []int{10, 1000, 5000} {
		srv, base, key := benchService(b, n)
		client := &http.Client{}
		for _, way := range []string{"fast", "sdk"} {
			b.Run(fmt.Sprintf("%d/%s", n, way), func(b *testing.B) {
				srv.noFastPath.Store(way == "sdk")
				defer srv.noFastPath.Store(false)
				b.ReportAllocs()
				for b.Loop() {
					mcpPost(b, client, base, key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
				}
			})
		}
	}
}

// BenchmarkRESTToolsList: GET /v1/tools at 10, 1000 and 5000 tools (the
// whole catalogue: REST does not page), encoded once per tool set and
// policy view.
func BenchmarkRESTToolsList(b *testing.B) {
	for _, n := range []int{10, 1000, 5000} {
		_, base, key := benchService(b, n)
		client := &http.Client{}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				restDo(b, client, "GET", base+"/v1/tools", key, "")
			}
		})
	}
}

// BenchmarkMCPFastPath: what the fast path saves a tools/call (1 tool
// loaded), 2025-11-25 and 2026-07-28, answered by the fast path and by the
// SDK alone (noFastPath) on the same server in the same run.
func BenchmarkMCPFastPath(b *testing.B) {
	srv, base, key := benchService(b, 1)
	client := &http.Client{}
	calls := []struct {
		name, body string
		header     []string
	}{
		{"2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gen.tool-0000","arguments":{"id":"x"}}}`, nil},
		{"2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gen.tool-0000","arguments":{"id":"x"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
			[]string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "gen.tool-0000"}},
	}
	for _, c := range calls {
		for _, way := range []string{"fast", "sdk"} {
			b.Run(c.name+"/"+way, func(b *testing.B) {
				srv.noFastPath.Store(way == "sdk")
				defer srv.noFastPath.Store(false)
				b.ReportAllocs()
				for b.Loop() {
					mcpPost(b, client, base, key, c.body, c.header...)
				}
			})
		}
	}
}
