package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/httptools/httptools/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Discovery mode. One imported API is hundreds of tools, and their
// tools/list is more than a model's context (Cloudflare's 402 tools are
// about 1.9 MB). When the tools a caller sees over MCP pass the operator's
// threshold (Config.MCPDiscoveryThreshold), tools/list offers three tools
// instead: search_tools finds tools by what the model wants done,
// describe_tool gives one tool's entry as tools/list would, and call_tool
// runs one. call_tool is a tools/call of the named tool: the same request
// (its _meta, its approval state) with the name and arguments replaced,
// handed to the same handler chain a direct call goes through (mcpPolicy,
// then the tool's handler and mcpCall), so policy, toolsets, approvals,
// input checks, history and the outside-data frame are the direct call's.
// A tool the caller may not see is never found, and describing or calling
// it is answered as an unknown tool is.
//
// The tools stay callable by name (a client that learnt them elsewhere);
// a client that wants the whole list asks for it in its URL:
// /mcp?catalogue=full. The official clients cannot set a request's _meta
// from their configuration, but every one takes a URL. ?catalogue=search
// asks for discovery mode whatever the count.

// DefaultMCPDiscoveryThreshold is serve's threshold: an imported tool's
// tools/list entry is about 3.2 KB (800 tokens; openapi/testdata's
// imports, TestDiscoveryConnectBytes), so 40 tools are about 32,000
// tokens, a sixth of a 200,000-token context spent before the
// conversation starts, where discovery mode's list is 1.8 KB (440 tokens)
// and a tool costs a search and a describe (README).
const DefaultMCPDiscoveryThreshold = 40

// The discovery tools' names.
const (
	searchToolName   = "search_tools"
	describeToolName = "describe_tool"
	callToolName     = "call_tool"
)

// Search results: how many by default and at most, and how much of each
// tool's description a result quotes (describe_tool gives it whole).
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 50
	searchDescRunes    = 300
)

// CatalogueParam is the query parameter of /mcp and /mcp/{toolset} that
// chooses what tools/list offers: "full" (every tool), "search" (the
// discovery tools), or absent (by the count, Config.MCPDiscoveryThreshold).
const CatalogueParam = "catalogue"

type catalogueKey struct{}

// catalogueRequest reads r's ?catalogue= into its context; an unknown
// value is answered 400 and reports false.
func catalogueRequest(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if r.URL.RawQuery == "" {
		return r, true
	}
	v := r.URL.Query().Get(CatalogueParam)
	switch v {
	case "":
		return r, true
	case "full", "search":
		return r.WithContext(context.WithValue(r.Context(), catalogueKey{}, v)), true
	}
	writeError(w, http.StatusBadRequest, "bad-request", "", fmt.Sprintf("%s=%q: use %s=full for every tool, %s=search for the discovery tools, or leave it out", CatalogueParam, v, CatalogueParam, CatalogueParam))
	return r, false
}

// catalogueOf is the request's ?catalogue=, or "".
func catalogueOf(ctx context.Context) string {
	v, _ := ctx.Value(catalogueKey{}).(string)
	return v
}

// discovering says the caller, whose gate is g, is offered the discovery
// tools instead of the whole list.
func (s *Server) discovering(ctx context.Context, g *gate, ts *Toolset) bool {
	if ts.shadowsDiscovery() {
		return false // a tool of the set has one of their names: the set is listed whole
	}
	switch catalogueOf(ctx) {
	case "full":
		return false
	case "search":
		return true
	}
	n := s.cfg.MCPDiscoveryThreshold
	if n <= 0 || len(ts.ids) <= n {
		return false
	}
	seen := 0
	for _, id := range ts.ids {
		if g.decide(ts.tools[id]).Allow {
			if seen++; seen > n {
				return true
			}
		}
	}
	return false
}

// shadowsDiscovery says a tool of ts is named as a discovery tool is.
func (ts *Toolset) shadowsDiscovery() bool {
	for _, name := range []string{searchToolName, describeToolName, callToolName} {
		if _, ok := ts.tools[name]; ok {
			return true
		}
	}
	return false
}

// discoveryTools are the three tools tools/list offers in discovery mode.
var discoveryTools = []*mcp.Tool{
	{
		Name:  searchToolName,
		Title: "Search tools",
		Description: "This server has more tools than it lists. Find the ones for a task by describing it in plain words " +
			`(e.g. "create a customer", "list open incidents"): returns the best matches' names and descriptions, best first. ` +
			"Then describe_tool gives a tool's input schema and call_tool runs it.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"what you want to do, in plain words"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"how many tools at most (10 if not given)"}},` +
			`"required":["query"]}`),
		Annotations: &mcp.ToolAnnotations{Title: "Search tools", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	},
	{
		Name:        describeToolName,
		Title:       "Describe a tool",
		Description: "Give a tool's full description: its input schema (the arguments call_tool takes), output schema and annotations, as search_tools named it.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"the tool's name, as search_tools gave it"}},"required":["name"]}`),
		Annotations: &mcp.ToolAnnotations{Title: "Describe a tool", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	},
	{
		Name:  callToolName,
		Title: "Call a tool",
		Description: "Run a tool found with search_tools, with arguments that follow its input schema (describe_tool gives it). " +
			"The answer is the tool's own.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"the tool's name"},` +
			`"arguments":{"type":"object","description":"the tool's arguments"}},"required":["name"]}`),
		Annotations: &mcp.ToolAnnotations{Title: "Call a tool", DestructiveHint: new(true), OpenWorldHint: new(true)},
	},
}

// mcpCatalogue is the middleware of discovery mode, outside mcpPolicy: a
// tools/list it answers with the discovery tools, and it runs their
// calls, handing call_tool's to next as the named tool's. tenant and
// toolset are a stdio server's (its caller counts as the tenant's admin,
// as mcpPolicy has it); "" on HTTP, where the request's credential and
// URL say who calls and which toolset.
func (s *Server) mcpCatalogue(tenant, toolset string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if s.cfg.MCPDiscoveryThreshold <= 0 && catalogueOf(ctx) != "search" {
				return next(ctx, method, req) // off: not a look at the request
			}
			var name string
			switch method {
			case "tools/list":
			case "tools/call":
				p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
				if !ok || p == nil || (p.Name != searchToolName && p.Name != describeToolName && p.Name != callToolName) {
					return next(ctx, method, req)
				}
				name = p.Name
			default:
				return next(ctx, method, req)
			}
			callTenant, key, person := tenant, (*auth.APIKey)(nil), ""
			if tenant == "" {
				var h http.Header
				if ex := req.GetExtra(); ex != nil {
					h = ex.Header
				}
				callTenant, person = mcpCaller(ctx, h)
				key = identity(ctx)
			} else if toolset != "" {
				ctx = withToolset(ctx, toolset)
			}
			g, err := s.gateFor(ctx, callTenant, key, person)
			ts := s.Tools()
			if err != nil || !s.discovering(ctx, g, ts) {
				return next(ctx, method, req) // mcpPolicy answers a gate's error
			}
			if method == "tools/list" {
				res, err := next(ctx, method, req) // the SDK's answer, its cache hints kept
				if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					lr.Tools, lr.NextCursor = discoveryTools, ""
				}
				return res, err
			}
			res, err := s.discoveryCall(ctx, next, req.(*mcp.CallToolRequest), name, g, ts)
			if own, ok := res.(*mcp.CallToolResult); ok && err == nil && name != callToolName {
				res = markedComplete(req, own)
			}
			return res, err
		}
	}
}

// markedComplete is res as the SDK leaves a tool's result for a client
// of 2026-07-28 or later: with resultType "complete", which that
// version's clients require. The SDK marks the results of the tools it
// has; search_tools' and describe_tool's are not among them, so theirs
// are marked here, by decoding (the mark is the SDK's unexported field,
// which its decoder sets). call_tool's result is the named tool's, marked
// by the SDK.
func markedComplete(req mcp.Request, res *mcp.CallToolResult) *mcp.CallToolResult {
	version := modernVersion // what the SDK assumes of a session without an initialize
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if p := ss.InitializeParams(); p != nil {
			version = p.ProtocolVersion
		}
	}
	if version < modernVersion {
		return res
	}
	b, err := json.Marshal(res)
	if err != nil || len(b) < 3 || b[0] != '{' {
		return res // not an object with members: nothing to add to
	}
	var out mcp.CallToolResult
	if json.Unmarshal(append([]byte(`{"resultType":"complete",`), b[1:]...), &out) != nil {
		return res
	}
	return &out
}

// discoveryCall runs a call of the discovery tool name.
func (s *Server) discoveryCall(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest, name string, g *gate, ts *Toolset) (mcp.Result, error) {
	var in struct {
		Query     *string         `json:"query"`
		Limit     *int            `json:"limit"`
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return discoveryError(name + ": the arguments are not an object of its input schema: " + err.Error()), nil
	}
	switch name {
	case searchToolName:
		if in.Query == nil {
			return discoveryError(`search_tools: query is required: what you want to do, in plain words ({"query":"create a customer"})`), nil
		}
		limit := defaultSearchLimit
		if in.Limit != nil {
			if *in.Limit < 1 || *in.Limit > maxSearchLimit {
				return discoveryError(fmt.Sprintf("search_tools: limit %d: give 1 to %d", *in.Limit, maxSearchLimit)), nil
			}
			limit = *in.Limit
		}
		return discoveryText(searchAnswer(ts, g, *in.Query, limit)), nil
	case describeToolName:
		if in.Name == nil {
			return discoveryError(`describe_tool: name is required: a tool's name as search_tools gave it ({"name":"…"})`), nil
		}
		tool, ok := ts.Tool(*in.Name)
		if !ok || !g.allows(ctx, tool) {
			return nil, unknownTool(*in.Name) // a denied tool as an unknown one
		}
		return discoveryText(string(ts.mcpToolJSON(tool.ID()))), nil
	}
	if in.Name == nil {
		return discoveryError(`call_tool: name is required: the tool to run, as search_tools gave it ({"name":"…","arguments":{…}})`), nil
	}
	if len(in.Arguments) > 0 && in.Arguments[0] != '{' {
		return discoveryError("call_tool: arguments must be an object: the tool's arguments, as its input schema (describe_tool) says"), nil
	}
	// The named tool's own call: the same request, its name and arguments
	// the named tool's, through the rest of the chain.
	p := *req.Params
	p.Name, p.Arguments = *in.Name, in.Arguments
	call := *req
	call.Params = &p
	return next(ctx, "tools/call", &call)
}

// searchAnswer is search_tools' answer: the tools the caller sees that
// best match query, as JSON text.
func searchAnswer(ts *Toolset, g *gate, query string, limit int) string {
	type found struct {
		Name        string `json:"name"`
		Title       string `json:"title,omitempty"`
		Description string `json:"description"`
	}
	hits := ts.searchIndexOf().search(query, func(id string) bool { return g.decide(ts.tools[id]).Allow }, limit)
	out := struct {
		Tools []found `json:"tools"`
		Hint  string  `json:"hint"`
	}{Tools: make([]found, 0, len(hits))}
	for _, h := range hits {
		mt := ts.mcpTool(h.ID).Tool
		out.Tools = append(out.Tools, found{Name: h.ID, Title: mt.Title, Description: clip(mt.Description, searchDescRunes)})
	}
	if len(hits) == 0 {
		out.Hint = "no tool matched: try other words (what the tool does, or the thing it acts on)"
	} else {
		out.Hint = "describe_tool gives a tool's input schema; call_tool runs it"
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// clip is s cut to n runes at a word, with an ellipsis when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return cut + "…"
}

func discoveryText(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// discoveryError is a discovery tool's answer to arguments it cannot
// use, a tool error the model reads.
func discoveryError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// searchTools answers GET /v1/tools?q=: the manifests of the tools the
// caller sees that best match q, best first (at most ?limit=, 10 if not
// given): what search_tools finds, for a REST client.
func (s *Server) searchTools(w http.ResponseWriter, r *http.Request, g *gate) {
	q := r.URL.Query()
	limit := defaultSearchLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxSearchLimit {
			writeError(w, http.StatusBadRequest, "bad-request", "", fmt.Sprintf("limit=%q: give a number from 1 to %d", l, maxSearchLimit))
			return
		}
		limit = n
	}
	ts := s.Tools()
	hits := ts.searchIndexOf().search(q.Get("q"), func(id string) bool { return g.decide(ts.tools[id]).Allow }, limit)
	out := make([]json.RawMessage, 0, len(hits))
	for _, h := range hits {
		out = append(out, ts.raw[h.ID])
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out})
}
