package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/hangup"
	"github.com/httptools/httptools/server"
)

func serve(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("serve", "serve --tools DIR [--addr 127.0.0.1:8080] [--db sqlite:./httptools.db|postgres://…] [flags]",
		`Serve every tool of DIR over REST (/v1/…), MCP (/mcp) and a web console (/ui, on by default on a loopback address) to
the tenants of its API keys. SIGHUP reloads DIR; SIGTERM drains calls in flight and exits.`).fromEnv()
	var f serviceFlags
	f.register(fs.FlagSet, true)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	drain := fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM, how long calls in flight may take to finish")
	drainDelay := fs.Duration("drain-delay", 5*time.Second, "on SIGTERM, how long the open connections are served (each closed after its next answer, /readyz 503) after the port closes, before idle ones are closed: longer than a proxy's idle keep-alive (docs/deploy/nginx.conf: 2 s), so it never sends a request on a connection being closed (Ctrl-C skips it)")
	pprofAddr := fs.String("pprof", "", "serve Go's profiler (net/http/pprof) on this address, e.g. 127.0.0.1:6060; off by default")
	metricsAddr := fs.String("metrics-addr", "", "serve /metrics without a key on this address of its own, e.g. 127.0.0.1:9464 (on --addr it needs an admin key: its series name tenants)")
	dbConns := fs.Int("db-max-conns", sqlstore.DefaultMaxConns, "PostgreSQL connections this replica may open; N replicas need N times it within the server's max_connections")
	dbWait := fs.Duration("db-wait", 30*time.Second, "how long start-up waits for a PostgreSQL store that refuses (restarting, or out of connections)")
	lim := connLimitFlags(fs.FlagSet)
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
	// From here every message goes through logs: after the records
	// buffered before it, and never beside the flusher's writes.
	stderr = logs.Direct()
	ctx := context.Background()
	// The tools first: a problem with --tools creates nothing, holds no port.
	f.production = true
	p, err := f.check(log)
	if err != nil {
		return loadFailed(stderr, "serve", f.tools, err)
	}
	defer p.remote.Close() // remote MCP sessions end, stdio servers stop
	// Then the store, before the port: a start whose store fails takes no
	// request it would have to drop (a client or proxy is refused, and
	// tries elsewhere).
	store, err := openStoreWaiting(ctx, f.db, sqlstore.Options{MaxConns: *dbConns}, *dbWait, log)
	if err != nil {
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
	defer flushSpans(stopTracing, log)
	srv, err := f.build(ctx, p, store, ln.Addr().String(), log)
	if err != nil {
		fmt.Fprintln(stderr, "httptools serve:", err)
		return 1
	}
	printBanner(ctx, stdout, &f, srv, ln.Addr().String(), log)
	startPprof(*pprofAddr, log)
	hs := server.NewHTTPServer(metadataDocument(strings.TrimRight(f.publicURL, "/"), srv.Handler()), *lim, log) // mcpconnect.go
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if *metricsAddr != "" {
		ms, err := serveMetrics(*metricsAddr, srv, stdout, log)
		if err != nil {
			fmt.Fprintf(stderr, "httptools serve: --metrics-addr %s: %v\n", *metricsAddr, unwrapOp(err))
			return 1
		}
		defer ms.Close()
	}
	return serveUntilStopped(ctx, stderr, errc, srv, hs, *drainDelay, *drain, logs, log)
}

// serveUntilStopped reloads on SIGHUP until SIGTERM or an interrupt stops
// the server (exit 0) or the listener fails (exit 1).
func serveUntilStopped(ctx context.Context, stderr io.Writer, errc <-chan error, srv *server.Server, hs *server.HTTPServer, drainDelay, drain time.Duration, logs *logWriter, log *slog.Logger) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	for {
		select {
		case err := <-errc:
			fmt.Fprintln(stderr, "httptools serve:", err)
			return 1
		case <-hangup.C: // caught since the program started (internal/hangup): one during start-up reloads now
			reloadTools(srv, log)
			logs.Flush()
		case sig := <-sigs:
			stopServing(ctx, sig, sigs, srv, hs, drainDelay, drain, logs, log)
			return 0
		}
	}
}

// connLimitFlags registers the flags that bound client connections.
func connLimitFlags(fs *flag.FlagSet) *server.ConnLimits {
	var lim server.ConnLimits
	fs.IntVar(&lim.MaxConns, "max-conns", 0, "open client connections at most; past it the oldest idle one is closed (default half the descriptor limit)")
	fs.IntVar(&lim.MaxIdlePerClient, "max-idle-conns-per-client", server.DefaultMaxIdlePerClient, "connections of one client address waiting for headers or kept alive; past it that client's oldest one is closed")
	fs.DurationVar(&lim.HeaderTimeout, "header-timeout", server.DefaultHeaderTimeout, "how long a request's headers may take to arrive")
	fs.DurationVar(&lim.BodyTimeout, "body-timeout", server.DefaultBodyTimeout, "how long a request's body may take to arrive")
	fs.DurationVar(&lim.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "how long a kept-alive connection may wait for its next request")
	fs.DurationVar(&lim.WriteStall, "write-stall", server.DefaultWriteStall, "how long a client may read nothing of an answer before its connection is closed")
	return &lim
}

// flushSpans exports the spans still buffered, for at most 5 seconds.
func flushSpans(stopTracing func(context.Context) error, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stopTracing(sctx); err != nil {
		log.Warn("spans not exported before stopping", "error", err.Error())
	}
}

// printBanner prints where the tools are served and, on a SQLite store,
// the local tenant's API key with a curl line to try it.
func printBanner(ctx context.Context, stdout io.Writer, f *serviceFlags, srv *server.Server, addr string, log *slog.Logger) {
	base := "http://" + addr
	fmt.Fprintf(stdout, "httptools %s: %s from %s\n", fetch.Version, plural(len(srv.Tools().IDs()), "tool"), f.tools)
	fmt.Fprintf(stdout, "  REST  %s/v1/tools\n", base)
	fmt.Fprintf(stdout, "  MCP   %s/mcp\n", base)
	if f.uiOn(addr) {
		fmt.Fprintf(stdout, "  UI    %s/ui/ (sign in with an API key)\n", base)
	}
	path, ok := strings.CutPrefix(f.db, "sqlite:")
	if !ok {
		fmt.Fprintln(stdout, "create API keys with: httptools keys create --tenant T --db …")
		return
	}
	if key, err := localKey(ctx, srv.Keys(), path+".local-api-key"); err == nil {
		fmt.Fprintf(stdout, "API key for tenant local: %s\n", key)
		fmt.Fprintf(stdout, "try: curl -s -H 'Authorization: Bearer %s' %s/v1/tools\n", key, base)
	} else {
		log.Warn("no local API key", "error", err)
	}
}

// startPprof serves Go's profiler on addr, if one is set, until the
// process ends.
func startPprof(addr string, log *slog.Logger) {
	if addr == "" {
		return
	}
	go func() {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		log.Warn("profiler on", "addr", addr, "error", http.ListenAndServe(addr, mux))
	}()
}

// serveMetrics serves /metrics without a key on an address of its own and
// prints where; the caller closes the server it returns.
func serveMetrics(addr string, srv *server.Server, stdout io.Writer, log *slog.Logger) (*server.HTTPServer, error) {
	mln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", srv.MetricsHandler())
	ms := server.NewHTTPServer(mux, server.ConnLimits{}, log)
	go ms.Serve(mln)
	fmt.Fprintf(stdout, "  metrics http://%s/metrics\n", mln.Addr())
	return ms, nil
}

// reloadTools reloads the tools folder; a failed reload keeps the previous tools.
func reloadTools(srv *server.Server, log *slog.Logger) {
	prev := srv.Tools()
	if err := srv.Reload(); err != nil {
		log.Error("reload failed; the previous tools stay", "error", err.Error())
		return
	}
	logNotices(log, srv.Tools(), prev)
	log.Info("reloaded", "tools", len(srv.Tools().IDs()))
}

// stopServing stops on a signal: on SIGTERM a lame-duck delay first, then
// calls in flight drain for at most drain, and what is queued is written.
func stopServing(ctx context.Context, sig os.Signal, sigs <-chan os.Signal, srv *server.Server, hs *server.HTTPServer, drainDelay, drain time.Duration, logs *logWriter, log *slog.Logger) {
	if sig == syscall.SIGTERM && drainDelay > 0 {
		// Lame duck first: a proxy's connections end one answer
		// at a time, and its idle ones time out on its side.
		log.Info("stopping: the port is closed; open connections end after their next answer", "delay", drainDelay.String())
		logs.Flush()
		srv.Drain()
		hs.Drain()
		select {
		case <-time.After(drainDelay):
		case <-sigs: // a second signal: stop now
		}
	}
	log.Info("stopping: draining calls in flight", "timeout", drain.String())
	logs.Flush()
	sctx, cancel := context.WithTimeout(ctx, drain)
	srv.EndListens() // MCP listen streams end by themselves only with their clients
	err := hs.Shutdown(sctx)
	cancel()
	if err != nil {
		log.Error("drain timed out; closing", "error", err.Error())
		hs.Close()
	}
	srv.Wait()
	srv.CloseHistory() // what is queued is written
	if mgr := srv.Manager(); mgr != nil {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := mgr.Flush(fctx); err != nil {
			log.Error("a refreshed token held in memory could not be stored; its connection may need to be reconnected", "error", err.Error())
		}
		cancel()
		mgr.Close() // its background writers end
	}
	log.Info("stopped")
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
	key, _, err := store.CreateAPIKey(ctx, "local", auth.RoleAdmin, "")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	return key, os.WriteFile(file, []byte(key+"\n"), 0o600)
}
