package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/tidwall/gjson"
)

// The access log: one record per request, REST and MCP, refused ones too
// (401, 404, a bad input), with the method, the route pattern (never the
// path's values or query), the status, the tenant and key id once known,
// the error code and reason of a refusal, and the duration. Never a key,
// a token or a body.

type accessKey struct{}

// accessOf returns the access record ctx carries, or nil (the access log
// off).
func accessOf(ctx context.Context) *access {
	a, _ := ctx.Value(accessKey{}).(*access)
	return a
}

// access is what a request's handlers tell its access record.
type access struct {
	// key is who the request turned out to be (see withIdentity).
	key           *auth.APIKey
	tenant, keyID string
	rpc, rpcTool  string // an MCP request's JSON-RPC method and tool
	// outcome of an MCP answer, when its handler says (the fast path);
	// else it is read from the answer's head.
	outcome      string
	outcomeKnown bool
	// policy is the rule that denied a tool the request asked for.
	policy string
}

// notePolicy records the rule that denied a tool to the request.
func notePolicy(ctx context.Context, rule string) {
	if a := accessOf(ctx); a != nil && a.policy == "" {
		a.policy = rule
	}
}

// noteMCPCall records a tools/call the fast path answered: the tool and
// the outcome ("rpc-error <code>", "tool-error" or ""), so that the answer
// need not be read again for them.
func noteMCPCall(ctx context.Context, tool, outcome string) {
	if a := accessOf(ctx); a != nil {
		a.rpc, a.rpcTool, a.outcome, a.outcomeKnown = "tools/call", tool, outcome, true
	}
}

// noteMCPList records a tools/list the fast path answered.
func noteMCPList(ctx context.Context) {
	if a := accessOf(ctx); a != nil {
		a.rpc, a.outcome, a.outcomeKnown = "tools/list", "", true
	}
}

// noteRPC records an MCP request's method and, for tools/call, the tool;
// its answer's head is then kept to read the outcome from.
func noteRPC(ctx context.Context, body []byte) {
	a := accessOf(ctx)
	if a == nil {
		return
	}
	m := gjson.GetManyBytes(body, "method", "params.name")
	a.rpc = m[0].String()
	if a.rpc == "tools/call" {
		a.rpcTool = m[1].String()
	}
	if a.rpc == "" {
		a.rpc = "(batch or not JSON-RPC)"
	}
}

// rpcOutcome reads an MCP answer's head (JSON, or an event stream's first
// data line): a JSON-RPC error's code, or "tool-error" for a result with
// isError.
func rpcOutcome(head []byte) string {
	i := bytes.IndexByte(head, '{')
	if i < 0 {
		return ""
	}
	r := gjson.ParseBytes(head[i:])
	if c := r.Get("error.code"); c.Exists() {
		return "rpc-error " + c.Raw
	}
	if r.Get("result.isError").Bool() {
		return "tool-error"
	}
	return ""
}

// noteIdentity records who a request turned out to be, for its record
// only (a sign-in: the key is the next request's identity, not this one's).
func noteIdentity(ctx context.Context, k *auth.APIKey) {
	if a := accessOf(ctx); a != nil && k != nil {
		a.tenant, a.keyID = k.Tenant, k.ID
	}
}

// withIdentity is r as the request of k: the key goes in the request's
// access record, which its context already carries (no new context and
// request per request), or, with the access log off, in a context of its
// own.
func withIdentity(r *http.Request, k *auth.APIKey) *http.Request {
	if a := accessOf(r.Context()); a != nil {
		a.key, a.tenant, a.keyID = k, k.Tenant, k.ID
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, k))
}

// errorSniff is how much of an error answer is kept to read its code.
const errorSniff = 512

// accessWriter sees the status and, of an error answer, its first bytes.
type accessWriter struct {
	http.ResponseWriter
	a      *access
	status int
	bytes  int64
	head   []byte
	sniff  bool // keep the head of any answer (MCP: the outcome is in the body)
}

func (w *accessWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *accessWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if (w.status >= 400 || w.sniff && !w.a.outcomeKnown) && len(w.head) < errorSniff {
		w.head = append(w.head, b[:min(len(b), errorSniff-len(w.head))]...)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush passes a flush on (MCP's event streams, a streamed output).
func (w *accessWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *accessWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// standardMethod reports whether m is one of HTTP's usual methods: the only
// ones whose records are preformatted (a client may send any token).
func standardMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// routeKey names the fixed attributes of an access record.
type routeKey struct{ method, route, tool string }

// accessHandler is h with a route's fixed attributes (method, route, and
// the tool of a tool route) formatted once (slog.Handler.WithAttrs).
func (s *Server) accessHandler(h slog.Handler, method, route, tool string) slog.Handler {
	k := routeKey{method, route, tool}
	if v, ok := s.routeLogs.Get(k); ok {
		return v
	}
	attrs := []slog.Attr{slog.String("method", method), slog.String("route", route)}
	if tool != "" {
		attrs = append(attrs, slog.String("tool", tool))
	}
	v := h.WithAttrs(attrs)
	s.routeLogs.Put(k, v)
	return v
}

func (s *Server) accessLog(next http.Handler) http.Handler {
	log := s.cfg.AccessLogger
	if log == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// The record and the writer in one allocation.
		st := &struct {
			a access
			w accessWriter
		}{}
		a, aw := &st.a, &st.w
		*aw = accessWriter{ResponseWriter: w, a: a, sniff: r.URL.Path == "/mcp"}
		r = r.WithContext(context.WithValue(r.Context(), accessKey{}, a))
		defer func() {
			status := aw.status
			if status == 0 {
				status = http.StatusOK
			}
			if p := recover(); p != nil {
				status = 0 // cut off (a broken stream): no status reached the client whole
				defer panic(p)
			}
			if rec, h, ok := s.accessRecord(log, r, a, aw, status, start); ok {
				_ = h.Handle(r.Context(), rec)
			}
		}()
		next.ServeHTTP(aw, r)
	})
}

// accessRecord builds the access record of r, and the handler to write
// it with; false when the logger takes no record at that level. Apart,
// and never inlined, so that its attrs' array (a 2 KiB frame) is off the
// stack when the handler writes, as fetch's audit record is: a goroutine
// on a keep-alive connection waits on a stack as big as its deepest point
// ever was.
//
//go:noinline
func (s *Server) accessRecord(log *slog.Logger, r *http.Request, a *access, aw *accessWriter, status int, start time.Time) (slog.Record, slog.Handler, bool) {
	route := r.Pattern
	if route == "" || route == "/" {
		route = "(no route)"
	}
	h := log.Handler()
	if !h.Enabled(r.Context(), slog.LevelInfo) {
		return slog.Record{}, nil, false
	}
	tool := ""
	if strings.HasPrefix(route, "POST /v1/tools/") || strings.HasPrefix(route, "GET /v1/tools/") {
		tool = r.PathValue("id")
	}
	var buf [16]slog.Attr
	attrs := buf[:0]
	if route != "(no route)" && status > 0 && status < 400 && standardMethod(r.Method) {
		// A route (and tool) that answered: its attributes come
		// formatted. Anything else a client can vary at will is
		// formatted per record, never kept.
		h = s.accessHandler(h, r.Method, route, tool)
		attrs = append(attrs, slog.Int("status", status), slog.Float64("ms", float64(time.Since(start).Microseconds())/1000))
	} else {
		attrs = append(attrs, slog.String("method", r.Method), slog.String("route", route),
			slog.Int("status", status), slog.Float64("ms", float64(time.Since(start).Microseconds())/1000))
		if tool != "" {
			attrs = append(attrs, slog.String("tool", tool))
		}
	}
	if a.rpc != "" {
		attrs = append(attrs, slog.String("rpc", a.rpc))
		if a.rpcTool != "" {
			attrs = append(attrs, slog.String("tool", a.rpcTool))
		}
		o := a.outcome
		if !a.outcomeKnown {
			o = rpcOutcome(aw.head)
		}
		if o != "" && status < 400 {
			attrs = append(attrs, slog.String("outcome", o))
		}
	}
	if a.tenant != "" {
		attrs = append(attrs, slog.String("tenant", a.tenant), slog.String("key", a.keyID))
	}
	if a.policy != "" {
		attrs = append(attrs, slog.String("policy", a.policy))
	}
	if status >= 400 && len(aw.head) > 0 {
		if c := gjson.GetBytes(aw.head, "error.code"); c.Exists() {
			attrs = append(attrs, slog.String("code", c.String()))
		}
		if rs := gjson.GetBytes(aw.head, "error.reason"); rs.String() != "" {
			attrs = append(attrs, slog.String("reason", rs.String()))
		}
	}
	attrs = append(attrs, slog.Int64("bytes", aw.bytes))
	// A record handed to the handler: Logger.LogAttrs would also
	// walk the stack for a source position nobody asked for.
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
	rec.AddAttrs(attrs...)
	return rec, h, true
}
