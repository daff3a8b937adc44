package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/policy"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Toolset is one loaded folder of manifests, immutable.
type Toolset struct {
	ids   []string
	tools map[string]*synth.Tool
	raw   map[string]json.RawMessage

	mcpOnce sync.Once
	mcp     *mcp.Server // the HTTP MCP server of this set, built on first use

	files map[string]*synth.Tool // by manifest file, for the next reload

	mcpToolsOnce sync.Once
	mcpTools     map[string]MCPTool // each tool's MCP view, built on first use

	mcpJSONOnce sync.Once
	mcpJSON     map[string][]byte // each tool's JSON in tools/list, encoded on first use
	// mcpHeaders are the tools whose input schema binds an argument to
	// a header (x-mcp-header), found with mcpJSON.
	mcpHeaders map[string]bool

	factsOnce sync.Once
	facts     map[string]policy.Tool // what a policy selects each tool by, built on first use

	searchOnce sync.Once
	search     *searchIndex // the catalogue's search index (search.go), built on first use

	cursorsOnce sync.Once
	cursors     listCursors // the SDK's cursors of the set's page boundaries (mcplist.go), asked on first use
	cursorsOK   bool        // false when the SDK would not say: tools/list is then the SDK's
}

// factsOf is what a policy selects tool by: the set's, when tool is one of
// its own.
func (ts *Toolset) factsOf(tool *synth.Tool) policy.Tool {
	ts.factsOnce.Do(func() {
		ts.facts = make(map[string]policy.Tool, len(ts.ids))
		for _, id := range ts.ids {
			ts.facts[id] = factsOf(ts.tools[id])
		}
	})
	if ts.tools[tool.ID()] == tool {
		return ts.facts[tool.ID()]
	}
	return factsOf(tool)
}

// Tool returns a tool by id.
func (ts *Toolset) Tool(id string) (*synth.Tool, bool) {
	t, ok := ts.tools[id]
	return t, ok
}

// unchanged returns the tool ts loaded from file f when the file still
// holds src.
func (ts *Toolset) unchanged(f string, src []byte) (*synth.Tool, bool) {
	if ts == nil {
		return nil, false
	}
	t, ok := ts.files[f]
	if !ok || !bytes.Equal(ts.raw[t.ID()], src) {
		return nil, false
	}
	return t, true
}

// IDs lists the tool ids, sorted.
func (ts *Toolset) IDs() []string { return ts.ids }

// Manifests yields each manifest file of the set, sorted, with the tool it
// holds: what a command says of a manifest (its warnings) names its file.
// A tool kept by a reload (its file unchanged) is the same *synth.Tool.
func (ts *Toolset) Manifests() iter.Seq2[string, *synth.Tool] {
	return func(yield func(string, *synth.Tool) bool) {
		for _, f := range slices.Sorted(maps.Keys(ts.files)) {
			if !yield(f, ts.files[f]) {
				return
			}
		}
	}
}

// LoadError lists every problem of a folder, one "file: field.path: message"
// line each.
type LoadError struct{ Lines []string }

// Error joins the lines.
func (e *LoadError) Error() string { return strings.Join(e.Lines, "\n") }

// LoadTools loads every *.json below dir (not *.cases.json). Any error in any
// file refuses the whole set, listing every problem; when apps is not nil,
// manifests whose connections name apps or permissions it lacks are refused
// too.
func LoadTools(dir string, loader *synth.Loader, apps connections.Apps) (*Toolset, error) {
	return loadTools(dir, loader, apps, nil)
}

// loadTools is LoadTools reusing the tools of prev (the set being replaced)
// whose files have not changed, so that a reload of a large catalogue
// compiles only what changed.
func loadTools(dir string, loader *synth.Loader, apps connections.Apps, prev *Toolset) (*Toolset, error) {
	files, err := synth.ManifestFiles(dir)
	if err != nil {
		return nil, err
	}
	ts := &Toolset{tools: map[string]*synth.Tool{}, raw: map[string]json.RawMessage{}, files: map[string]*synth.Tool{}}
	var lines []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s: %v", f, err))
			continue
		}
		var t *synth.Tool
		if old, ok := prev.unchanged(f, src); ok {
			t = old
		} else if t, err = loader.Load(src); err != nil {
			var e *synth.Error
			if errors.As(err, &e) {
				for _, p := range e.Problems {
					if p.Severity == synth.SeverityError {
						lines = append(lines, f+": "+p.String())
					}
				}
				continue
			}
			lines = append(lines, fmt.Sprintf("%s: %v", f, err))
			continue
		}
		if apps != nil { // without apps.json, connection tools load and fail per call
			for _, p := range apps.CheckManifest(t.Manifest()) {
				lines = append(lines, f+": "+p.String())
			}
		}
		if prev, dup := ts.tools[t.ID()]; dup {
			lines = append(lines, fmt.Sprintf("%s: id: %q is also the id of another manifest (%s): ids must be unique", f, t.ID(), prev.Description()))
			continue
		}
		ts.tools[t.ID()] = t
		ts.files[f] = t
		var compact json.RawMessage = src
		ts.raw[t.ID()] = compact
		ts.ids = append(ts.ids, t.ID())
	}
	if len(lines) > 0 {
		return nil, &LoadError{Lines: lines}
	}
	sort.Strings(ts.ids)
	return ts, nil
}
