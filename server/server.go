// Package server is the hosted service: every tool of a pack folder served to
// many tenants over a REST API and over MCP (streamable HTTP), with API keys,
// secrets, OAuth connections, metrics and health endpoints. The tenant of a
// request comes from its API key, never from the request.
package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/mcpremote"
	"github.com/httptools/httptools/policy"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/internal/preformat"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultMaxInputBytes caps a request body.
const DefaultMaxInputBytes = 1 << 20

// Store is what the service reads and writes itself: connections (listed
// and revoked through the API), tenants' secrets, and a readiness check.
// The Manager has its own (connections and connect flows), Keys the API
// keys. sqlstore.SQLStore is one.
// It must be safe for concurrent use.
type Store interface {
	connections.ConnectionStore
	connections.SecretStore
	// Ping checks that the store answers and takes a write.
	Ping(ctx context.Context) error
}

// Config is what New needs.
type Config struct {
	Store    Store
	Keys     KeyStore
	Manager  *connections.Manager
	Apps     connections.Apps
	ToolsDir string
	// Tools, when set, is the first tool set, loaded from ToolsDir by the
	// caller (LoadTools); Reload reads ToolsDir again.
	Tools  *Toolset
	Loader *synth.Loader
	Logger *slog.Logger
	// AccessLogger, when set, gets one record per request (method, route
	// pattern, status, tenant, key id, error code, duration; never a key
	// or a body). nil: no access log.
	AccessLogger *slog.Logger
	// UI serves the web console at /ui.
	UI      bool
	Metrics *Metrics
	// MaxInputBytes caps request bodies; 0 means 1 MiB.
	MaxInputBytes int64
	// EnvSecretsTenant may also read secrets from HTTPTOOLS_SECRET_*
	// variables: "local" for a laptop; "" for none, as in production.
	EnvSecretsTenant string
	// OIDC, when set, makes the service an OAuth resource server too:
	// access tokens of these issuers are taken beside API keys.
	OIDC *OIDC
	// Budget bounds the bytes calls hold at once (request bodies, upstream
	// answers, responses); the fetch client must draw on the same budget
	// (fetch.Config.Budget). nil means no bound.
	Budget *budget.Budget
	// BudgetWait bounds how long a request waits for its body's bytes;
	// 0 means 10 s. (A call's answer waits within the tool's deadline.)
	BudgetWait time.Duration
	// TenantMaxInflight bounds each tenant's calls in flight; 0 means
	// DefaultTenantMaxInflight, < 0 no bound. TenantLimits overrides it per
	// tenant.
	TenantMaxInflight int
	TenantLimits      map[string]int
	// TenantMaxBytes bounds the share of Budget one tenant's calls may hold
	// together (a draw past it waits for the tenant's own calls); 0 means
	// half the budget, < 0 no bound.
	TenantMaxBytes int64
	// Policies keeps the tool policies; nil: none, every caller sees
	// every tool.
	Policies PolicyStore
	// PolicyTTL is how long a policy read is used before it is read
	// again (a change reaches every replica within it); 0 means
	// DefaultPolicyTTL.
	PolicyTTL time.Duration
	// ListTTL is how long an MCP client may keep a tools/list before
	// listing again (its ttlMs); 0 means DefaultListTTL.
	ListTTL time.Duration
	// Approvals keeps the approvals of unattended calls; nil: none, and
	// such a call of a tool that needs one is refused.
	Approvals ApprovalStore
	// ApprovalTTL is how long a request can be decided and used; 0 means
	// DefaultApprovalTTL.
	ApprovalTTL time.Duration
	// History takes a record of every call, off the request path; nil
	// keeps none. Calls reads it back (GET /v1/calls, the console).
	History *history.Recorder
	Calls   CallStore
	// ResultBudgets are the characters of text an MCP result gives a
	// model (resultbudget.go); ResultKeep how long the whole of a cut
	// answer stays readable, 0 meaning DefaultResultKeep.
	ResultBudgets ResultBudgets
	ResultKeep    time.Duration
	// Results keeps them for every replica; nil: each replica its own.
	Results ResultStore
	// MCPDiscoveryThreshold: when a caller sees more tools than this over
	// MCP over HTTP, tools/list offers the discovery tools instead
	// (mcpcatalogue.go); 0 or less: never, unless the URL asks
	// (?catalogue=search).
	MCPDiscoveryThreshold int
	// Now is the server's clock, which approvals expire by; nil means
	// time.Now. A test (or a chaos run skewing one replica) injects it.
	Now func() time.Time
}

// Server serves the API. Its tool set can be swapped at run time (Reload).
type Server struct {
	cfg      Config
	tools    atomic.Pointer[Toolset]
	inflight sync.WaitGroup
	keys     sync.Map // API key → keyEntry: a store read per key per minute, not per request
	keyReads rereads[*auth.APIKey]
	keyGen   atomic.Uint64 // moves when a key is revoked here (storedKey)

	routeLogs preformat.Handlers[routeKey] // handlers with a route's access attributes formatted

	mcpMu     sync.Mutex
	mcpSynced map[*mcp.Server]map[string]*synth.Tool // the tools each long-lived MCP server has

	oidcVerifiers oidcVerifiers
	elicit        elicitMemo
	limits        tenantLimits
	shares        sync.Map // tenant → *budget.Budget, its share of cfg.Budget
	secrets       sync.Map // tenant → synth.SecretResolver of its calls (secretResolver)
	bursts        burstLog
	failures      failureBuckets // failed authentications per client address
	draining      atomic.Bool    // stopping: /readyz answers 503
	noFastPath    atomic.Bool    // tests: every MCP request through the SDK
	fastCalls     atomic.Int64   // tools/call and tools/list answered by the fast path
	lists         listCache      // tools/list pages, encoded once per tool set and view
	held          heldResults    // the whole of answers cut to their budget, for a while
	discoverOnce  sync.Once      // discover: the server/discover result, asked of the SDK once
	discover      []byte
	policies      policyCache
	levels        logLevels     // logging levels of HTTP clients before 2026-07-28 (mcpnotices.go)
	listeners     viewListeners // MCP clients told when what their caller sees changes (mcplisten.go)
	policyReads   rereads[*policy.Policy]
	shortest      atomic.Pointer[shortest] // the shortest timeoutMs of a tool set (beforeCall)
}

// New loads the tools and returns a server; a folder with any invalid
// manifest is a *LoadError listing every problem.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.MaxInputBytes <= 0 {
		cfg.MaxInputBytes = DefaultMaxInputBytes
	}
	if cfg.Loader == nil {
		cfg.Loader = &synth.Loader{}
	}
	if cfg.BudgetWait <= 0 {
		cfg.BudgetWait = 10 * time.Second
	}
	if cfg.TenantMaxBytes == 0 && cfg.Budget != nil {
		cfg.TenantMaxBytes = cfg.Budget.Size() / 2
	}
	if cfg.TenantMaxInflight == 0 {
		cfg.TenantMaxInflight = DefaultTenantMaxInflight
	}
	s := &Server{cfg: cfg, limits: tenantLimits{def: cfg.TenantMaxInflight, per: cfg.TenantLimits, inflight: map[string]int{}}}
	cfg.Metrics.watchBudget(cfg.Budget)
	cfg.Metrics.watchHistory(cfg.History)
	cfg.Metrics.watchFastPath(&s.fastCalls)
	if cfg.Tools != nil {
		s.tools.Store(cfg.Tools)
	} else if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload loads the tools folder again; on any error the old set stays, and
// so it does when the folder holds no manifest any more (a start-up refuses
// one too: an emptied folder is far likelier a mistake, or a volume not
// mounted yet, than a wish to serve nothing).
func (s *Server) Reload() error {
	ts, err := loadTools(s.cfg.ToolsDir, s.cfg.Loader, s.cfg.Apps, s.Tools())
	if err != nil {
		return err
	}
	if len(ts.IDs()) == 0 && s.Tools() != nil {
		return fmt.Errorf("%s holds no manifest (*.json) now: write one, or stop the service to serve none", s.cfg.ToolsDir)
	}
	s.tools.Store(ts)
	s.viewsChanged()
	// A reload checks every remote MCP tool against its server again on
	// its next use, the ones whose manifest did not change (and were
	// kept) too: the server may have.
	for _, id := range ts.IDs() {
		if t, ok := ts.Tool(id); ok {
			if h, ok := t.Handler().(*mcpremote.Handler); ok {
				h.CheckDriftAgain()
			}
		}
	}
	return nil
}

// Manager returns the connection manager, nil without apps.
func (s *Server) Manager() *connections.Manager { return s.cfg.Manager }

// Tools returns the current tool set.
func (s *Server) Tools() *Toolset { return s.tools.Load() }

// Wait blocks until every call in flight has finished.
func (s *Server) Wait() { s.inflight.Wait() }

// Keys returns the service's API key store.
func (s *Server) Keys() KeyStore { return s.cfg.Keys }

// Handler returns the HTTP API: the health and metrics routes, the REST
// routes, MCP, the console, and an answer for every path no route takes,
// behind the trace context and the access log.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.serviceRoutes(mux)
	s.restRoutes(mux)
	s.mcpRoutes(mux)
	if s.cfg.UI {
		ui := s.uiHandler()
		mux.Handle("/ui", ui)
		mux.Handle("/ui/", ui)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { noRoute(mux, w, r) })
	return traceContext(s.accessLog(mux))
}

// serviceRoutes are the routes about the service itself: health,
// readiness, metrics, and the OAuth resource metadata.
func (s *Server) serviceRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	// Series are labelled by tenant: on the service's address only for an
	// admin key; MetricsHandler serves them keyless on an address of their
	// own (serve --metrics-addr).
	metrics := s.MetricsHandler()
	mux.Handle("GET /metrics", s.authed(metrics.ServeHTTP, auth.RoleAdmin))
	if s.cfg.OIDC != nil {
		md := s.resourceMetadata()
		mux.Handle(metadataPath, md)
		mux.Handle(metadataPath+"/", md)
	}
}

// restRoutes are the REST API's routes: tools and their calls, secrets,
// connections, the call history and results, approvals, policy and keys.
func (s *Server) restRoutes(mux *http.ServeMux) {
	const admin = auth.RoleAdmin
	mux.Handle("GET /v1/tools", s.authed(s.listTools))
	mux.Handle("GET /v1/tools/{id}", s.authed(s.getTool))
	// A call's deadline starts at the door, before its key is checked
	// (deadline.go).
	mux.Handle("POST /v1/tools/{id}/invoke", s.callDoor(s.authed(s.invokeRoute)))
	mux.Handle("POST /v1/tools/{id}/dry-run", s.callDoor(s.authed(s.dryRunRoute)))
	mux.Handle("GET /v1/secrets", s.authed(s.listSecrets, admin))
	mux.Handle("PUT /v1/secrets/{envName}/{name}", s.sensitive(s.putSecret, admin))
	mux.Handle("DELETE /v1/secrets/{envName}/{name}", s.sensitive(s.deleteSecret, admin))
	mux.Handle("POST /v1/connections/{app}/authorize", s.sensitive(s.authorize))
	mux.HandleFunc("GET /v1/oauth/callback", s.callback) // the provider's redirect: the state names the tenant
	mux.Handle("GET /v1/connections", s.authed(s.listConnections))
	mux.Handle("DELETE /v1/connections/{id}", s.sensitive(s.revokeConnection))
	mux.Handle("GET /v1/calls", s.authed(s.listCalls))
	mux.Handle("GET /v1/results/{id}", s.authed(s.getResult)) // resultbudget.go
	mux.Handle("GET /v1/approvals", s.authed(s.listApprovals))
	mux.Handle("POST /v1/approvals/{id}/approve", s.sensitive(s.approveRoute))
	mux.Handle("POST /v1/approvals/{id}/deny", s.sensitive(s.denyRoute))
	mux.Handle("GET /v1/policy", s.authed(s.getPolicy, admin))
	mux.Handle("PUT /v1/policy", s.sensitive(s.putPolicy, admin))
	mux.Handle("DELETE /v1/policy", s.sensitive(s.deletePolicy, admin))
	mux.Handle("GET /v1/keys", s.authed(s.listKeys, admin))
	mux.Handle("POST /v1/keys", s.sensitive(s.createKey, admin))
	mux.Handle("DELETE /v1/keys/{id}", s.sensitive(s.revokeKey, admin))
}

// mcpRoutes are MCP over streamable HTTP: /mcp, and a toolset's own
// endpoint, /mcp/NAME, the same MCP showing and running only the
// toolset's tools (an unknown toolset is 404).
func (s *Server) mcpRoutes(mux *http.ServeMux) {
	serveMCP := s.mcpRoute(s.mcpHandler(), s.mcpNoticeHandler())
	mux.Handle("/mcp", s.mcpDoor(s.authed(serveMCP)))
	mux.Handle("/mcp/{toolset}", s.mcpDoor(s.authed(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(withToolset(r.Context(), r.PathValue("toolset")))
		ctx, cancel := s.beforeCall(r.Context())
		_, err := s.gateFor(ctx, tenantOf(ctx), identity(ctx), "")
		cancel()
		if err != nil {
			writeFailure(w, err)
			return
		}
		serveMCP(w, r)
	})))
}

// mcpRoute serves one MCP request, whose key was checked: the person
// rule, the body's cap and its draw on the memory budget, then a call's
// notices (noticeHandler, mcpnotices.go), the fast path, or the SDK
// (mcpHandler).
func (s *Server) mcpRoute(mcpHandler, noticeHandler http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r, ok := catalogueRequest(w, r) // ?catalogue= (mcpcatalogue.go)
		if !ok {
			return
		}
		if k := identity(r.Context()); k.Role == auth.RolePerson {
			if p := r.Header.Get("X-Person-Id"); p != "" && p != k.Person {
				forbidden(w, "a person key acts for its own person only, not "+p)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxInputBytes) // the same cap as REST
		if r.Method != http.MethodPost {
			mcpHandler.ServeHTTP(w, r)
			return
		}
		hold := s.cfg.Budget.HoldFor(s.shareOf(tenantOf(r.Context())))
		defer hold.Release()
		s.mcpPost(w, r, hold, mcpHandler, noticeHandler)
	}
}

// mcpPost serves an MCP POST under hold: a small body (most tools/call
// requests) is not drawn, since refusing it here would be an HTTP error
// where the model must see a tool error (which the call's own draws give,
// inside it).
func (s *Server) mcpPost(w http.ResponseWriter, r *http.Request, hold *budget.Hold, mcpHandler, noticeHandler http.Handler) {
	if r.ContentLength < 0 || r.ContentLength > mcpUndrawnBody {
		if err := s.draw(r, hold, s.bodyDraw(r), s.cfg.BudgetWait); err != nil {
			err.(*refusal).write(w)
			return
		}
	}
	// The SDK hands a tool's handler nothing of the request but its
	// context: the hold rides there to the handler (holdOf), which puts
	// it in the call's options.
	r = r.WithContext(withHold(r.Context(), hold))
	body, err := readBody(r.Body, r.ContentLength, s.cfg.MaxInputBytes)
	if err != nil {
		// Over the cap: the SDK must still see the error (and answer 413).
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		mcpHandler.ServeHTTP(w, r)
		return
	}
	if s.wantsNotices(r, body) {
		noteRPC(r.Context(), body)
		serveRPC(w, r, noticeHandler, body)
		return
	}
	if !s.noFastPath.Load() {
		switch s.serveMCPCall(w, r, body, hold) {
		case fastServed:
			return // it told the access record what it read and answered
		case fastDenied:
			// A denied tool is answered by the SDK, as an unknown one is,
			// byte for byte; the denial is counted once.
			r = r.WithContext(withDenialCounted(r.Context()))
		}
	}
	noteRPC(r.Context(), body)
	s.noteInitialize(r, body)
	serveRPC(w, r, mcpHandler, body) // ids as sent, refusals as JSON-RPC errors
}

// noRoute answers a request no route takes: 405 with the methods a route
// of its path takes (GET …/invoke), else 404.
func noRoute(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	if allow := allowedMethods(mux, r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method-not-allowed", "", r.Method+" "+r.URL.Path+": it takes "+strings.Join(allow, " or "))
		return
	}
	writeError(w, http.StatusNotFound, "not-found", "", "no route "+r.Method+" "+r.URL.Path)
}

// allowedMethods lists the methods a route of r's path takes, other than
// r's own: none when no route has the path.
func allowedMethods(mux *http.ServeMux, r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := *r
		probe.Method = m
		if _, pattern := mux.Handler(&probe); pattern != "/" && pattern != "" {
			out = append(out, m)
		}
	}
	return out
}

// MetricsHandler serves the Prometheus metrics without a key, for an
// address of its own that only the scraper reaches.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.cfg.Metrics.Registry, promhttp.HandlerOpts{})
}

// traceContext puts the trace context a request carries (W3C traceparent,
// with otel's global propagator) in its context: a REST or MCP call's
// spans then join the caller's trace, and its upstream requests carry it.
func traceContext(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header["Traceparent"]) > 0 {
			r = r.WithContext(otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		next.ServeHTTP(w, r)
	})
}

// mcpUndrawnBody is the largest MCP request body not drawn on the memory
// budget.
const mcpUndrawnBody = 16 << 10

// readyzTimeout bounds the readiness check: a frozen store makes /readyz
// answer 503 in under a second, not hang with it.
const readyzTimeout = 800 * time.Millisecond

// Drain makes /readyz answer 503 from now on: the service is stopping, and
// a load balancer that checks it sends it nothing new. MCP listens end
// (EndListens).
func (s *Server) Drain() {
	s.draining.Store(true)
	s.EndListens() // their clients listen again elsewhere
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		w.Header().Set("Retry-After", retryAfter)
		writeError(w, http.StatusServiceUnavailable, "draining", "", "stopping: calls in flight finish, new ones go to another replica")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyzTimeout)
	defer cancel()
	if err := s.cfg.Store.Ping(ctx); err != nil {
		s.storeFailed("readiness check", err)
		w.Header().Set("Retry-After", retryAfter)
		writeError(w, http.StatusServiceUnavailable, synth.ReasonStoreUnavailable, synth.ReasonStoreUnavailable, "not ready: the store does not answer or takes no writes")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

type holdKey struct{}

// withHold is ctx carrying an MCP request's memory-budget hold through the
// SDK to the tool handler.
func withHold(ctx context.Context, h *budget.Hold) context.Context {
	return context.WithValue(ctx, holdKey{}, h)
}

// holdOf is the hold withHold put in ctx, or nil.
func holdOf(ctx context.Context) *budget.Hold {
	h, _ := ctx.Value(holdKey{}).(*budget.Hold)
	return h
}

// now is the server's clock (Config.Now).
func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}
