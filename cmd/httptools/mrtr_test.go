package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestApprovalByMultiRoundTripOnStdio: httptools mcp --person u1, with a
// client on MCP 2026-07-28 (no server-to-client requests): an unattended
// call of a tool that needs a person's yes is answered input_required with
// the approval question, and the client's retry with the person's answer
// decides it as mcp-person:u1. Yes: asked once, 0 upstream requests while
// asked, 1 after, the approval used. No: 0 upstream requests, denied.
func TestApprovalByMultiRoundTripOnStdio(t *testing.T) {
	w := newWorld(t)
	w.write("guarded.json", `{"id":"t.guarded","description":"Needs a yes.","version":"1.0.0","mutating":true,
		"needsApprovalWhenUnattended":true,"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"POST","urlTemplate":"{UP}/g"}}`)
	db := filepath.Join(t.TempDir(), "db")
	var mu sync.Mutex
	answer, seen := true, []int64{}
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(req.Params.Message, "t.guarded") || !strings.Contains(req.Params.Message, "[outside data ") {
				t.Errorf("the question: %q", req.Params.Message)
			}
			seen = append(seen, w.calls.Load())
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": answer}}, nil
		}})
	cmd := exec.Command(binary(t), "mcp", "--tools", w.tools, "--db", "sqlite:"+db, "--allow-cidr", "127.0.0.0/8", "--person", "u1")
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	store := testkit.SQLiteStore(t, db, nil)
	call := func(input string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.guarded", Arguments: map[string]any{"a": input},
			Meta: mcp.Meta{"httptools/context": map[string]any{"run": "nightly", "unattended": true}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	newest := func() *auth.Approval {
		t.Helper()
		as, err := store.Approvals(ctx, "local", "", "", nil)
		if err != nil || len(as) == 0 {
			t.Fatalf("approvals: %v %v", as, err)
		}
		return as[0]
	}

	start := w.calls.Load()
	if res := call("yes"); res.IsError {
		t.Fatalf("the approved call: %+v", res.Content[0])
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] != start || w.calls.Load()-start != 1 {
		t.Errorf("asked %d times, upstream requests when asked %v, after %d; want 1, 0, 1", len(seen), seen, w.calls.Load()-start)
	}
	answer = false
	mu.Unlock()
	if a := newest(); a.State != auth.ApprovalUsed || a.DecidedBy != "mcp-person:u1" || a.Run != "nightly" {
		t.Errorf("after yes: %+v", a)
	}

	start = w.calls.Load()
	if res := call("no"); !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "it is denied") {
		t.Errorf("the denied call: %+v", res.Content[0])
	}
	if a := newest(); a.State != auth.ApprovalDenied || w.calls.Load() != start {
		t.Errorf("after no: %s, %d upstream requests", a.State, w.calls.Load()-start)
	}
}
