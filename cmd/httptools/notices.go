package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"

	"github.com/httptools/httptools/server"
	"github.com/httptools/httptools/synth"
)

// What every command says of a manifest that loads. The rules that find
// its warnings live in synth and in its kind's synthesizer, and run at
// every load; noticesOf is the one place that turns a loaded tool into
// what is said of it, so that validate, call, test, serve and mcp say the
// same of the same manifest (TestSameWarningsOnEveryCommand).

// notice is one thing said of a manifest that loads: a warning of the
// manifest rules, or a note.
type notice struct {
	warning       bool
	path, message string
}

// String is the notice as validate prints it after "file: ".
func (n notice) String() string {
	kind := "note"
	if n.warning {
		kind = "warning"
	}
	return kind + ": " + n.path + ": " + n.message
}

// noticesOf is what every command says of tool: a note when MCP clients
// see its output wrapped, then its warnings, in the order the rules found
// them.
func noticesOf(tool *synth.Tool) []notice {
	var out []notice
	if server.NewMCPTool(tool).Wrapped {
		out = append(out, notice{path: "output", message: `is not an object schema, which MCP requires: MCP clients see the output as {"result": <output>} with the schema under properties.result; REST returns it as is`})
	}
	for _, p := range tool.Warnings() {
		out = append(out, notice{warning: true, path: p.Path, message: p.Message})
	}
	return out
}

// printNotices writes the notices of each tool, by file, as validate
// does: "file: warning: path: message".
func printNotices(w io.Writer, tools map[string]*synth.Tool) {
	for _, f := range slices.Sorted(maps.Keys(tools)) {
		for _, n := range noticesOf(tools[f]) {
			fmt.Fprintf(w, "%s: %s\n", f, n)
		}
	}
}

// logNotices logs the notices of every manifest of ts, a warning at level
// WARN and a note at INFO, leaving out the tools prev holds (a reload
// keeps an unchanged file's tool: its notices were logged when it was
// loaded). prev is nil at start.
func logNotices(log *slog.Logger, ts, prev *server.Toolset) {
	said := map[*synth.Tool]bool{}
	if prev != nil {
		for _, t := range prev.Manifests() {
			said[t] = true
		}
	}
	for f, t := range ts.Manifests() {
		if said[t] {
			continue
		}
		for _, n := range noticesOf(t) {
			if n.warning {
				log.Warn("manifest warning", "file", f, "path", n.path, "message", n.message)
			} else {
				log.Info("manifest note", "file", f, "path", n.path, "message", n.message)
			}
		}
	}
}
