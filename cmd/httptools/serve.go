package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/httptools/httptools/connections/sqlstore"
	"io"
	iofs "io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/internal/hangup"
	"github.com/httptools/httptools/internal/jsonlog"
	"github.com/httptools/httptools/server"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serviceFlags are the flags serve and mcp share.
type serviceFlags struct {
	tools, db, apps, publicURL, logFormat, oidc string
	allow                                       cidrFlags
	maxTimeout                                  int
	maxInflight, tenantBytes                    sizeFlag
	tenantMax, connsPerHost                     int
	tenantLimits                                tenantLimitFlags
	noAccessLog                                 bool
	ui                                          string
}

func (f *serviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tools, "tools", "", "folder of tool manifests (every *.json below it; *.cases.json are test cases)")
	fs.StringVar(&f.db, "db", "sqlite:./httptools.db", "store: sqlite:PATH, or postgres://… for several replicas")
	fs.StringVar(&f.apps, "apps", "", "apps.json with the OAuth apps connections use (none: connection tools fail with connection-unavailable)")
	fs.StringVar(&f.publicURL, "public-url", "", "the URL the service is reached at, for the OAuth callback (default http://ADDR)")
	fs.Var(&f.allow, "allow-cidr", "let tools reach this range despite the SSRF guard (repeatable)")
	fs.IntVar(&f.maxTimeout, "max-timeout", synth.DefaultMaxTimeoutMs, "the largest timeoutMs a manifest may set")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fs.StringVar(&f.ui, "ui", "auto", "the web console at /ui: on, off, or auto (on when --addr is a loopback address)")
	fs.BoolFunc("no-access-log", "log no record per request (method, route, status, tenant, key id, error code, duration)", func(v string) error { b, err := strconv.ParseBool(v); f.noAccessLog = b; return err })
	f.maxInflight = sizeFlag(budget.DefaultSize())
	fs.Var(&f.maxInflight, "max-inflight-bytes", "memory budget for bodies in flight (request bodies, upstream answers, responses), e.g. 512MiB; calls wait for room within their deadline, else 503 overloaded (default a quarter of the machine's or container's memory)")
	fs.Var(&f.tenantBytes, "tenant-max-inflight-bytes", "the share of --max-inflight-bytes one tenant's calls may hold together, e.g. 1GiB; past it a call waits for the tenant's own calls, else 503 overloaded (default half the budget)")
	fs.IntVar(&f.tenantMax, "tenant-max-inflight", server.DefaultTenantMaxInflight, "calls in flight one tenant may have; more get 429 rate-limited (-1: no bound)")
	fs.Var(&f.tenantLimits, "tenant-limit", "TENANT=N: another in-flight limit for one tenant (repeatable)")
	fs.IntVar(&f.connsPerHost, "max-conns-per-host", fetch.DefaultMaxConnsPerHost, "connections to one upstream host; calls beyond wait for one within their deadline (-1: no bound)")
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
// --access-log=false.
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
	return sqlstore.OpenOptions(ctx, dsn, keys, opts)
}

var errNoMasterKey = fmt.Errorf("set %s (base64 of 32 bytes, the same on every replica) to use a PostgreSQL store", sqlstore.MasterKeyEnv)

// A plan is what the flags ask for, checked before anything is opened,
// listened on or created: the apps, the loader and every tool.
type plan struct {
	apps   connections.Apps
	mem    *budget.Budget
	client *fetch.Client // tools' calls, and through HTTPClient every request of the service's own
	loader *synth.Loader
	tools  *server.Toolset
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
		return nil, fmt.Errorf("--tools %s: %w", f.tools, unwrapPath(err))
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("--tools %s: not a folder; name the folder that holds the manifests", f.tools)
	}
	p := &plan{}
	var err error
	if f.apps != "" {
		if p.apps, err = connections.LoadApps(f.apps); err != nil {
			return nil, fmt.Errorf("--apps %w", err)
		}
	}
	reg := &synth.Registry{}
	p.mem = budget.New(int64(f.maxInflight))
	p.client = fetch.NewClient(fetch.Config{
		AllowCIDRs: f.allow, UserAgent: httpspec.UserAgent, Logger: log,
		Budget: p.mem, MaxConnsPerHost: f.connsPerHost,
	})
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(p.client))
	p.loader = &synth.Loader{Registry: reg, Options: synth.LoadOptions{MaxTimeoutMs: f.maxTimeout}}
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
		fmt.Fprintf(stderr, "httptools %s: --tools %s: %d problems; nothing was started\n", cmd, dir, len(le.Lines))
		return 1
	}
	fmt.Fprintf(stderr, "httptools %s: %v; nothing was started\n", cmd, err)
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
	keys, err := server.NewSQLKeys(ctx, store.DB(), store.Postgres())
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", f.db, err)
	}
	var mgr *connections.Manager
	public := strings.TrimRight(f.publicURL, "/")
	if public == "" {
		public = "http://" + addr
	}
	if p.apps != nil {
		// Token requests go through the guard too, and follow no redirect:
		// a 307 would post the client secret and the code again.
		mgr = &connections.Manager{Connections: store, States: store, Apps: p.apps, RedirectURL: public + "/v1/oauth/callback", Logger: log,
			HTTPClient: p.client.HTTPClient(false)}
	}
	var oidcCfg *server.OIDC
	if f.oidc != "" {
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
			// few MiB need not collect every few MiB allocated.
			debug.SetGCPercent(serveGCPercent)
		}
	}
	envTenant := ""
	if strings.HasPrefix(f.db, "sqlite:") {
		envTenant = "local" // HTTPTOOLS_SECRET_* variables serve the local tenant only
	}
	srv, err := server.New(server.Config{
		Store: store, Keys: keys, Manager: mgr, Apps: p.apps, ToolsDir: f.tools, Tools: p.tools, Logger: log, AccessLogger: f.accessLogger(log),
		UI:               f.uiOn(addr),
		Loader:           p.loader,
		EnvSecretsTenant: envTenant, OIDC: oidcCfg,
		Budget: p.mem, TenantMaxInflight: f.tenantMax, TenantLimits: f.tenantLimits.m, TenantMaxBytes: int64(f.tenantBytes),
	})
	if err != nil {
		return nil, err
	}
	return srv, nil
}

func serve(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("serve", "serve --tools DIR [--addr 127.0.0.1:8080] [--db sqlite:./httptools.db|postgres://…] [flags]",
		`Serve every tool of DIR over REST (/v1/…), MCP (/mcp) and a web console (/ui, on by default on a loopback address) to
the tenants of its API keys. SIGHUP reloads DIR; SIGTERM drains calls in flight and exits.`).fromEnv()
	var f serviceFlags
	f.register(fs.FlagSet)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	drain := fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM, how long calls in flight may take to finish")
	drainDelay := fs.Duration("drain-delay", 5*time.Second, "on SIGTERM, how long the open connections are served (each closed after its next answer, /readyz 503) after the port closes, before idle ones are closed: longer than a proxy's idle keep-alive (docs/deploy/nginx.conf: 2 s), so it never sends a request on a connection being closed (Ctrl-C skips it)")
	pprofAddr := fs.String("pprof", "", "serve Go's profiler (net/http/pprof) on this address, e.g. 127.0.0.1:6060; off by default")
	metricsAddr := fs.String("metrics-addr", "", "serve /metrics without a key on this address of its own, e.g. 127.0.0.1:9464 (on --addr it needs an admin key: its series name tenants)")
	dbConns := fs.Int("db-max-conns", sqlstore.DefaultMaxConns, "PostgreSQL connections this replica may open; N replicas need N times it within the server's max_connections")
	dbWait := fs.Duration("db-wait", 30*time.Second, "how long start-up waits for a PostgreSQL store that refuses (restarting, or out of connections)")
	var lim server.ConnLimits
	fs.IntVar(&lim.MaxConns, "max-conns", 0, "open client connections at most; past it the oldest idle one is closed (default half the descriptor limit)")
	fs.IntVar(&lim.MaxIdlePerClient, "max-idle-conns-per-client", server.DefaultMaxIdlePerClient, "connections of one client address waiting for headers or kept alive; past it that client's oldest one is closed")
	fs.DurationVar(&lim.HeaderTimeout, "header-timeout", server.DefaultHeaderTimeout, "how long a request's headers may take to arrive")
	fs.DurationVar(&lim.BodyTimeout, "body-timeout", server.DefaultBodyTimeout, "how long a request's body may take to arrive")
	fs.DurationVar(&lim.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "how long a kept-alive connection may wait for its next request")
	fs.DurationVar(&lim.WriteStall, "write-stall", server.DefaultWriteStall, "how long a client may read nothing of an answer before its connection is closed")
	pos, rc, ok := fs.parse(args, stdout, stderr)
	if !ok {
		return rc
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "httptools serve: unexpected argument %q (the tools folder is --tools %s)\n", pos[0], pos[0])
		return 2
	}
	logs := newLogWriter(stderr, 200*time.Millisecond)
	defer logs.Close()
	log := f.logger(logs)
	ctx := context.Background()
	// The tools first: a problem with --tools creates nothing and holds no
	// port.
	p, err := f.check(log)
	if err != nil {
		return loadFailed(stderr, "serve", f.tools, err)
	}
	// Then the store, before the port: a start whose store fails takes no
	// request it would have to drop (a client or proxy is refused, and
	// tries elsewhere).
	store, err := openStoreWaiting(ctx, f.db, sqlstore.Options{MaxConns: *dbConns}, *dbWait, log)
	if err != nil {
		logs.Flush()
		fmt.Fprintln(stderr, "httptools serve:", err)
		return 1
	}
	defer store.Close()
	// Then listen: with --addr 127.0.0.1:0 the default public URL (and so
	// the OAuth redirect) must name the port really bound.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "httptools serve: --addr %s: %v (pick another address with --addr)\n", *addr, unwrapOp(err))
		return 1
	}
	defer ln.Close()
	stopTracing, err := setupTracing(ctx, os.Getenv, log)
	if err != nil {
		fmt.Fprintln(stderr, "httptools serve:", err)
		return 1
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(sctx); err != nil {
			log.Warn("spans not exported before stopping", "error", err.Error())
		}
	}()
	srv, err := f.build(ctx, p, store, ln.Addr().String(), log)
	if err != nil {
		fmt.Fprintln(stderr, "httptools serve:", err)
		return 1
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "httptools %s: %d tools from %s\n", fetch.Version, len(srv.Tools().IDs()), f.tools)
	fmt.Fprintf(stdout, "  REST  %s/v1/tools\n", base)
	fmt.Fprintf(stdout, "  MCP   %s/mcp\n", base)
	if f.uiOn(ln.Addr().String()) {
		fmt.Fprintf(stdout, "  UI    %s/ui/ (sign in with an API key)\n", base)
	}
	if path, ok := strings.CutPrefix(f.db, "sqlite:"); ok {
		if key, err := localKey(ctx, srv.Keys(), path+".local-api-key"); err == nil {
			fmt.Fprintf(stdout, "API key for tenant local: %s\n", key)
			fmt.Fprintf(stdout, "try: curl -s -H 'Authorization: Bearer %s' %s/v1/tools\n", key, base)
		} else {
			log.Warn("no local API key", "error", err)
		}
	} else {
		fmt.Fprintln(stdout, "create API keys with: httptools keys create --tenant T --db …")
	}
	if *pprofAddr != "" {
		go func() {
			mux := http.NewServeMux()
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			log.Warn("profiler on", "addr", *pprofAddr, "error", http.ListenAndServe(*pprofAddr, mux))
		}()
	}
	hs := server.NewHTTPServer(srv.Handler(), lim, log)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if *metricsAddr != "" {
		mln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			fmt.Fprintf(stderr, "httptools serve: --metrics-addr %s: %v\n", *metricsAddr, unwrapOp(err))
			return 1
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", srv.MetricsHandler())
		ms := server.NewHTTPServer(mux, server.ConnLimits{}, log)
		go ms.Serve(mln)
		defer ms.Close()
		fmt.Fprintf(stdout, "  metrics http://%s/metrics\n", mln.Addr())
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	for {
		select {
		case err := <-errc:
			fmt.Fprintln(stderr, "httptools serve:", err)
			return 1
		case <-hangup.C: // caught since the program started (internal/hangup): one during start-up reloads now
			if err := srv.Reload(); err != nil {
				log.Error("reload failed; the previous tools stay", "error", err.Error())
			} else {
				log.Info("reloaded", "tools", len(srv.Tools().IDs()))
			}
			logs.Flush()
		case sig := <-sigs:
			if sig == syscall.SIGTERM && *drainDelay > 0 {
				// Lame duck first: a proxy's connections end one answer
				// at a time, and its idle ones time out on its side.
				log.Info("stopping: the port is closed; open connections end after their next answer", "delay", drainDelay.String())
				logs.Flush()
				srv.Drain()
				hs.Drain()
				select {
				case <-time.After(*drainDelay):
				case <-sigs: // a second signal: stop now
				}
			}
			log.Info("stopping: draining calls in flight", "timeout", drain.String())
			logs.Flush()
			sctx, cancel := context.WithTimeout(ctx, *drain)
			err := hs.Shutdown(sctx)
			cancel()
			if err != nil {
				log.Error("drain timed out; closing", "error", err.Error())
				hs.Close()
			}
			srv.Wait()
			if mgr := srv.Manager(); mgr != nil {
				fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if err := mgr.Flush(fctx); err != nil {
					log.Error("a refreshed token held in memory could not be stored; its connection may need to be reconnected", "error", err.Error())
				}
				cancel()
			}
			log.Info("stopped")
			return 0
		}
	}
}

// localKey returns the local tenant's API key, creating it (and a 0600 file
// beside the database holding it) on first start.
func localKey(ctx context.Context, store server.KeyStore, file string) (string, error) {
	if b, err := os.ReadFile(file); err == nil {
		key := strings.TrimSpace(string(b))
		if k, err := store.KeyOf(ctx, key); err == nil && k.Tenant == "local" {
			return key, nil
		}
	}
	key, _, err := store.CreateAPIKey(ctx, "local", server.RoleAdmin, "")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	return key, os.WriteFile(file, []byte(key+"\n"), 0o600)
}

func keys(args []string, stdout, stderr io.Writer) int {
	usage := "usage: httptools keys create --tenant T [--role admin|service|person] [--person ID] [--db …]\n" +
		"       httptools keys list [--tenant T] [--db …]\n" +
		"       httptools keys revoke ID [--db …]\n\n" +
		"Create (printing the key once), list or revoke the API keys of the store; --db may also be set by HTTPTOOLS_DB."
	if len(args) == 0 || wantsHelp(args[:1]) {
		if len(args) == 0 {
			fmt.Fprintln(stderr, usage)
			return 2
		}
		fmt.Fprintln(stdout, usage)
		return 0
	}
	verb := args[0]
	synopsis := map[string]string{
		"create": "keys create --tenant T [--role admin|service|person] [--person ID] [--db …]",
		"list":   "keys list [--tenant T] [--db …]",
		"revoke": "keys revoke ID [--db …]",
	}[verb]
	if synopsis == "" {
		fmt.Fprintf(stderr, "httptools keys: no command %q\n%s\n", verb, usage)
		return 2
	}
	fs := newCommand("keys "+verb, synopsis, "").fromEnv("db")
	tenantHelp := map[string]string{"create": "the tenant of the new key", "list": "list only this tenant's keys", "revoke": "the key's tenant (optional)"}[verb]
	tenant := fs.String("tenant", "", tenantHelp)
	role, person := new(string), new(string)
	*role = server.RoleAdmin
	if verb == "create" {
		fs.StringVar(role, "role", server.RoleAdmin, "admin (secrets, keys, company connections), service (a kernel: names the person of each call) or person (one person's own calls and connections)")
		fs.StringVar(person, "person", "", "the person of a person key")
	}
	db := fs.String("db", "sqlite:./httptools.db", "the store")
	rest := args[1:]
	id := ""
	if verb == "revoke" && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		id, rest = rest[0], rest[1:]
	}
	pos, rc, ok := fs.parse(rest, stdout, stderr)
	if !ok {
		return rc
	}
	if verb == "revoke" && id == "" && len(pos) > 0 {
		id = pos[0]
	}
	switch {
	case verb == "create" && *tenant == "":
		fmt.Fprintln(stderr, "httptools keys create: --tenant is required")
		return 2
	case verb == "create":
		if err := server.CheckRole(*role, *person); err != nil {
			fmt.Fprintln(stderr, "httptools keys create:", err)
			return 2
		}
	case verb == "revoke" && id == "":
		fmt.Fprintln(stderr, "httptools keys revoke: name the key's id (httptools keys list shows them)")
		return 2
	case verb != "list" && verb != "revoke":
		fmt.Fprintln(stderr, usage)
		return 2
	}
	ctx := context.Background()
	sq, err := openStore(ctx, *db, sqlstore.Options{}, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		fmt.Fprintln(stderr, "httptools keys:", err)
		return 1
	}
	defer sq.Close()
	store, err := server.NewSQLKeys(ctx, sq.DB(), sq.Postgres())
	if err != nil {
		fmt.Fprintln(stderr, "httptools keys:", err)
		return 1
	}
	switch verb {
	case "create":
		key, k, err := store.CreateAPIKey(ctx, *tenant, *role, *person)
		if err != nil {
			fmt.Fprintln(stderr, "httptools keys:", err)
			return 1
		}
		who := ""
		if k.Person != "" {
			who = " for person " + k.Person
		}
		fmt.Fprintf(stdout, "API key %s, role %s%s, tenant %s (shown once; only its hash is stored):\n%s\n", k.ID, k.Role, who, *tenant, key)
	case "list":
		ks, err := store.APIKeys(ctx, *tenant)
		if err != nil {
			fmt.Fprintln(stderr, "httptools keys:", err)
			return 1
		}
		fmt.Fprintf(stdout, "%-22s %-16s %-8s %-16s %s\n", "ID", "TENANT", "ROLE", "PERSON", "CREATED")
		for _, k := range ks {
			fmt.Fprintf(stdout, "%-22s %-16s %-8s %-16s %s\n", k.ID, k.Tenant, k.Role, k.Person, k.Created.UTC().Format(time.RFC3339))
		}
	case "revoke":
		if err := store.RevokeAPIKey(ctx, *tenant, id); err != nil {
			if errors.Is(err, connections.ErrNotFound) {
				fmt.Fprintf(stderr, "httptools keys revoke: no key %s (httptools keys list shows them)\n", id)
				return 1
			}
			fmt.Fprintln(stderr, "httptools keys:", err)
			return 1
		}
		fmt.Fprintf(stdout, "revoked %s (replicas stop taking it within a minute)\n", id)
	}
	return 0
}

func mcpStdio(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newCommand("mcp", "mcp --tools DIR [--person ID] [--db …] [flags]",
		`Serve the tools over MCP on stdin/stdout, as tenant local (for desktop clients: Claude Desktop, Cursor, VS Code).
The store defaults to $XDG_STATE_HOME/httptools/httptools.db; SIGHUP reloads DIR and tells the client.`).fromEnv()
	var f serviceFlags
	f.register(fs.FlagSet)
	person := fs.String("person", "", "the person calls act for")
	f.db = "" // the state directory, not the working folder: see stateDB
	fs.Lookup("db").DefValue = "sqlite:$XDG_STATE_HOME/httptools/httptools.db"
	if _, rc, ok := fs.parse(args, stdout, stderr); !ok {
		return rc
	}
	// Caught from the first moment (its default ends the process); one
	// during start-up reloads once started.
	hup := hangup.C
	p, err := f.check(f.logger(stderr))
	if err != nil {
		return loadFailed(stderr, "mcp", f.tools, err)
	}
	if f.db == "" {
		db, err := stateDB()
		if err != nil {
			fmt.Fprintln(stderr, "httptools mcp:", err)
			return 1
		}
		f.db = db
	}
	log := f.logger(stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopTracing, err := setupTracing(ctx, os.Getenv, log)
	if err != nil {
		fmt.Fprintln(stderr, "httptools mcp:", err)
		return 1
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stopTracing(sctx)
	}()
	store, err := openStore(ctx, f.db, sqlstore.Options{}, log)
	if err != nil {
		fmt.Fprintln(stderr, "httptools mcp:", err)
		return 1
	}
	defer store.Close()
	srv, err := f.build(ctx, p, store, "127.0.0.1:8080", log)
	if err != nil {
		fmt.Fprintln(stderr, "httptools mcp:", err)
		return 1
	}
	who := func(*mcp.CallToolRequest) string { return *person }
	ms := srv.MCPServer("local", who)
	// SIGHUP reloads the folder; the client is told the list changed.
	go func() {
		for range hup {
			if err := srv.Reload(); err != nil {
				log.Error("reload failed; the previous tools stay", "error", err.Error())
				continue
			}
			srv.SyncMCP(ms, "local", who)
			log.Info("reloaded", "tools", len(srv.Tools().IDs()))
		}
	}()
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := ms.Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(stderr, "httptools mcp:", err)
		return 1
	}
	return 0
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// stateDB is the store of httptools mcp when --db is not given: a SQLite
// file in the user's state directory ($XDG_STATE_HOME/httptools, else
// ~/.local/state/httptools), made 0700 if missing. A desktop app starts the
// command from any folder (often /, unwritable) as its user: the working
// folder must not matter.
func stateDB() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory: set XDG_STATE_HOME or HOME, or pass --db sqlite:PATH (%v)", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	dir := filepath.Join(base, "httptools")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("cannot make the state directory %s (%v): set XDG_STATE_HOME, or pass --db sqlite:PATH", dir, errors.Unwrap(err))
	}
	return "sqlite:" + filepath.Join(dir, "httptools.db"), nil
}

// serveGCPercent is serve's GOGC when neither GOGC nor GOMEMLIMIT is set.
const serveGCPercent = 400

// memLimitMargin is the heap beyond the memory budget that serve lets the
// Go runtime use before it collects harder (GOMEMLIMIT overrides it).
const memLimitMargin = 192 << 20

// sizeFlag is a byte count written as 536870912, 512MiB or 2GB
// (go-humanize's ParseBytes).
type sizeFlag int64

func (s *sizeFlag) String() string { return humanize.IBytes(uint64(*s)) }

func (s *sizeFlag) Set(v string) error {
	n, err := humanize.ParseBytes(v)
	if err != nil || n == 0 || n > 1<<62 {
		return fmt.Errorf("want a size such as 512MiB or 2GiB, got %q", v)
	}
	*s = sizeFlag(n)
	return nil
}

// tenantLimitFlags collects --tenant-limit TENANT=N.
type tenantLimitFlags struct{ m map[string]int }

func (t *tenantLimitFlags) list() {}

func (t *tenantLimitFlags) String() string { return fmt.Sprint(t.m) }

func (t *tenantLimitFlags) Set(v string) error {
	name, n, ok := strings.Cut(v, "=")
	limit, err := strconv.Atoi(n)
	if !ok || name == "" || err != nil {
		return fmt.Errorf("want TENANT=N such as acme=500, got %q", v)
	}
	if t.m == nil {
		t.m = map[string]int{}
	}
	t.m[name] = limit
	return nil
}
