//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 but served to the clients that still use it (issue 40, point 5; the official conformance suite tests it)

package server

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// Notices during a tools/call: notifications/progress for a call that gave
// a progress token, and notifications/message for a client that set a
// logging level. A call's steps are the same for both: the call started,
// its request to the upstream was written, the upstream's answer began
// (once per attempt: httptrace hooks on the call's context), and the call
// ended, with its outcome. Progress counts the steps (it only grows, and
// its total is said with the last, since retries make it unknown before);
// a log message (info) says the step, never an input, an output or a
// URL.
//
// Over streamable HTTP the answer is JSON unless a notice can be sent: a
// tools/call with a progress token, a 2026-07-28 one whose _meta sets a log
// level, or an older one from a credential that set a level with
// logging/setLevel (stateless HTTP keeps no session: the level is kept per
// credential, on the replica that took it) is answered by a handler that
// streams events (mcpNoticeHandler), and the fast path never sees it.

// noticeLoggers caps how many credentials' levels a replica keeps; past
// it, the levels set before are forgotten.
const noticeLoggers = 10000

// logLevels are the levels credentials set with logging/setLevel over
// stateless HTTP before 2026-07-28.
type logLevels struct {
	any atomic.Bool // a level was ever set: until then, get takes no lock
	mu  sync.Mutex
	m   map[string]mcp.LoggingLevel
}

func (l *logLevels) set(who string, level mcp.LoggingLevel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= noticeLoggers {
		l.m = map[string]mcp.LoggingLevel{}
	}
	l.m[who] = level
	l.any.Store(true)
}

func (l *logLevels) get(who string) mcp.LoggingLevel {
	if !l.any.Load() {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[who]
}

// loggerOf names the credential of ctx for its logging level: the key's id,
// or the tenant and person of a token.
func loggerOf(ctx context.Context) string {
	k := identity(ctx)
	if k.ID != "" {
		return k.ID
	}
	return k.Tenant + "\x00" + k.Person
}

// wantsNotices says an HTTP request is a tools/call a notice may be sent
// for, to be answered with an event stream.
func (s *Server) wantsNotices(r *http.Request, body []byte) bool {
	if !acceptsEventStream(r.Header.Values("Accept")) {
		return false
	}
	if gjson.GetBytes(body, "method").Str != "tools/call" {
		return false
	}
	if meta := gjson.GetBytes(body, "params._meta"); meta.Exists() &&
		(meta.Get("progressToken").Exists() || meta.Get(logLevelPath).Str != "") {
		return true
	}
	return s.levels.any.Load() && r.Header.Get("MCP-Protocol-Version") < modernVersion && s.levels.get(loggerOf(r.Context())) != ""
}

// logLevelPath is the gjson path of the level in a request's _meta.
var logLevelPath = gjson.Escape(mcp.MetaKeyLogLevel)

func acceptsEventStream(values []string) bool {
	for _, v := range values {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

// mcpNoticeHandler is mcpHandler answering with an event stream, for the
// calls wantsNotices picks.
func (s *Server) mcpNoticeHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return s.Tools().mcpServer(s)
	}, &mcp.StreamableHTTPOptions{Stateless: true, Logger: s.cfg.Logger, MaxRequestBodyBytes: s.cfg.MaxInputBytes})
}

// mcpNotices is the middleware that sends a call's notices, and keeps the
// level an HTTP client before 2026-07-28 sets (http says the server is
// HTTP's).
func (s *Server) mcpNotices(http bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "logging/setLevel":
				if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil && http {
					s.levels.set(loggerOf(ctx), p.Level)
				}
				return next(ctx, method, req)
			case "tools/call":
			default:
				return next(ctx, method, req)
			}
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			ss, _ := req.GetSession().(*mcp.ServerSession)
			if !ok || p == nil || ss == nil {
				return next(ctx, method, req)
			}
			n := &notices{ss: ss, tool: p.Name, token: p.GetProgressToken(), log: true}
			if http {
				// The level of the request's _meta (2026-07-28), else the
				// one the credential set; none, no messages.
				n.level, _ = p.Meta[mcp.MetaKeyLogLevel].(string)
				if n.level == "" {
					n.level = string(s.levels.get(loggerOf(ctx)))
				}
				n.log = n.level != ""
			}
			n.step(ctx, "call started")
			res, err := next(httptrace.WithClientTrace(ctx, n.trace(ctx)), method, req)
			outcome := "call ended"
			if cr, ok := res.(*mcp.CallToolResult); ok && cr != nil && cr.IsError {
				outcome = "call ended with a tool error"
			} else if err != nil {
				outcome = "call refused"
			}
			n.last(ctx, outcome)
			return res, err
		}
	}
}

// notices sends the notices of one call.
type notices struct {
	ss    *mcp.ServerSession
	tool  string
	token any // the progress token, nil for none
	// log says log messages may be sent: on stdio the SDK filters them
	// by the session's level; over HTTP, level is the caller's (the
	// SDK's own, before 2026-07-28, is info for every request).
	log   bool
	level string

	mu    sync.Mutex
	steps int
	done  bool
}

// trace is the call's upstream steps, sent on the stream of ctx, the
// request's (httptrace's hooks take no context).
func (n *notices) trace(ctx context.Context) *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { n.step(ctx, "request sent to the upstream") },
		GotFirstResponseByte: func() { n.step(ctx, "the upstream is answering") },
	}
}

func (n *notices) step(ctx context.Context, what string) { n.send(ctx, what, false) }

func (n *notices) last(ctx context.Context, what string) { n.send(ctx, what, true) }

// send sends one step's notices on the stream of ctx, the request's; none
// after the last.
func (n *notices) send(ctx context.Context, what string, last bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done {
		return
	}
	n.steps++
	n.done = last
	msg := n.tool + ": " + what
	if n.token != nil {
		p := &mcp.ProgressNotificationParams{ProgressToken: n.token, Progress: float64(n.steps), Message: msg}
		if last {
			p.Total = p.Progress
		}
		n.ss.NotifyProgress(ctx, p)
	}
	if !n.log || n.level != "" && levelRank["info"] < levelRank[mcp.LoggingLevel(n.level)] {
		return
	}
	n.ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "httptools", Data: msg})
}

// levelRank orders MCP's logging levels (RFC 5424's, least severe first).
var levelRank = map[mcp.LoggingLevel]int{"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7}
