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
			callTenant, callPerson := tenant, ""
			if person != nil {
				callPerson = person(req)
			}
			if callTenant == "" {
				// HTTP: the request's own credential says who calls.
				k := identity(ctx)
				callTenant, callPerson = k.Tenant, k.Person
				if k.Role != connections.RolePerson && req.Extra != nil && req.Extra.Header != nil {
					callPerson = req.Extra.Header.Get("X-Person-Id")
				}
			}
			res, err := s.call(ctx, tool, s.callContext(callTenant, CallContext{Person: callPerson}), args)
			if eerr := s.connectElicitation(ctx, req, tool, callTenant, callPerson, err); eerr != nil {
				return nil, eerr
			}
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
// bound to the identity of its own credential, which travels in the
// request's context to the tool handlers, so one MCP server serves every
// tenant and is built once per loaded tool set (not per request). A
// stateless server cannot reach a client between requests, so it does not
// advertise tools.listChanged: clients list the tools again when they need
// them.
func (s *Server) mcpHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return s.Tools().mcpServer(s)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.cfg.Logger})
}

// mcpServer returns the tool set's MCP server for HTTP, built on first use.
func (ts *Toolset) mcpServer(s *Server) *mcp.Server {
	ts.mcpOnce.Do(func() {
		srv := mcp.NewServer(&mcp.Implementation{Name: "httptools", Version: fetch.Version},
			&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}}})
		s.addMCPTools(srv, ts, "", nil)
		ts.mcp = srv
	})
	return ts.mcp
}
