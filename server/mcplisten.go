package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// List-changed notifications. An MCP client that keeps a tools/list is
// told when what its caller sees changes: a reload (a tool added, gone or
// changed), a tool policy or a toolset of the caller's tenant (or of all
// tenants) changed. What a caller sees is its view: the tools its gate
// allows, each as loaded (a reload keeps the *synth.Tool of an unchanged
// manifest, so a changed one is a new pointer). Each listener keeps the
// view it was last told of; a change is checked by computing the view
// again, and only a listener whose view differs is notified: one tenant's
// change tells no other tenant anything.
//
// Listeners are 2026-07-28 subscriptions/listen streams at the HTTP door
// (each served by an MCP server of its own, whose only subscriber it is,
// so the SDK sends the notification to it alone), and the long-lived
// servers of stdio sessions (MCPServer), whose clients of any version get
// notifications/tools/list_changed from the SDK.
//
// Changes are checked at once after a reload and after a policy is set or
// removed on this replica; a policy changed on another replica is read
// again by each HTTP listener every policy TTL (reread.go), and by any
// call that re-reads it (readPolicy), which checks the views too.

// viewListener is one caller told of changes to its view.
type viewListener struct {
	tenant  string
	key     *auth.APIKey // nil: a caller the process trusts (stdio)
	person  string
	toolset string
	// notify tells the listener's client that the tools changed.
	notify func()
	// resync, if not nil, is called at a check that found the view
	// unchanged: a stdio server's tools follow the tool set even where
	// its caller sees no change (a tool it may not see removed), as its
	// list shows a tool the set no longer has.
	resync func()
	// end ends the listen (nil: a stdio server's, which ends with its
	// process).
	end func()

	mu   sync.Mutex
	view []*synth.Tool // as last told
	told atomic.Int64  // notifications sent
}

// viewListeners are the listeners of a Server.
type viewListeners struct {
	mu sync.Mutex
	m  map[*viewListener]struct{}
	// checking serializes rechecks: two must not tell one listener of one
	// change twice.
	checking sync.Mutex
	// ended: the service is stopping (EndListens), and a listen ends as
	// it starts.
	ended bool
}

// viewOf is the tools l's caller sees now, in id order.
func (s *Server) viewOf(ctx context.Context, l *viewListener) ([]*synth.Tool, error) {
	g, err := s.gateFor(withToolset(ctx, l.toolset), l.tenant, l.key, l.person)
	if err != nil {
		return nil, err
	}
	ts := s.Tools()
	view := make([]*synth.Tool, 0, len(ts.ids))
	for _, id := range ts.ids {
		if t := ts.tools[id]; g.decide(t).Allow {
			view = append(view, t)
		}
	}
	return view, nil
}

// addListener starts telling l of changes to its view as it is now; after
// EndListens, it ends l instead.
func (s *Server) addListener(ctx context.Context, l *viewListener) {
	l.view, _ = s.viewOf(ctx, l) // none read: the first view read is a change
	s.listeners.mu.Lock()
	if s.listeners.ended && l.end != nil {
		s.listeners.mu.Unlock()
		l.end()
		return
	}
	if s.listeners.m == nil {
		s.listeners.m = map[*viewListener]struct{}{}
	}
	s.listeners.m[l] = struct{}{}
	s.listeners.mu.Unlock()
}

// EndListens ends every MCP subscriptions/listen stream, now and as they
// come: each answers its result and its client may listen again, to
// another replica. A service that stops calls it before its HTTP server's
// Shutdown, which would otherwise wait its whole drain for streams that
// never end by themselves. Drain calls it too.
func (s *Server) EndListens() {
	s.listeners.mu.Lock()
	s.listeners.ended = true
	var ends []func()
	for l := range s.listeners.m {
		if l.end != nil {
			ends = append(ends, l.end)
		}
	}
	s.listeners.mu.Unlock()
	for _, end := range ends {
		end()
	}
}

func (s *Server) removeListener(l *viewListener) {
	s.listeners.mu.Lock()
	delete(s.listeners.m, l)
	s.listeners.mu.Unlock()
}

// viewsChanged checks every listener's view, in the background: the
// change that calls it is done, and its answer waits for no client.
func (s *Server) viewsChanged() {
	s.listeners.mu.Lock()
	n := len(s.listeners.m)
	s.listeners.mu.Unlock()
	if n == 0 {
		return
	}
	go s.recheckViews()
}

// recheckViews notifies each listener whose view changed.
func (s *Server) recheckViews() {
	s.listeners.mu.Lock()
	ls := make([]*viewListener, 0, len(s.listeners.m))
	for l := range s.listeners.m {
		ls = append(ls, l)
	}
	s.listeners.mu.Unlock()
	for _, l := range ls {
		s.recheckView(l)
	}
}

// recheckView notifies l if its view changed. A view that cannot be read
// (the store down) is not a change: it is read again at the next one.
func (s *Server) recheckView(l *viewListener) {
	s.listeners.checking.Lock()
	defer s.listeners.checking.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), rereadTimeout)
	defer cancel()
	view, err := s.viewOf(ctx, l)
	if err != nil {
		return
	}
	l.mu.Lock()
	changed := !slices.Equal(view, l.view)
	l.view = view
	l.mu.Unlock()
	if changed {
		l.told.Add(1)
		l.notify()
	} else if l.resync != nil {
		l.resync()
	}
}

// listenTool is the one tool of a listen server: adding it again is the
// change the SDK notifies its subscriber of. It is never listed or called
// (the server answers only subscriptions/listen: mcpListenServer).
var listenTool = &mcp.Tool{Name: "httptools.listen", InputSchema: map[string]any{"type": "object"}}

func listenToolHandler(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, unknownTool(listenTool.Name)
}

// isListen says an HTTP request is a 2026-07-28 subscriptions/listen (the
// SDK holds its Mcp-Method header to the body's method from that version
// on).
func isListen(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "subscriptions/listen" &&
		r.Header.Get("MCP-Protocol-Version") >= "2026-07-28"
}

// mcpListenServer is the MCP server of one subscriptions/listen request
// (the SDK may ask for it more than once per request): the SDK
// acknowledges the subscription and sends notifications/tools/list_changed
// on the stream when the caller's view changes. While the listen lasts,
// its caller is a listener, and its policies are read again every policy
// TTL, so that a change made on another replica reaches it too; so is its
// API key, and the listen ends once the key is revoked.
func (s *Server) mcpListenServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "httptools", Version: fetch.Version},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "subscriptions/listen" {
				return next(ctx, method, req)
			}
			var h http.Header
			if ex := req.GetExtra(); ex != nil {
				h = ex.Header
			}
			tenant, person := mcpCaller(ctx, h)
			listen, end := context.WithCancel(ctx)
			defer end()
			l := &viewListener{tenant: tenant, key: identity(ctx), person: person, toolset: toolsetOf(ctx),
				notify: func() { srv.AddTool(listenTool, listenToolHandler) }, end: end}
			s.addListener(ctx, l)
			defer s.removeListener(l)
			bearer, _ := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
			go func() {
				t := time.NewTicker(s.policyTTL())
				defer t.Stop()
				for {
					select {
					case <-listen.Done():
						return
					case <-t.C:
						if s.keyRevoked(listen, bearer) {
							end() // the listen ends with its key
							return
						}
						s.recheckView(l)
					}
				}
			}()
			return next(listen, method, req) // until the client ends the listen, or its key is revoked
		}
	})
	return srv
}

// keyRevoked says the API key bearer is known to be revoked now (as a
// call's check would find it: at once on this replica, within
// keyCacheTTL on others). An access token, or a store that does not
// answer, is not.
func (s *Server) keyRevoked(ctx context.Context, bearer string) bool {
	if !strings.HasPrefix(bearer, auth.APIKeyPrefix) {
		return false
	}
	_, err := s.keyOf(ctx, bearer)
	return errors.Is(err, connections.ErrNotFound)
}

// listenStdio makes srv, a long-lived (stdio) server of tenant's, a
// listener: its clients are told when the tools tenant's admin sees
// change.
func (s *Server) listenStdio(srv *mcp.Server, tenant, toolset string, person func(*mcp.CallToolRequest) string) {
	l := &viewListener{tenant: tenant, toolset: toolset}
	l.notify = func() { s.syncMCP(srv, tenant, person, syncTouch) } // a tool added (again): the SDK notifies
	l.resync = func() { s.syncMCP(srv, tenant, person, syncChanged) }
	s.addListener(context.Background(), l)
}

// withoutListChanged is an initialize result of the HTTP door without
// tools.listChanged: it serves 2026-07-28's subscriptions/listen, and so
// advertises it, but a client of an older version, stateless there, has
// no stream a notification could reach.
func withoutListChanged(res mcp.Result) mcp.Result {
	ir, ok := res.(*mcp.InitializeResult)
	if !ok || ir == nil || ir.Capabilities == nil || ir.Capabilities.Tools == nil {
		return res
	}
	caps, tools := *ir.Capabilities, *ir.Capabilities.Tools
	tools.ListChanged = false
	caps.Tools = &tools
	out := *ir
	out.Capabilities = &caps
	return &out
}
