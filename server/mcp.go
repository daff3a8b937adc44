package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServer returns an MCP server with every tool, whose calls run for
// tenant; person gives the person of a call (from the X-Person-Id header on
// HTTP, from a flag on stdio). It is for a long-lived session (stdio): it
// advertises tools.listChanged, and syncs its tools, which sends the
// change, after each reload and each policy change that changes what its
// caller sees.
func (s *Server) MCPServer(tenant string, person func(*mcp.CallToolRequest) string) *mcp.Server {
	return s.MCPToolsetServer(tenant, "", person)
}

// MCPToolsetServer is MCPServer showing and running only the tools of
// toolset ("" for every tool the policies allow).
func (s *Server) MCPToolsetServer(tenant, toolset string, person func(*mcp.CallToolRequest) string) *mcp.Server {
	srv := mcp.NewServer(mcpImplementation(),
		s.completing(&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}, SetCacheable: s.mcpCacheable}, tenant, toolset))
	srv.AddReceivingMiddleware(s.mcpNotices(false))
	srv.AddReceivingMiddleware(s.mcpPolicy(tenant, toolset))
	srv.AddReceivingMiddleware(s.mcpCatalogue(tenant, toolset)) // outside mcpPolicy: call_tool's call goes through it
	s.addResultResources(srv, tenant)
	// Listening first: a reload or a policy change while the tools are
	// added is not missed.
	s.listenStdio(srv, tenant, toolset, person)
	s.syncMCP(srv, tenant, person, syncChanged)
	return srv
}

// mcpPolicy applies the tool policies to MCP requests before the SDK
// answers them: tools/list leaves out the tools the caller may not see
// (every page), and a tools/call of one is answered as the SDK answers an
// unknown tool, before anything of it runs. tenant is the stdio server's
// (its caller counts as the tenant's admin); "" on HTTP, where the
// request's credential says who calls.
func (s *Server) mcpPolicy(tenant, toolset string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" && tenant == "" {
				res, err := next(ctx, method, req)
				return withoutListChanged(res), err // stateless HTTP before 2026-07-28 (mcplisten.go)
			}
			if method != "tools/list" && method != "tools/call" {
				return next(ctx, method, req)
			}
			if toolset != "" {
				ctx = withToolset(ctx, toolset) // the stdio server's: its calls see it too
			}
			callTenant, key, person := tenant, (*auth.APIKey)(nil), ""
			if tenant == "" {
				key = identity(ctx)
				var h http.Header
				if ex := req.GetExtra(); ex != nil {
					h = ex.Header
				}
				callTenant, person = mcpCaller(ctx, h)
			}
			if method == "tools/call" {
				// The gate's policy reads are the call's: within its
				// deadline, counted from the request's arrival.
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
					ctx = metaTraceContext(ctx, p.Meta) // the caller's trace, from _meta
					if tool, ok := s.Tools().Tool(p.Name); ok {
						var cancel context.CancelFunc
						ctx, cancel = callDeadline(ctx, arrivedAt(ctx), tool)
						defer cancel()
					}
				}
			}
			g, err := s.gateFor(ctx, callTenant, key, person)
			switch {
			case err != nil && method == "tools/call":
				// The call's own gate (Server.settle) refuses it the same
				// way, as a tool error the model reads, as the fast path
				// does.
				return next(ctx, method, req)
			case err != nil:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: failureOf(err).msg}
			}
			if method == "tools/call" {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
					if tool, ok := s.Tools().Tool(p.Name); ok && !allowsOnce(ctx, g, tool) {
						return nil, unknownTool(p.Name)
					}
				}
				return next(ctx, method, req)
			}
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				ts := s.Tools()
				kept := lr.Tools[:0:0]
				for _, t := range lr.Tools {
					if tool, ok := ts.Tool(t.Name); !ok || g.decide(tool).Allow {
						kept = append(kept, t)
					}
				}
				lr.Tools = kept
			}
			return res, err
		}
	}
}

// denialCountedKey marks a request whose denial the fast path counted
// before it left the call to the SDK.
type denialCountedKey struct{}

func withDenialCounted(ctx context.Context) context.Context {
	return context.WithValue(ctx, denialCountedKey{}, true)
}

// allowsOnce is g.allows, which counts a denial, unless the fast path
// counted this request's already.
func allowsOnce(ctx context.Context, g *gate, tool *synth.Tool) bool {
	if ctx.Value(denialCountedKey{}) != nil {
		return g.decide(tool).Allow
	}
	return g.allows(ctx, tool)
}

// unknownTool is the SDK's answer to a tools/call of a tool it does not
// have, which a denied tool gets too.
func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// SyncMCP makes srv's tools the current tool set's: tools gone are removed,
// every other (re)added; connected clients get
// notifications/tools/list_changed. (A server of MCPServer is synced by
// itself, after a reload and after a policy change that changes what its
// caller sees, changing only what changed: this is for a server built
// otherwise.)
func (s *Server) SyncMCP(srv *mcp.Server, tenant string, person func(*mcp.CallToolRequest) string) {
	s.syncMCP(srv, tenant, person, syncAll)
}

// syncMode is what syncMCP adds to a server besides the tools gone.
type syncMode int

const (
	syncAll     syncMode = iota // every tool (SyncMCP's, which always notifies)
	syncChanged                 // the tools a reload added or changed
	syncTouch                   // those, or if none, one tool again: a view a policy changed
)

// syncMCP syncs srv with the tool set. syncChanged and syncTouch change
// only what changed, each change one the SDK notifies of (and coalesces
// when they come within its 10 ms: re-adding every tool, a busy machine's
// pauses between them sent one change as two notifications).
func (s *Server) syncMCP(srv *mcp.Server, tenant string, person func(*mcp.CallToolRequest) string, mode syncMode) {
	s.mcpMu.Lock()
	defer s.mcpMu.Unlock()
	ts := s.Tools()
	if s.mcpSynced == nil {
		s.mcpSynced = map[*mcp.Server]map[string]*synth.Tool{}
	}
	had := s.mcpSynced[srv]
	var gone, changed []string
	for id := range had {
		if _, ok := ts.tools[id]; !ok {
			gone = append(gone, id)
		}
	}
	for _, id := range ts.ids {
		if had[id] != ts.tools[id] || mode == syncAll {
			changed = append(changed, id)
		}
	}
	ts.buildMCPTools() // before the first change, not between two
	if len(gone) > 0 {
		srv.RemoveTools(gone...)
	}
	if len(gone)+len(changed) == 0 && mode == syncTouch && len(ts.ids) > 0 {
		changed = ts.ids[:1]
	}
	s.addMCPTools(srv, ts, changed, tenant, person)
	s.mcpSynced[srv] = maps.Clone(ts.tools)
}

// addMCPTools adds the tools ids of ts to srv.
func (s *Server) addMCPTools(srv *mcp.Server, ts *Toolset, ids []string, tenant string, person func(*mcp.CallToolRequest) string) {
	for _, id := range ids {
		tool := ts.tools[id]
		mt := ts.mcpTool(id)
		srv.AddTool(mt.Tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			callTenant, callPerson := tenant, ""
			if person != nil {
				callPerson = person(req)
			}
			if callTenant == "" {
				// HTTP: the request's own credential says who calls.
				var h http.Header
				if req.Extra != nil {
					h = req.Extra.Header
				}
				callTenant, callPerson = mcpCaller(ctx, h)
			}
			res, err := s.mcpCall(ctx, req, tool, mt, callTenant, callPerson, req.Params.Arguments, holdOf(ctx))
			if err != nil {
				return nil, err
			}
			if res.ask != nil {
				return &mcp.CallToolResult{InputRequests: res.ask, RequestState: res.state}, nil // input_required
			}
			out := &mcp.CallToolResult{Meta: res.meta(), IsError: res.isError, Content: res.content()}
			if sc := res.structuredContent(); sc != nil {
				out.StructuredContent = sc
			}
			return out, nil
		})
	}
}

// mcpCaller is the tenant and person of an MCP call over HTTP: the
// request's own credential says who calls; a key that is not a person's may
// name the person in X-Person-Id.
func mcpCaller(ctx context.Context, h http.Header) (tenant, person string) {
	k := identity(ctx)
	tenant, person = k.Tenant, k.Person
	if k.Role != auth.RolePerson && h != nil {
		person = h.Get("X-Person-Id")
	}
	return tenant, person
}

// mcpResult is a tools/call result: the output (its text content and,
// with an output schema, its structured content, wrapped under "result"
// when the schema is not an object's), or a tool error's text.
type mcpResult struct {
	output     json.RawMessage
	structured bool
	wrapped    bool
	errText    string
	isError    bool
	// outside says the tool's results are outside data: the result's
	// _meta says so, and its output's text is inside the boundary of
	// marker (outside.go).
	outside bool
	tool    string
	marker  string
	// denied says the caller may not see the tool: the error is the
	// SDK's answer to an unknown tool.
	denied bool
	// ask, when not nil, are the questions the call's answer asks its
	// client (input_required, 2026-07-28), and state the request state
	// its retry echoes (elicit.go).
	ask   mcp.InputRequestMap
	state string
	// media is the output's media type when the upstream answered bytes:
	// the output is their base64 text, offered as a media block
	// (mcpmedia.go).
	media string
	// cut, when not nil, says the output was cut to the call's result
	// budget (or, a media output, left out for its link): resultbudget.go.
	cut *resultCut
}

// text is the result's text content: the output (inside its boundary when
// it is outside data), or the error's words.
func (r mcpResult) text() string {
	if r.isError {
		return r.errText
	}
	if r.outside {
		return frameOutside(r.tool, r.marker, string(r.output))
	}
	return string(r.output)
}

// meta is the result's _meta, or nil.
func (r mcpResult) meta() mcp.Meta {
	var m mcp.Meta
	if r.outside {
		m = mcp.Meta{OutsideDataMeta: true}
	}
	if r.cut != nil {
		if m == nil {
			m = mcp.Meta{}
		}
		m[TruncatedMeta] = r.cut.metaJSON()
	}
	return m
}

// structuredContent is the result's structured content, or nil.
func (r mcpResult) structuredContent() json.RawMessage {
	if r.isError || !r.structured {
		return nil
	}
	if !r.wrapped {
		return r.output
	}
	return r.appendStructured(make([]byte, 0, len(r.output)+12))
}

// appendStructured appends the structured content of a result that has one.
func (r mcpResult) appendStructured(dst []byte) []byte {
	if !r.wrapped {
		return append(dst, r.output...)
	}
	dst = append(dst, `{"result":`...)
	dst = append(dst, r.output...)
	return append(dst, '}')
}

// mcpCall runs one MCP tools/call of tool, for the SDK's handler and for the
// fast path alike. A tool error is a result the model can read; the error
// returned is a protocol error (URL elicitation). req is nil on the fast
// path (stateless HTTP has no session). hold is the request's on the
// memory budget, nil for none.
func (s *Server) mcpCall(ctx context.Context, req *mcp.CallToolRequest, tool *synth.Tool, mt MCPTool, tenant, person string, args json.RawMessage, hold *budget.Hold) (mcpResult, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	// Everything of the call, its store look-ups included, ends with its
	// deadline, counted from the request's arrival (deadline.go).
	ctx, cancel := callDeadline(ctx, arrivedAt(ctx), tool)
	defer cancel()
	// The key's person rules were applied where the request came in
	// (mcpCaller, the X-Person-Id check): person is already the call's.
	cc := mcpCallContext(req)
	cc.Person = person
	c := &toolCall{caller: keyOf(ctx), tenant: tenant, tool: tool, context: cc, input: args, opts: synth.InvokeOptions{Hold: hold}}
	decider := c.caller
	if decider == nil {
		decider = stdioDecider(ctx, tenant, person)
	}
	c.round = approvalRoundOf(req, decider)
	res, err := s.call(ctx, c)
	var rf *refusal
	if errors.As(err, &rf) && rf.code == string(synth.CodeToolNotFound) {
		return mcpResult{denied: true}, unknownTool(tool.ID()) // denied since the list: as the SDK answers an unknown tool
	}
	if c.round != nil && c.round.asked != nil {
		return mcpResult{ask: mcp.InputRequestMap{"approval": approvalRequest(c.round.asked)}, state: stateApproval + c.round.asked.ID}, nil
	}
	if inCall, _ := asksInCall(req); inCall && req.Params.RequestState == stateConnect {
		// Asked already: the retry's result is the call's, connected or not.
	} else if p := s.connectElicitation(ctx, req, tool, tenant, person, err); p != nil && inCall {
		return mcpResult{ask: mcp.InputRequestMap{"connect": p}, state: stateConnect}, nil
	} else if p != nil {
		return mcpResult{}, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{p})
	}
	if err != nil {
		// "rate-limited: …", "handler-error: …": for the model to read,
		// what a third party said inside the outside-data boundary.
		text, framed := errorText(tool.ID(), err)
		return mcpResult{errText: text, isError: true, outside: tool.OutsideData() || framed}, nil
	}
	r := mcpResult{output: res.Output, wrapped: mt.Wrapped, structured: mt.Tool.OutputSchema != nil, outside: res.OutsideData, tool: tool.ID(), media: res.MediaType}
	if r.outside {
		r.marker = newMarker()
	}
	return s.fitResult(ctx, r, tenant), nil // resultbudget.go
}

// mcpCallContext is the run of an MCP call, from its
// _meta["httptools/context"] (the members run, unattended and approval of
// REST's "context"; its person comes from the credential), or none.
func mcpCallContext(req *mcp.CallToolRequest) CallContext {
	var cc CallContext
	if req == nil || req.Params == nil {
		return cc
	}
	v, ok := req.Params.Meta[CallContextMeta]
	if !ok {
		return cc
	}
	b, err := json.Marshal(v)
	if err != nil {
		return cc
	}
	var in struct {
		Run        string `json:"run"`
		Unattended bool   `json:"unattended"`
		Approval   string `json:"approval"`
	}
	if json.Unmarshal(b, &in) == nil {
		cc.Run, cc.Unattended, cc.Approval = in.Run, in.Unattended, in.Approval
	}
	return cc
}

// CallContextMeta is the _meta member of an MCP tools/call that says
// which run the call is of and whether a person started it:
// {"run": "r1", "unattended": true}.
const CallContextMeta = "httptools/context"

// mcpHandler serves MCP over streamable HTTP, statelessly: each request is
// bound to the identity of its own credential, which travels in the
// request's context to the tool handlers, so one MCP server serves every
// tenant and is built once per loaded tool set (not per request). A
// stateless server cannot reach a client between requests, so it does not
// advertise tools.listChanged: clients list the tools again when they need
// them.
func (s *Server) mcpHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if isListen(r) {
			return s.mcpListenServer()
		}
		return s.Tools().mcpServer(s)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.cfg.Logger, MaxRequestBodyBytes: s.cfg.MaxInputBytes})
}

// mcpServer returns the tool set's MCP server for HTTP, built on first use.
func (ts *Toolset) mcpServer(s *Server) *mcp.Server {
	ts.mcpOnce.Do(func() {
		srv := mcp.NewServer(mcpImplementation(), s.completing(s.httpMCPOptions(), "", ""))
		srv.AddReceivingMiddleware(s.mcpNotices(true))
		srv.AddReceivingMiddleware(s.mcpPolicy("", ""))
		srv.AddReceivingMiddleware(s.mcpCatalogue("", "")) // outside mcpPolicy: call_tool's call goes through it
		s.addResultResources(srv, "")
		s.addMCPTools(srv, ts, ts.ids, "", nil)
		ts.mcp = srv
	})
	return ts.mcp
}

// mcpTool is the MCP view of the tool id, built once per tool set.
func (ts *Toolset) mcpTool(id string) MCPTool {
	ts.buildMCPTools()
	return ts.mcpTools[id]
}

// buildMCPTools builds every tool's MCP view, once per tool set.
func (ts *Toolset) buildMCPTools() {
	ts.mcpToolsOnce.Do(func() {
		ts.mcpTools = make(map[string]MCPTool, len(ts.ids))
		for _, id := range ts.ids {
			ts.mcpTools[id] = NewMCPTool(ts.tools[id])
		}
	})
}
