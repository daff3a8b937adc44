package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/httptools/httptools/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// completion/complete for the enum arguments of tools. MCP completes the
// arguments of prompts and resource templates; httptools has neither, and
// what its clients fill in are tools' arguments, so a reference of type
// ref/prompt names a tool: the values offered for one of its arguments are
// the string values of that property's enum that start with what the
// client typed (case-insensitively), in the manifest's order. An argument
// without an enum is offered nothing; a tool the caller may not see is
// answered as an unknown one.

// maxCompletions is how many values one answer carries (MCP's limit).
const maxCompletions = 100

// mcpCompleter is the completion handler of an MCP server whose calls run
// for tenant under toolset (stdio), or, with tenant "", for the caller the
// request's credential names (HTTP).
func (s *Server) mcpCompleter(tenant, toolset string) func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		p := req.Params
		if p == nil || p.Ref == nil || p.Ref.Type != "ref/prompt" {
			return completions(nil), nil // no resource templates here
		}
		tool, ok := s.Tools().Tool(p.Ref.Name)
		if !ok {
			return nil, unknownTool(p.Ref.Name)
		}
		ctx = withToolset(ctx, toolset)
		callTenant, key, person := tenant, (*auth.APIKey)(nil), ""
		if tenant == "" {
			key = identity(ctx)
			var h http.Header
			if req.Extra != nil {
				h = req.Extra.Header
			}
			callTenant, person = mcpCaller(ctx, h)
		}
		g, err := s.gateFor(ctx, callTenant, key, person)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: failureOf(err).msg}
		}
		if !g.decide(tool).Allow {
			return nil, unknownTool(p.Ref.Name)
		}
		return completions(enumValues(tool.Manifest().Input, p.Argument.Name, p.Argument.Value)), nil
	}
}

// enumValues are the string values of the enum of input's property name
// that start with prefix, case-insensitively.
func enumValues(input []byte, name, prefix string) []string {
	enum := gjson.GetBytes(input, "properties."+gjson.Escape(name)+".enum")
	if !enum.IsArray() {
		return nil
	}
	var out []string
	prefix = strings.ToLower(prefix)
	enum.ForEach(func(_, v gjson.Result) bool {
		if v.Type == gjson.String && strings.HasPrefix(strings.ToLower(v.Str), prefix) {
			out = append(out, v.Str)
		}
		return true
	})
	return out
}

// completions is the answer offering values, the first maxCompletions of
// them.
func completions(values []string) *mcp.CompleteResult {
	r := &mcp.CompleteResult{}
	r.Completion.Values = values
	if r.Completion.Values == nil {
		r.Completion.Values = []string{} // an empty array, never null
	}
	r.Completion.Total = len(values)
	if len(values) > maxCompletions {
		r.Completion.Values, r.Completion.HasMore = values[:maxCompletions], true
	}
	return r
}

// completing is opts with the completion handler of a server for tenant
// under toolset (mcpCompleter), which also advertises completions.
func (s *Server) completing(opts *mcp.ServerOptions, tenant, toolset string) *mcp.ServerOptions {
	opts.CompletionHandler = s.mcpCompleter(tenant, toolset)
	return opts
}
