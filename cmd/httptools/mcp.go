package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/hangup"
	"github.com/httptools/httptools/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func mcpStdio(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newCommand("mcp", "mcp --tools DIR [--person ID] [--policy FILE] [--toolset NAME] [--db …] [flags]",
		`Serve the tools over MCP on stdin/stdout, as tenant local (for desktop clients: Claude Desktop, Cursor, VS Code).
The store defaults to $XDG_STATE_HOME/httptools/httptools.db; SIGHUP reloads DIR and tells the client.`).fromEnv()
	var f serviceFlags
	f.register(fs.FlagSet, false)
	person := fs.String("person", "", "the person calls act for")
	toolset := fs.String("toolset", "", "serve only this toolset of the tool policy (--policy defines them)")
	f.db = "" // the state directory, not the working folder: see stateDB
	fs.Lookup("db").DefValue = "sqlite:$XDG_STATE_HOME/httptools/httptools.db"
	if _, rc, ok := fs.parse(args, stdout, stderr); !ok {
		return rc
	}
	// Caught from the first moment (its default ends the process); one
	// during start-up reloads once started.
	hup := hangup.C
	// One logger for the command and everything it starts (the fetch
	// client, remote MCP sessions, the reloads).
	log := f.logger(stderr)
	p, err := f.check(log)
	if err != nil {
		return loadFailed(stderr, "mcp", f.tools, err)
	}
	defer p.remote.Close() // remote MCP sessions end, stdio servers stop
	if f.db == "" {
		db, err := stateDB()
		if err != nil {
			fmt.Fprintln(stderr, "httptools mcp:", err)
			return 1
		}
		f.db = db
	}
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
	if *toolset != "" {
		// An unknown toolset stops here, not at the client's first list.
		if _, err := srv.CheckToolset(ctx, "local", *toolset); err != nil {
			fmt.Fprintln(stderr, "httptools mcp:", err)
			return 2
		}
	}
	ms := srv.MCPToolsetServer("local", *toolset, who)
	// Approvals of the person's calls in runs no person started are asked
	// in the client, when it takes forms.
	go srv.ElicitApprovals(ctx, ms, "local", *toolset, *person, 2*time.Second)
	go reloadOnHangup(ctx, hup, srv, log)
	// Ids come back as sent (the SDK reads them through a float64).
	in, out := server.ExactIDs(stdin, stdout)
	defer in.Close()
	t := &mcp.IOTransport{Reader: in, Writer: out}
	defer srv.CloseHistory() // the client is gone: what the history queued is written
	if err := ms.Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(stderr, "httptools mcp:", err)
		return 1
	}
	return 0
}

// reloadOnHangup reloads the folder on each SIGHUP (the session's MCP
// server, a listener of the tools its caller sees, syncs its tools and
// tells the client the list changed); a failed reload keeps the previous
// tools. It ends with the command, so that nothing it logs comes after.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, srv *server.Server, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		prev := srv.Tools()
		if err := srv.Reload(); err != nil {
			log.Error("reload failed; the previous tools stay", "error", err.Error())
			continue
		}
		logNotices(log, srv.Tools(), prev)
		log.Info("reloaded", "tools", len(srv.Tools().IDs()))
	}
}

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
