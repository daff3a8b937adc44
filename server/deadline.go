package server

import (
	"context"
	"net/http"
	"time"

	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
	"github.com/tidwall/gjson"
)

// A call's deadline covers the whole call, counted from when its request
// arrived: the key check, the policy reads, the approval, and the tool's
// own secret and connection look-ups, not only the upstream. Every store
// call made for a call runs within it; none adds a timeout of its own on
// top (issue 39: a replica cut off from its store answered a 10 s tool's
// calls after 15 s, three 5 s store timeouts in a row). A call whose
// deadline passes while the store is stuck is answered then:
// store-unavailable (503, Retry-After) or the tool's timeout.

// timeoutOf is tool's own deadline: its spec's timeoutMs, or the 30 s
// every kind takes without one. The cause names it as the tool's handler
// does, so that a call cut off by it says "the tool's timeoutMs" whichever
// of the two contexts ended first.
func timeoutOf(tool *synth.Tool) *synth.Timeout {
	ms := int64(httpspec.DefaultTimeoutMs)
	switch h := tool.Handler().(type) {
	case *httpspec.Handler:
		ms = int64(h.Spec().Timeout())
	default:
		if m := tool.Manifest(); m.Spec != nil {
			if v := gjson.GetBytes(m.Spec.Raw, "timeoutMs"); v.Type == gjson.Number && v.Int() > 0 {
				ms = v.Int()
			}
		}
	}
	return &synth.Timeout{D: time.Duration(ms) * time.Millisecond, What: "the tool's timeoutMs"}
}

// callDeadline is ctx bounded by tool's deadline, counted from arrived.
func callDeadline(ctx context.Context, arrived time.Time, tool *synth.Tool) (context.Context, context.CancelFunc) {
	own := timeoutOf(tool)
	return context.WithDeadlineCause(ctx, arrived.Add(own.D), own)
}

// callDoor bounds the request of a route that calls the tool its path
// names (REST's invoke and dry run, the console's run) by that call's
// deadline from now, before its key is checked. A path naming no tool is
// left alone: it is answered 404 without a call.
func (s *Server) callDoor(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tool, ok := s.Tools().Tool(r.PathValue("id"))
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := callDeadline(r.Context(), time.Now(), tool)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

type arrivalKey struct{}

// arrival is when an MCP request arrived: its call's deadline counts from
// then, though the tool is known only once the body, read after the key
// check, names it.
type arrival struct{ at time.Time }

// mcpDoor notes when an MCP request arrived.
func (s *Server) mcpDoor(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), arrivalKey{}, &arrival{time.Now()})))
	})
}

// arrivedAt is when ctx's MCP request arrived, or now for a call that came
// some other way (MCP over stdio).
func arrivedAt(ctx context.Context) time.Time {
	if a, ok := ctx.Value(arrivalKey{}).(*arrival); ok {
		return a.at
	}
	return time.Now()
}

// beforeCall bounds what an MCP request asks of the store before the tool
// it calls is known (its key check, its toolset's gate) by the soonest
// deadline any call of it could have: the shortest timeoutMs of the tools,
// from its arrival. Whichever tool it calls, that ends within the call's
// deadline. Any other request (a REST call's, whose context already has
// its deadline; the routes that call nothing) is left as it is.
func (s *Server) beforeCall(ctx context.Context) (context.Context, context.CancelFunc) {
	a, ok := ctx.Value(arrivalKey{}).(*arrival)
	if !ok {
		return ctx, func() {}
	}
	d := s.shortestTimeout()
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, a.at.Add(d))
}

// shortest is the shortest timeout of the tools of one tool set.
type shortest struct {
	ts *Toolset
	d  time.Duration
}

// shortestTimeout is the shortest timeoutMs of the current tools (0 for
// none), found once per tool set.
func (s *Server) shortestTimeout() time.Duration {
	ts := s.Tools()
	if c := s.shortest.Load(); c != nil && c.ts == ts {
		return c.d
	}
	var d time.Duration
	for _, id := range ts.ids {
		if t := timeoutOf(ts.tools[id]).D; d == 0 || t < d {
			d = t
		}
	}
	s.shortest.Store(&shortest{ts, d})
	return d
}
