package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec" // the "http" kind
	"github.com/httptools/httptools/mcpauth"
	"github.com/httptools/httptools/mcpremote" // the "mcp" kind
	"github.com/httptools/httptools/synth"
)

func validate(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("validate", "validate PATH… [--remote [--allow-cidr CIDR]… [--mcp-plain-http HOST]…]",
		`Check manifests: files, or folders searched for *.json (*.cases.json, the test cases, are skipped). Prints
"file: field.path: message" per error and "file: warning: field.path: message" per warning; exit 1 on any error.
Editors can check and complete manifests from the schema of the format: add "$schema" to a manifest (see the README).
With --remote, each tool of a remote MCP server (transport "mcp") is checked against what its server lists: a warning
when the remote tool is missing or its input schema differs; an error when the server cannot be reached, or when it
lists the tool otherwise than the manifest pins it (metadata.mcpTool, written by import mcp): the changed members named. Secrets come
from $HTTPTOOLS_SECRET_<ENV>_<NAME>.`)
	remote := fs.Bool("remote", false, "list the tools of each remote MCP server and compare")
	var allow cidrFlags
	fs.Var(&allow, "allow-cidr", "with --remote: let the check reach this range despite the SSRF guard, e.g. 127.0.0.0/8 (repeatable)")
	var plain stringsFlag
	fs.Var(&plain, "mcp-plain-http", "with --remote: reach this host's MCP endpoints over plain http (repeatable)")
	pos, rc, ok := fs.parse(args, stdout, stderr)
	if !ok {
		return rc
	}
	if len(pos) == 0 {
		fmt.Fprintln(stderr, "httptools validate: name at least one manifest or folder")
		return 2
	}
	files, err := manifestFiles(pos)
	if err != nil {
		fmt.Fprintln(stderr, "httptools validate:", err)
		return 2
	}
	var remotes *remoteCheck
	if *remote {
		remotes = newRemoteCheck(allow, plain, stderr)
		defer remotes.close()
	}
	nerr, nwarn := 0, 0
	for _, f := range files {
		ps, tool, err := checkFile(f)
		if err != nil {
			fmt.Fprintf(stdout, "%s: %v\n", f, err)
			nerr++
			continue
		}
		if tool != nil {
			for _, n := range noticesOf(tool) { // what serve, mcp, call and test say of it too
				fmt.Fprintf(stdout, "%s: %s\n", f, n)
				if n.warning {
					nwarn++
				}
			}
		}
		if remotes != nil && tool != nil {
			ps = append(ps, remotes.check(f)...)
		}
		for _, p := range ps {
			fmt.Fprintf(stdout, "%s: %s\n", f, p)
			if p.Severity == synth.SeverityError {
				nerr++
			} else {
				nwarn++
			}
		}
	}
	fmt.Fprintf(stderr, "%s, %s, %s\n", plural(len(files), "manifest"), plural(nerr, "error"), plural(nwarn, "warning"))
	if nerr > 0 {
		return 1
	}
	return 0
}

// remoteCheck loads manifests again with an MCP client that may reach
// what the flags allow, and compares each remote tool with its server's.
type remoteCheck struct {
	syn    *mcpremote.Synthesizer
	loader *synth.Loader
}

func newRemoteCheck(allow cidrFlags, plain stringsFlag, stderr io.Writer) *remoteCheck {
	return newRemoteCheckAuth(allow, plain, stderr, nil)
}

// newRemoteCheckAuth is newRemoteCheck whose servers behind OAuth are
// authorized by authorizer's Authorizer (nil: none).
func newRemoteCheckAuth(allow cidrFlags, plain stringsFlag, stderr io.Writer, authorizer func(*fetch.Client) mcpauth.Authorizer) *remoteCheck {
	client := fetch.NewClient(fetch.Config{AllowCIDRs: allow, UserAgent: httpspec.UserAgent,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	cfg := mcpremote.Config{Client: client, PlainHTTP: plain}
	if authorizer != nil {
		cfg.Authorizer = authorizer(client)
	}
	syn := mcpremote.NewSynthesizer(cfg)
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(client))
	reg.MustRegister(synth.KindMCP, syn)
	return &remoteCheck{syn: syn, loader: &synth.Loader{Registry: reg}}
}

func (rc *remoteCheck) close() { rc.syn.Close() }

// check returns the drift of the manifest in file, as warnings, or the
// error of a server that could not be asked.
func (rc *remoteCheck) check(file string) []synth.Problem {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	t, err := rc.loader.Load(src)
	if err != nil {
		return nil // reported by checkFile
	}
	h, ok := t.Handler().(*mcpremote.Handler)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	notes, err := h.Drift(ctx, synth.CallContext{Tenant: "local", Secrets: auth.Env{}})
	if err != nil {
		return []synth.Problem{{Severity: synth.SeverityError, Path: "mcpEndpoint", Message: "the server could not be asked for its tools: " + err.Error()}}
	}
	var ps []synth.Problem
	for _, n := range notes {
		ps = append(ps, synth.Problem{Severity: synth.SeverityWarning, Path: "mcpEndpoint", Message: n})
	}
	return append(ps, pinDrift(ctx, t, h)...)
}

// pinDrift is the error of a remote tool that the server lists otherwise
// than the manifest pins it (metadata.mcpTool, which import mcp writes):
// the members that changed are named, never quoted.
func pinDrift(ctx context.Context, t *synth.Tool, h *mcpremote.Handler) []synth.Problem {
	path := "metadata." + mcpremote.PinKey
	pin, err := mcpremote.PinnedTool(t.Manifest().Metadata)
	if err != nil {
		return []synth.Problem{{Severity: synth.SeverityError, Path: path, Message: err.Error() + ": import the tool again (httptools import mcp)"}}
	}
	if pin == nil {
		return nil
	}
	tools, err := h.Tools(ctx, synth.CallContext{Tenant: "local", Secrets: auth.Env{}})
	if err != nil {
		return []synth.Problem{{Severity: synth.SeverityError, Path: "mcpEndpoint", Message: "the server could not be asked for its tools: " + err.Error()}}
	}
	changed := []string{"name"} // the tool is gone, unless listed
	for _, now := range tools {
		if now.Name != h.RemoteTool() {
			continue
		}
		changed = slices.DeleteFunc(changed, func(f string) bool { return f == "name" })
		for _, f := range mcpremote.Changed(pin, now) { // every copy of a name listed twice
			if !slices.Contains(changed, f) {
				changed = append(changed, f)
			}
		}
	}
	if len(changed) == 0 {
		return nil
	}
	slices.Sort(changed)
	return []synth.Problem{{Severity: synth.SeverityError, Path: path, Message: fmt.Sprintf(
		"the server lists tool %q otherwise than this manifest pins it (changed: %s): review the remote tool, then import it again (httptools import mcp) to accept it",
		h.RemoteTool(), strings.Join(changed, ", "))}}
}

// checkFile loads one manifest and returns the tool when it loads (what is
// said of it: noticesOf), else its problems, errors first.
func checkFile(path string) ([]synth.Problem, *synth.Tool, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	t, err := synth.Load(src)
	if err == nil {
		return nil, t, nil
	}
	var e *synth.Error
	if errors.As(err, &e) {
		return e.Problems, nil, nil
	}
	return nil, nil, err
}

// manifestFiles expands folders into the *.json files below them, leaving out
// *.cases.json, sorted.
func manifestFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		found, err := synth.ManifestFiles(a)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// plural is "1 manifest", "2 manifests", "0 errors".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
