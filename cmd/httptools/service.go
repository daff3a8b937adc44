package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/internal/gcpace"
	"github.com/httptools/httptools/internal/jsonlog"
	"github.com/httptools/httptools/mcpremote"
	"github.com/httptools/httptools/policy"
	"github.com/httptools/httptools/server"
	"github.com/httptools/httptools/synth"
)

// What serve and mcp share: their flags, the checked plan of tools and apps,
// the store and the service built on them.

// serviceFlags are the flags serve and mcp share.
type serviceFlags struct {
	// production is serve's: it refuses what a production server should
	// (a filesystem handler); mcp, on a person's own machine, warns.
	production bool

	tools, db, apps, publicURL, logFormat, oidc string
	allow                                       cidrFlags
	maxTimeout                                  int
	maxInflight, tenantBytes                    sizeFlag
	tenantMax, connsPerHost                     int
	tenantLimits                                tenantLimitFlags
	noAccessLog                                 bool
	ui                                          string
	policy                                      string
	allowStdio                                  stringsFlag
	plainHTTP                                   stringsFlag
	noHistory                                   bool
	historyRetention                            time.Duration
	historyMaxRows                              int
	refreshInterruptedWait                      time.Duration
	listTTL                                     time.Duration
	resultBudget                                int
	resultKeep                                  time.Duration
	resultBudgets                               namedInts // TENANT=N and TOOL=N, told apart by the flag
	toolResultBudgets                           namedInts
	mcpDiscoveryThreshold                       int
}

// register defines the flags of serve, or with serve false of mcp, which
// has no HTTP side: no console, no public URL, no OIDC, no access log, one
// tenant (so no tenant limits).
func (f *serviceFlags) register(fs *flag.FlagSet, serve bool) {
	fs.StringVar(&f.tools, "tools", "", "folder of tool manifests (every *.json below it; *.cases.json are test cases)")
	fs.StringVar(&f.db, "db", "sqlite:./httptools.db", "store: sqlite:PATH, or postgres://… for several replicas")
	fs.StringVar(&f.apps, "apps", "", "apps.json with the OAuth apps connections use (none: connection tools fail with connection-unavailable)")
	fs.Var(&f.allow, "allow-cidr", "let tools reach this range despite the SSRF guard (repeatable)")
	fs.IntVar(&f.maxTimeout, "max-timeout", synth.DefaultMaxTimeoutMs, "the largest timeoutMs a manifest may set")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	f.maxInflight = sizeFlag(budget.DefaultSize())
	fs.Var(&f.maxInflight, "max-inflight-bytes", "memory budget for bodies in flight (request bodies, upstream answers, responses), e.g. 512MiB; calls wait for room within their deadline, else 503 overloaded (default a quarter of the machine's or container's memory)")
	fs.IntVar(&f.connsPerHost, "max-conns-per-host", 0, "connections to one upstream host; calls beyond wait for one within their deadline (default half the process's call capacity, at least 64; -1: no bound)")
	fs.BoolFunc("no-history", "keep no call history (GET /v1/calls, the console's Calls page)", func(v string) error { b, err := strconv.ParseBool(v); f.noHistory = b; return err })
	fs.DurationVar(&f.historyRetention, "history-retention", 7*24*time.Hour, "how long the call history keeps a call")
	fs.DurationVar(&f.listTTL, "list-ttl", server.DefaultListTTL, "how long an MCP client may keep a tools/list before listing again (its ttlMs): a new tool or a changed policy reaches a client within it; calls are decided anew each time")
	fs.IntVar(&f.resultBudget, "result-budget", server.DefaultResultBudget, "characters of text an MCP tool result may give the model; an answer over it is cut by its structure, with a notice and a link to the whole (resources/read) (-1: no budget)")
	fs.DurationVar(&f.resultKeep, "result-keep", server.DefaultResultKeep, "how long the whole of an answer cut to its budget stays readable, by the same key only")
	f.toolResultBudgets.what = "TOOL"
	fs.Var(&f.toolResultBudgets, "tool-result-budget", "TOOL=N: another --result-budget for one tool id (repeatable; -1: none)")
	fs.IntVar(&f.historyMaxRows, "history-max-rows", 100000, "the most calls the history keeps (the oldest go first)")
	fs.Var(&f.allowStdio, "allow-stdio", "let mcp+stdio endpoints start this command (an exact absolute path; repeatable): serve and mcp refuse any other")
	fs.Var(&f.plainHTTP, "mcp-plain-http", "reach the mcp+http and mcp+sse endpoints of this host (or *.domain) over plain http instead of https (repeatable; a private address also needs --allow-cidr)")
	fs.StringVar(&f.policy, "policy", "", "policy.json: the tool policy every tenant is under, stored at start for every replica (a tenant's own is set with PUT /v1/policy); absent: the stored one stays")
	fs.IntVar(&f.mcpDiscoveryThreshold, "mcp-discovery-threshold", server.DefaultMCPDiscoveryThreshold, "when a caller sees more tools than this over MCP, tools/list offers search_tools, describe_tool and call_tool instead of every tool (over HTTP a client's URL may still ask for every one: /mcp?catalogue=full); 0: always every tool")
	if !serve {
		f.ui = "off"
		return
	}
	fs.StringVar(&f.publicURL, "public-url", "", "the URL the service is reached at, for the OAuth callback (default http://ADDR)")
	fs.DurationVar(&f.refreshInterruptedWait, "refresh-interrupted-wait", connections.DefaultInterruptedWait, "on PostgreSQL, how long a token refresh that another replica began and could not store (it lost the database, or stopped) keeps this replica from presenting the stored refresh token, which that refresh may have revoked: a partition shorter than it costs no connection; callers meanwhile get 503 connection-refreshing unless the access token is still valid")
	fs.StringVar(&f.ui, "ui", "auto", "the web console at /ui: on, off, or auto (on when --addr is a loopback address)")
	fs.BoolFunc("no-access-log", "log no record per request (method, route, status, tenant, key id, error code, duration)", func(v string) error { b, err := strconv.ParseBool(v); f.noAccessLog = b; return err })
	fs.Var(&f.tenantBytes, "tenant-max-inflight-bytes", "the share of --max-inflight-bytes one tenant's calls may hold together, e.g. 1GiB; past it a call waits for the tenant's own calls, else 503 overloaded (default half the budget)")
	fs.IntVar(&f.tenantMax, "tenant-max-inflight", 0, "calls in flight one tenant may have; more get 429 rate-limited (default a quarter of the process's call capacity, at least 64; -1: no bound)")
	fs.Var(&f.tenantLimits, "tenant-limit", "TENANT=N: another in-flight limit for one tenant (repeatable)")
	f.resultBudgets.what = "TENANT"
	fs.Var(&f.resultBudgets, "tenant-result-budget", "TENANT=N: another --result-budget for one tenant (repeatable; a tool's own wins; -1: none)")
	fs.StringVar(&f.oidc, "oidc", "", `issuers.json: OpenID Connect issuers whose access tokens /mcp takes beside API keys ({"issuers":[{"url","tenant"|"tenantClaim","scopes"}]}; audience <public-url>/mcp)`)
}

// uiOn: whether the console is served on addr.
func (f *serviceFlags) uiOn(addr string) bool {
	switch f.ui {
	case "on", "true":
		return true
	case "auto", "":
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return false
		}
		if host == "localhost" {
			return true
		}
		ip, err := netip.ParseAddr(host)
		return err == nil && ip.IsLoopback()
	}
	return false
}

// accessLogger is the access log's logger: the service's, unless
// --no-access-log.
func (f *serviceFlags) accessLogger(log *slog.Logger) *slog.Logger {
	if f.noAccessLog {
		return nil
	}
	return log
}

func (f *serviceFlags) logger(w io.Writer) *slog.Logger {
	if f.logFormat == "json" {
		// slog's JSON, written cheaper for the per-request records.
		return slog.New(jsonlog.New(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// openStore opens the database with the master key: from
// HTTPTOOLS_MASTER_KEY, or for SQLite a 0600 key file beside the database.
func openStore(ctx context.Context, dsn string, opts sqlstore.Options, log *slog.Logger) (*sqlstore.SQLStore, error) {
	keyFile := ""
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		if err := sqlstore.CheckSQLitePath(path); err != nil {
			return nil, fmt.Errorf("store %s: %w", dsn, err) // before the key file is made beside it
		}
		keyFile = path + ".key"
	} else if os.Getenv(sqlstore.MasterKeyEnv) == "" {
		return nil, errNoMasterKey
	}
	keys, err := sqlstore.LoadKeyring(os.Getenv, keyFile, log)
	if err != nil {
		return nil, err
	}
	return sqlstore.Open(ctx, dsn, keys, opts)
}

var errNoMasterKey = fmt.Errorf("set %s (base64 of 32 bytes, the same on every replica) to use a PostgreSQL store", sqlstore.MasterKeyEnv)

// A plan is what the flags ask for, checked before anything is opened,
// listened on or created: the apps, the loader and every tool.
type plan struct {
	apps connections.Apps
	mem  *budget.Budget
	// capacity is how many calls the process can hold in flight
	// (server.CallCapacity); the call limits' defaults are shares of it.
	capacity int
	client   *fetch.Client          // tools' calls, and through HTTPClient every request of the service's own
	remote   *mcpremote.Synthesizer // the sessions and processes of remote MCP tools: closed at the end
	loader   *synth.Loader
	tools    *server.Toolset
	policy   []byte // --policy, checked: the policy every tenant is under
}

// errNoTools names the flag a newcomer forgets.
var errNoTools = errors.New("name the manifests folder with --tools DIR (try fixtures/tools)")

// check reads apps.json and loads every manifest of --tools; an error names
// the flag at fault and nothing has been created.
func (f *serviceFlags) check(log *slog.Logger) (*plan, error) {
	switch f.ui {
	case "on", "off", "auto", "true", "false":
	default:
		return nil, fmt.Errorf("--ui %s: want on, off or auto", f.ui)
	}
	if f.tools == "" {
		return nil, errNoTools
	}
	if fi, err := os.Stat(f.tools); err != nil {
		if cwd, werr := os.Getwd(); werr == nil && !filepath.IsAbs(f.tools) {
			// A desktop client starts the server in its own folder (often
			// /): a relative path is read from there.
			return nil, fmt.Errorf("--tools %s: %w (a relative path, read from the working folder %s: give an absolute one)", f.tools, unwrapPath(err), cwd)
		}
		return nil, fmt.Errorf("--tools %s: %w", f.tools, unwrapPath(err))
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("--tools %s: not a folder; name the folder that holds the manifests", f.tools)
	}
	p := &plan{}
	var err error
	if f.policy != "" {
		src, err := os.ReadFile(f.policy)
		if err != nil {
			return nil, fmt.Errorf("--policy %w", unwrapPath(err))
		}
		if _, err := policy.Parse(src); err != nil {
			return nil, fmt.Errorf("--policy %s: %w", f.policy, err)
		}
		p.policy = src
	}
	if f.apps != "" {
		if p.apps, err = connections.LoadApps(f.apps); err != nil {
			return nil, fmt.Errorf("--apps %w", err)
		}
	}
	reg := &synth.Registry{}
	p.mem = budget.New(int64(f.maxInflight))
	// The call limits are shares of what the process can hold in flight
	// (server.CallCapacity): a tenant a quarter of it, so that it takes
	// four tenants at their limit to fill the process; an upstream host
	// half, so that one tenant alone never takes all the connections to
	// an API and another tenant's calls to it still get one.
	p.capacity = server.CallCapacity(p.mem.Size())
	if f.tenantMax == 0 {
		f.tenantMax = max(64, p.capacity/4)
	}
	if f.connsPerHost == 0 {
		f.connsPerHost = max(64, p.capacity/2)
	}
	log.Info("call limits", "capacity", p.capacity, "tenant_max_inflight", f.tenantMax, "max_conns_per_host", f.connsPerHost)
	p.client = fetch.NewClient(fetch.Config{
		AllowCIDRs: f.allow, UserAgent: httpspec.UserAgent, Logger: log,
		Budget: p.mem, MaxConnsPerHost: f.connsPerHost,
	})
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(withDemo(p.client, log))) // demo.go
	p.remote = mcpremote.NewSynthesizer(mcpremote.Config{Client: p.client, PlainHTTP: f.plainHTTP, Logger: log})
	reg.MustRegister(synth.KindMCP, p.remote)
	p.loader = &synth.Loader{Registry: reg, Options: synth.LoadOptions{MaxTimeoutMs: f.maxTimeout, RefuseFilesystemHandlers: f.production,
		StdioAllowList: true, StdioCommands: f.allowStdio}}
	if p.tools, err = server.LoadTools(f.tools, p.loader, p.apps); err != nil {
		var le *server.LoadError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("--tools %s: %w", f.tools, unwrapPath(err))
	}
	if len(p.tools.IDs()) == 0 {
		return nil, fmt.Errorf("--tools %s: no manifest (*.json) below it; write one (see docs/authoring.md) or name another folder", f.tools)
	}
	logNotices(log, p.tools, nil) // what validate says of them
	return p, nil
}

// loadFailed prints why the tools could not be loaded: each problem of a
// manifest on its line, or the error naming the flag.
func loadFailed(stderr io.Writer, cmd, dir string, err error) int {
	var le *server.LoadError
	if errors.As(err, &le) {
		for _, l := range le.Lines {
			fmt.Fprintln(stderr, l)
		}
		fmt.Fprintf(stderr, "httptools %s: --tools %s: %s; nothing was started\n", cmd, dir, plural(len(le.Lines), "problem"))
		return 1
	}
	fmt.Fprintf(stderr, "httptools %s: %v; nothing was started\n", cmd, err)
	if errors.Is(err, errNoTools) {
		return 2 // a usage error, as every other
	}
	return 1
}

// unwrapOp drops a *net.OpError's repeat of the address.
func unwrapOp(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			return se.Err
		}
		return oe.Err
	}
	return err
}

// unwrapPath drops the *fs.PathError's own copy of the path the message
// already names.
func unwrapPath(err error) error {
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// openStoreWaiting opens the store, trying a PostgreSQL store again for up
// to wait while it refuses (restarting, or out of connections while other
// replicas hold them all): a replica started beside a database that is not
// ready yet waits for it instead of exiting. Every failed try is logged.
func openStoreWaiting(ctx context.Context, dsn string, opts sqlstore.Options, wait time.Duration, log *slog.Logger) (*sqlstore.SQLStore, error) {
	deadline := time.Now().Add(wait)
	pause := 250 * time.Millisecond
	for {
		store, err := openStore(ctx, dsn, opts, log)
		if err == nil || strings.HasPrefix(dsn, "sqlite:") || errors.Is(err, errNoMasterKey) || time.Now().Add(pause).After(deadline) {
			return store, err
		}
		log.Warn("the store is not ready; trying again", "in", pause.String(), "error", err.Error())
		time.Sleep(pause)
		pause = min(2*pause, 5*time.Second)
	}
}

// build assembles the service from a checked plan and an open store (the
// caller's to close).
func (f *serviceFlags) build(ctx context.Context, p *plan, store *sqlstore.SQLStore, addr string, log *slog.Logger) (*server.Server, error) {
	var mgr *connections.Manager
	public := strings.TrimRight(f.publicURL, "/")
	if public == "" {
		public = "http://" + addr
	}
	var srv *server.Server
	metrics := server.NewMetrics()
	if p.apps != nil || usesDiscovered(p.tools) {
		// Token requests go through the guard too, and follow no redirect:
		// a 307 would post the client secret and the code again.
		mgr = &connections.Manager{Connections: store, States: store, Apps: p.apps, RedirectURL: public + "/v1/oauth/callback", Logger: log,
			HTTPClient: p.client.HTTPClient(false), InterruptedWait: f.refreshInterruptedWait,
			// One process embeds a SQLite store: a lease it did not take
			// was an earlier process's, whose outcome nobody can store.
			SoleReplica: strings.HasPrefix(f.db, "sqlite:")}
		// Remote MCP servers' authorization, found for each (mcpconnect.go).
		mgr.OnRefresh = metrics.Refreshed
		mgr.Discover = connector(p.client, f.plainHTTP, p.apps, store, public, func() *server.Toolset { return srv.Tools() }).Provider
	}
	var oidcCfg *server.OIDC
	if f.oidc != "" {
		var err error
		if oidcCfg, err = server.LoadOIDC(f.oidc, public+"/mcp"); err != nil {
			return nil, fmt.Errorf("--oidc %w", err)
		}
		oidcCfg.HTTPClient = p.client.HTTPClient(true)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The garbage collector works to the budget too: the heap stays
		// near what calls hold instead of doubling it before each cycle.
		debug.SetMemoryLimit(p.mem.Size() + memLimitMargin)
		if os.Getenv("GOGC") == "" {
			// With that limit in place, a service whose live heap is a
			// few MiB need not collect every few MiB allocated; one
			// holding thousands of slow calls must not let five times
			// its live heap pile up either (internal/gcpace).
			gcpace.Start(gcHeadroom, serveGCMin, serveGCPercent)
		}
	}
	envTenant := ""
	if strings.HasPrefix(f.db, "sqlite:") {
		envTenant = "local" // HTTPTOOLS_SECRET_* variables serve the local tenant only
	}
	if p.policy != nil {
		if err := store.PutPolicy(ctx, server.AllTenants, p.policy); err != nil {
			return nil, fmt.Errorf("--policy %s: storing it: %w", f.policy, err)
		}
	}
	var hist *history.Recorder
	if !f.noHistory {
		hist = &history.Recorder{Sink: store, OnError: func(err error, n int) {
			log.Warn("call history: a batch could not be stored and is dropped", "records", n, "error", err.Error())
		}}
		hist.Start()
		go pruneHistory(ctx, store, f.historyRetention, f.historyMaxRows, log)
	}
	var err error
	srv, err = server.New(server.Config{
		Policies: store, Approvals: store, History: hist, Calls: store,
		Store: store, Keys: store, Manager: mgr, Apps: p.apps, ToolsDir: f.tools, Tools: p.tools, Logger: log, AccessLogger: f.accessLogger(log),
		UI:               f.uiOn(addr),
		Loader:           p.loader,
		EnvSecretsTenant: envTenant, OIDC: oidcCfg, MCPDiscoveryThreshold: f.mcpDiscoveryThreshold,
		Budget: p.mem, TenantMaxInflight: f.tenantMax, TenantLimits: f.tenantLimits.m, TenantMaxBytes: int64(f.tenantBytes),
		ListTTL:       f.listTTL,
		ResultBudgets: server.ResultBudgets{Default: f.resultBudget, Tenants: f.resultBudgets.m, Tools: f.toolResultBudgets.m},
		ResultKeep:    f.resultKeep,
		Metrics:       metrics,
		Results:       store,
	})
	if err != nil {
		return nil, err
	}
	return srv, nil
}

// serveGCPercent is serve's largest GOGC when neither GOGC nor GOMEMLIMIT
// is set: while the live heap, stacks and globals come to gcHeadroom/4 or
// less. Above, the percent falls so that a cycle allocates gcHeadroom past
// the live heap, down to serveGCMin.
const serveGCPercent = 400

// serveGCMin is serve's smallest GOGC, reached from 2·gcHeadroom (128 MiB)
// of live heap, stacks and globals: thousands of calls waiting on a slow
// API, or a catalogue far past 5,000 tools (whose live heap is 52 MiB).
// There the heap peaks at 1.5× what the collector found live, not 2×: at
// 10,000 waiting calls 58 KiB a call, against 75.6 at Go's default of 100
// (bench/slow.sh, BENCHMARKS.md), for more frequent cycles over a heap
// whose calls mostly wait.
const serveGCMin = 50

// gcHeadroom is the heap a cycle may allocate past a small live heap.
const gcHeadroom = 64 << 20

// memLimitMargin is the heap beyond the memory budget that serve lets the
// Go runtime use before it collects harder (GOMEMLIMIT overrides it).
const memLimitMargin = 192 << 20

// pruneHistory keeps the call history within its retention and size, once
// a minute until ctx ends.
func pruneHistory(ctx context.Context, store *sqlstore.SQLStore, retention time.Duration, maxRows int, log *slog.Logger) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		if n, err := store.PruneCalls(ctx, time.Now().Add(-retention), maxRows); err != nil && ctx.Err() == nil {
			log.Warn("call history: pruning failed; trying again in a minute", "error", err.Error())
		} else if n > 0 {
			log.Info("call history: pruned", "calls", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
