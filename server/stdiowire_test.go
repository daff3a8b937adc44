package server

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioIdsEchoedAsSent: an MCP session on stdio, through ExactIDs,
// answers each request with its id as sent — 2^53+1, 2^64+1, 1.5, -0, a
// string with an escape, and a plain 7 — where the SDK alone answered
// 2^53, -2^63 and 1: 6 of 6 ids echoed, 0 placeholders left behind.
func TestStdioIdsEchoedAsSent(t *testing.T) {
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	in, out := ExactIDs(serverIn, serverOut)
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out}) }()
	t.Cleanup(func() { cancel(); clientOut.Close(); <-done })

	lines := bufio.NewScanner(clientIn)
	lines.Buffer(nil, 1<<20)
	send := func(s string) {
		if _, err := io.WriteString(clientOut, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		if !lines.Scan() {
			t.Fatalf("the session ended: %v", lines.Err())
		}
		return lines.Text()
	}
	send(`{"jsonrpc":"2.0","id":9007199254740993,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	echoed := 0
	check := func(id, answer string) {
		t.Helper()
		if strings.Contains(answer, `"id":`+id+`,`) && !strings.Contains(answer, "httptools-id-") {
			echoed++
		} else {
			t.Errorf("id %s answered %s", id, answer)
		}
	}
	check("9007199254740993", read())
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, id := range []string{"18446744073709551617", "1.5", "-0", `"a\u0041"`, "7"} {
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		check(id, read())
	}
	t.Logf("%d of 6 ids echoed as sent", echoed)
}
