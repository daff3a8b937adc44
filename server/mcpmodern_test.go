package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPListCacheHintsArePrivate: a tools/list depends on who asks, so
// every path answers it "private", with the list TTL (Config.ListTTL, 5
// minutes by default): two tenants, the fast path and the SDK's, the
// protocols before and from 2026-07-28, and stdio. server/discover is the
// same for everyone: "public", with the same TTL.
func TestMCPListCacheHintsArePrivate(t *testing.T) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(t *testing.T, r *rig, key, version, method, body string) map[string]any {
		req, _ := http.NewRequest("POST", r.http.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", version)
		req.Header.Set("Mcp-Method", method)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v struct {
			Result map[string]any `json:"result"`
		}
		if json.Unmarshal(b, &v) != nil || v.Result == nil {
			t.Fatalf("%s %s: %s", version, method, b)
		}
		return v.Result
	}
	for _, c := range []struct {
		name string
		ttl  time.Duration // Config.ListTTL
		want float64       // ttlMs
	}{{"default", 0, 300000}, {"ListTTL 90s", 90 * time.Second, 90000}} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, func(cfg *Config) { cfg.ListTTL = c.ttl })
			lists, discovers := 0, 0
			for _, sdk := range []bool{false, true} {
				r.srv.noFastPath.Store(sdk)
				for _, key := range []string{r.keyA, r.keyB} {
					for _, version := range []string{"2025-11-25", "2026-07-28"} {
						body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
						if version >= modernVersion {
							body = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`
						}
						before := r.srv.fastCalls.Load()
						res := post(t, r, key, version, "tools/list", body)
						if fast := r.srv.fastCalls.Load() > before; fast == sdk {
							t.Errorf("sdk %v, %s: the fast path answered: %v", sdk, version, fast)
						}
						if res["cacheScope"] != "private" || res["ttlMs"] != c.want {
							t.Errorf("sdk %v, %s tools/list: cacheScope %v, ttlMs %v; want private, %v", sdk, version, res["cacheScope"], res["ttlMs"], c.want)
						}
						lists++
					}
					res := post(t, r, key, "2026-07-28", "server/discover", `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{`+meta+`}}`)
					if res["cacheScope"] != "public" || res["ttlMs"] != c.want {
						t.Errorf("sdk %v, server/discover: cacheScope %v, ttlMs %v; want public, %v", sdk, res["cacheScope"], res["ttlMs"], c.want)
					}
					discovers++
				}
			}
			r.srv.noFastPath.Store(false)
			// stdio: the session's own server.
			ctx := context.Background()
			ct, st := mcp.NewInMemoryTransports()
			ss, err := r.srv.MCPServer("tenant-a", nil).Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			lr, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if lr.CacheScope != "private" || float64(lr.TTLMs) != c.want {
				t.Errorf("stdio tools/list: cacheScope %q, ttlMs %d; want private, %v", lr.CacheScope, lr.TTLMs, c.want)
			}
			lists++
			t.Logf("%d tools/list answers private with ttlMs %v, %d server/discover public", lists, c.want, discovers)
			if lists != 9 || discovers != 4 {
				t.Errorf("checked %d lists and %d discovers, want 9 and 4", lists, discovers)
			}
		})
	}
}
