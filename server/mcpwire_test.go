package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/tidwall/gjson"
)

// wireAnswer is an MCP POST's answer as it goes over the wire.
type wireAnswer struct {
	status        int
	contentType   string
	contentLength string
	body          string
}

func mcpWire(t *testing.T, r *rig, key, body, version string) wireAnswer {
	t.Helper()
	req, _ := http.NewRequest("POST", r.http.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if version >= "2026" {
		// The headers 2026-07-28 asks of a request.
		req.Header.Set("Mcp-Method", gjson.Get(body, "method").String())
		if n := gjson.Get(body, "params.name"); n.Exists() {
			req.Header.Set("Mcp-Name", n.String())
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return wireAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Length"), string(b)}
}

// TestMCPIdsEchoedAsSent: a JSON-RPC id comes back byte for byte as it was
// sent — 2^53+1, 2^64+1, a fraction, an exponent, -0, a string with an
// escape — whether the fast path or the SDK answers, for a tools/call, a
// tools/call of an unknown tool, a ping and an unknown method; an unknown
// method is a JSON-RPC error -32601 (HTTP 200, JSON), not a line of plain
// text.
func TestMCPIdsEchoedAsSent(t *testing.T) {
	r := newRig(t)
	ids := []string{"9007199254740993", "18446744073709551617", "-9007199254740993", "1.5", "1e2", "-0", "7", `"a\u0041"`, `"<&>"`, `"é"`}
	bodies := map[string]string{
		"tools/call":         `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"t.echo","arguments":{"id":"7"}}}`,
		"unknown tool":       `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"t.nope","arguments":{}}}`,
		"ping":               `{"jsonrpc":"2.0","id":ID,"method":"ping"}`,
		"unknown method":     `{"jsonrpc":"2.0","id":ID,"method":"nope/nope","params":{}}`,
		"newer tools/call":   `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"t.echo","arguments":{"id":"7"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		"initialize":         `{"jsonrpc":"2.0","id":ID,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		"unknown method old": `{"jsonrpc":"2.0","id":ID,"method":"resources/nope"}`,
	}
	echoed, wrong := 0, 0
	for _, fast := range []bool{true, false} {
		r.srv.noFastPath.Store(!fast)
		for name, tmpl := range bodies {
			version := "2025-11-25"
			if strings.HasPrefix(name, "newer") {
				version = "2026-07-28"
			}
			for _, id := range ids {
				a := mcpWire(t, r, r.keyA, strings.ReplaceAll(tmpl, "ID", id), version)
				if !strings.Contains(a.body, `"id":`+id+`,`) && !strings.Contains(a.body, `"id":`+id+`}`) {
					wrong++
					t.Errorf("fast path %v, %s, id %s: %d %s", fast, name, id, a.status, a.body)
					continue
				}
				echoed++
				if strings.HasPrefix(name, "unknown method") {
					var m struct {
						Error struct{ Code int } `json:"error"`
					}
					js := a.body
					if i := strings.Index(js, "data: "); i >= 0 {
						js = strings.TrimSpace(js[i+6:])
					}
					if a.status != 200 || json.Unmarshal([]byte(js), &m) != nil || m.Error.Code != -32601 {
						t.Errorf("fast path %v, %s, id %s: %d %s %s; want 200 and a JSON-RPC error -32601", fast, name, id, a.status, a.contentType, a.body)
					}
				}
			}
		}
	}
	r.srv.noFastPath.Store(false)
	t.Logf("%d answers echoed their id as sent, %d did not", echoed, wrong)
}

// TestMCPDeniedIsUnknownByteForByte: a tools/call of a tool the key's
// policy denies and one of a tool that does not exist (a name of the same
// length) get the same answer byte for byte — status, Content-Type,
// Content-Length, body — with the fast path on and off, on every protocol
// version; and no request reaches the upstream.
func TestMCPDeniedIsUnknownByteForByte(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Policies = c.Store.(PolicyStore) })
	ctx := context.Background()
	if err := r.store.PutPolicy(ctx, "tenant-a", []byte(`{"rules":[{"name":"no-secret","effect":"deny","tools":{"ids":["t.secret"]}}]}`)); err != nil {
		t.Fatal(err)
	}
	key, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	const denied, unknown = "t.secret", "t.secreX"
	before := r.upCalls.Load()
	answers := 0
	for _, version := range []string{"", "2025-06-18", "2025-11-25", "2026-07-28"} {
		for _, id := range []string{"1", `"x"`, "9007199254740993"} {
			var ref *wireAnswer
			for _, fast := range []bool{true, false} {
				r.srv.noFastPath.Store(!fast)
				meta := ""
				if version == "2026-07-28" {
					meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
				}
				for _, name := range []string{denied, unknown} {
					a := mcpWire(t, r, key, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+name+`","arguments":{}`+meta+`}}`, version)
					a.body = strings.ReplaceAll(a.body, name, "NAME")
					answers++
					if ref == nil {
						ref = &a
						if !strings.Contains(a.body, `unknown tool`) {
							t.Errorf("version %q: %s is answered %d %s", version, name, a.status, a.body)
						}
						continue
					}
					if a != *ref {
						t.Errorf("version %q, id %s, fast path %v, %s:\n%+v\nwant, as the first:\n%+v", version, id, fast, name, a, *ref)
					}
				}
			}
		}
	}
	r.srv.noFastPath.Store(false)
	if n := r.upCalls.Load() - before; n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
	t.Logf("%d answers compared", answers)
}
