//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 but served to the clients that still use it (issue 40, point 5; the official conformance suite tests it)

package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/httptools/httptools/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPCallNotices: a call's steps (started, request sent, upstream
// answering, ended) reach the client as 4 notifications/progress for a
// call with a progress token, increasing, the last with its total, and as
// 4 notifications/message once the client set a level that takes info: over
// HTTP before 2026-07-28 by logging/setLevel (kept per key), on 2026-07-28
// by the request's _meta, on stdio by the session's level. A call nobody
// asked notices for is answered as JSON, and a level above info gets none.
func TestMCPCallNotices(t *testing.T) {
	r := newRig(t)
	post := func(key, proto, body string, hdr ...string) (contentType, answer string) {
		t.Helper()
		req, _ := http.NewRequest("POST", r.http.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", proto)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Header.Get("Content-Type"), string(b)
	}
	count := func(answer, what string) int { return strings.Count(answer, `"method":"notifications/`+what+`"`) }
	call := func(meta string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t.echo","arguments":{"id":"1"}` + meta + `}}`
	}
	old := "2025-11-25"

	// Nothing asked: JSON, no notice.
	if ct, ans := post(r.keyA, old, call("")); ct != "application/json" || count(ans, "progress")+count(ans, "message") != 0 {
		t.Fatalf("a plain call: %s %s", ct, ans)
	}
	// A progress token: 4 steps, no log messages (no level set).
	ct, ans := post(r.keyA, old, call(`,"_meta":{"progressToken":"tok-1"}`))
	if ct != "text/event-stream" || count(ans, "progress") != 4 || count(ans, "message") != 0 ||
		!strings.Contains(ans, `"progressToken":"tok-1","message":"t.echo: call ended","progress":4,"total":4`) || !strings.Contains(ans, `"id":7,"result"`) {
		t.Fatalf("with a progress token: %s %s", ct, ans)
	}
	for i, step := range []string{"call started", "request sent to the upstream", "the upstream is answering", "call ended"} {
		if !strings.Contains(ans, `"message":"t.echo: `+step+`","progress":`+string(rune('1'+i))) {
			t.Errorf("step %d %q missing: %s", i+1, step, ans)
		}
	}
	// logging/setLevel debug by key A: its later calls log, key B's do not.
	post(r.keyA, old, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`)
	if ct, ans := post(r.keyA, old, call("")); ct != "text/event-stream" || count(ans, "message") != 4 || count(ans, "progress") != 0 {
		t.Errorf("after setLevel debug: %s %s", ct, ans)
	}
	if ct, ans := post(r.keyB, old, call("")); ct != "application/json" || count(ans, "message") != 0 {
		t.Errorf("another key: %s %s", ct, ans)
	}
	post(r.keyA, old, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}}`)
	if _, ans := post(r.keyA, old, call("")); count(ans, "message") != 0 {
		t.Errorf("after setLevel warning: %s", ans)
	}
	// 2026-07-28: the level in the request's _meta.
	modern := func(level string) string {
		return call(`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}` + level + `}`)
	}
	hdr := []string{"Mcp-Method", "tools/call", "Mcp-Name", "t.echo"}
	if ct, ans := post(r.keyB, "2026-07-28", modern(`,"io.modelcontextprotocol/logLevel":"info"`), hdr...); ct != "text/event-stream" || count(ans, "message") != 4 {
		t.Errorf("2026-07-28 at info: %s %s", ct, ans)
	}
	if ct, ans := post(r.keyB, "2026-07-28", modern(""), hdr...); ct != "application/json" || count(ans, "message") != 0 || !strings.Contains(ans, `"result"`) {
		t.Errorf("2026-07-28 without a level: %s %s", ct, ans)
	}

	// stdio: the session's level, and progress.
	ctx := context.Background()
	var mu sync.Mutex
	var logs, progress []string
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, req.Params.Data.(string))
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, req.Params.Message)
		}})
	ms := r.srv.MCPToolsetServer("tenant-a", "", nil)
	ct2, st := mcp.NewInMemoryTransports()
	ss, err := ms.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := client.Connect(ctx, ct2, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "1"}}
	params.SetProgressToken("tok-2")
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("stdio call: %+v %v", res, err)
	}
	n := func(s *[]string) int { mu.Lock(); defer mu.Unlock(); return len(*s) }
	testkit.WaitFor(t, "4 log messages on stdio", func() bool { return n(&logs) >= 4 })
	testkit.WaitFor(t, "4 progress notifications on stdio", func() bool { return n(&progress) >= 4 })
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 4 || logs[0] != "t.echo: call started" || logs[3] != "t.echo: call ended" || len(progress) != 4 {
		t.Errorf("stdio: logs %q, progress %q", logs, progress)
	}
}

// BenchmarkWantsNotices is what the door's check for a call that wants
// notices costs every MCP POST: a plain tools/call, of a client that accepts
// event streams, on a replica where no level was set.
func BenchmarkWantsNotices(b *testing.B) {
	s := &Server{}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gen.tool-0000","arguments":{"id":"x"}}}`)
	r, _ := http.NewRequest("POST", "http://127.0.0.1/mcp", nil)
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	b.ReportAllocs()
	for b.Loop() {
		if s.wantsNotices(r, body) {
			b.Fatal("wants notices")
		}
	}
}
