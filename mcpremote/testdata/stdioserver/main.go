// Command stdioserver is an MCP server of the official Go SDK over stdio,
// for package mcpremote's tests: it tells its environment and process,
// dies, freezes or answers a line past any cap when asked.
package main

import (
	"context"
	"log"
	"os"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "stdioserver", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "whoami", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		wd, _ := os.Getwd()
		return &mcp.CallToolResult{StructuredContent: map[string]any{"pid": os.Getpid(), "env": os.Environ(), "dir": wd}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Stderr.WriteString("crashing on purpose\n")
		os.Exit(3)
		return nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "freeze", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		syscall.Kill(os.Getpid(), syscall.SIGSTOP) // the whole process hangs: not even a ping is answered
		return nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "big", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("y", 8<<20)}}}, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
