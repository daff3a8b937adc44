package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServer returns an MCP server with every tool, whose calls run for
// tenant; person gives the person of a call (from the X-Person-Id header on
// HTTP, from a flag on stdio). It is for a long-lived session (stdio): it
// advertises tools.listChanged, and SyncMCP after a reload sends the change.
func (s *Server) MCPServer(tenant string, person func(*mcp.CallToolRequest) string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "httptools", Version: fetch.Version},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	s.SyncMCP(srv, tenant, person)
	return srv
}

// SyncMCP makes srv's tools the current tool set's: tools gone are removed,
// the others (re)added; connected clients get notifications/tools/list_changed.
func (s *Server) SyncMCP(srv *mcp.Server, tenant string, person func(*mcp.CallToolRequest) string) {
	s.mcpMu.Lock()
	defer s.mcpMu.Unlock()
	ts := s.Tools()
	if s.mcpNames == nil {
		s.mcpNames = map[*mcp.Server][]string{}
	}
	var gone []string
	for _, id := range s.mcpNames[srv] {
		if _, ok := ts.tools[id]; !ok {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		srv.RemoveTools(gone...)
	}
	s.addMCPTools(srv, ts, tenant, person)
	s.mcpNames[srv] = ts.ids
}

// addMCPTools adds every tool of ts to srv.
func (s *Server) addMCPTools(srv *mcp.Server, ts *Toolset, tenant string, person func(*mcp.CallToolRequest) string) {
	for _, id := range ts.ids {
		tool := ts.tools[id]
		mt := NewMCPTool(tool)
		srv.AddTool(mt.Tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
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
			if sc := mt.structured(res.Output); sc != nil {
				out.StructuredContent = sc
			}
			return out, nil
		})
	}
}

// mcpHandler serves MCP over streamable HTTP, statelessly: each request is
// bound to the tenant of its own API key. A stateless server cannot reach a
// client between requests, so it does not advertise tools.listChanged:
// clients list the tools again when they need them.
func (s *Server) mcpHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "httptools", Version: fetch.Version},
			&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}}})
		k := identity(r.Context())
		s.addMCPTools(srv, s.Tools(), k.Tenant, func(req *mcp.CallToolRequest) string {
			if k.Role == connections.RolePerson {
				return k.Person // checked against X-Person-Id before the server was made
			}
			if req.Extra != nil && req.Extra.Header != nil {
				return req.Extra.Header.Get("X-Person-Id")
			}
			return ""
		})
		return srv
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.cfg.Logger})
}
