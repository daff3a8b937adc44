package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServer returns an MCP server with every tool, whose calls run for
// tenant; person gives the person of a call (from the X-Person-Id header on
// HTTP, from a flag on stdio).
func (s *Server) MCPServer(tenant string, person func(*mcp.CallToolRequest) string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "httptools", Version: fetch.Version}, nil)
	ts := s.Tools()
	for _, id := range ts.ids {
		tool := ts.tools[id]
		mt := &mcp.Tool{
			Name:        id,
			Description: tool.Manifest.Description,
			InputSchema: tool.Manifest.Input,
		}
		if len(tool.Manifest.Output) > 0 {
			mt.OutputSchema = tool.Manifest.Output
		}
		srv.AddTool(mt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := req.Params.Arguments
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			res, err := s.call(ctx, tool, s.callContext(tenant, CallContext{Person: person(req)}), args)
			if err != nil {
				var e *synth.Error
				msg := err.Error()
				if errors.As(err, &e) {
					msg = string(e.Code) + ": " + e.Message
				}
				// A tool error is a result the model can read, not a
				// protocol error.
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
			}
			out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(res.Output)}}}
			if len(res.Output) > 0 && res.Output[0] == '{' {
				out.StructuredContent = res.Output
			}
			return out, nil
		})
	}
	return srv
}

// mcpHandler serves MCP over streamable HTTP, statelessly: each request is
// bound to the tenant of its own API key.
func (s *Server) mcpHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return s.MCPServer(tenantOf(r.Context()), func(req *mcp.CallToolRequest) string {
			if req.Extra != nil && req.Extra.Header != nil {
				return req.Extra.Header.Get("X-Person-Id")
			}
			return ""
		})
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.cfg.Logger})
}
