package synth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// DefaultMaxTimeoutMs is the largest timeoutMs a manifest may ask for unless
// the loader says otherwise.
const DefaultMaxTimeoutMs = 300000

// LoadOptions are the runtime's limits that load-time rules check against.
type LoadOptions struct {
	// MaxTimeoutMs is the largest timeoutMs a manifest may set; 0 means
	// DefaultMaxTimeoutMs.
	MaxTimeoutMs int
	// RefuseFilesystemHandlers refuses a codeArtifactRef of kind
	// "filesystem" (a path on the author's disk), as the definition says
	// production servers should: serve sets it. False accepts one with a
	// warning, for validate and the CLI on an author's machine.
	RefuseFilesystemHandlers bool
	// StdioCommands, when StdioAllowList is set, are the commands (exact
	// absolute paths) an mcp+stdio endpoint may start: starting a command
	// a manifest names is code execution, which serve allows only for the
	// commands its operator names (--allow-stdio). Without StdioAllowList
	// any absolute command loads (validate, an author's machine).
	StdioCommands  []string
	StdioAllowList bool
}

// Loader loads manifests with a registry and options. The zero value uses
// DefaultRegistry and the default options.
type Loader struct {
	Registry *Registry
	Options  LoadOptions
	// TracerProvider makes the span of each Invoke of the tools it loads
	// ("execute_tool <id>", a child of the span in the call's context);
	// nil means otel's global provider, which records nothing until a
	// program sets one.
	TracerProvider trace.TracerProvider
}

// Load parses, checks and synthesizes a manifest with the zero Loader.
func Load(src []byte) (*Tool, error) {
	var l Loader
	return l.Load(src)
}

// Load parses src strictly, checks every load-time rule and, when the manifest
// has a spec, synthesizes its handler. On any error it returns a *Error with
// code invalid-tool-definition (or invalid-schema when only the input or
// output schemas are at fault) whose Problems list every error and warning.
// A loaded tool keeps its warnings: Tool.Warnings.
func (l *Loader) Load(src []byte) (*Tool, error) {
	return l.load(src, nil)
}

// load is Load, with the schemas Check has seen compile.
func (l *Loader) load(src []byte, seen *CheckedSchemas) (*Tool, error) {
	reg := l.Registry
	if reg == nil {
		reg = defaultRegistry
	}
	opts := l.Options
	if opts.MaxTimeoutMs <= 0 {
		opts.MaxTimeoutMs = DefaultMaxTimeoutMs
	}
	var ps Problems
	m, c, handler := load(src, reg, opts, seen, &ps)
	if ps.HasErrors() {
		return nil, loadError(m, &ps)
	}
	return &Tool{manifest: m, warnings: ps.List(), needsApproval: needsApproval(m), input: c.input, output: c.output, handler: handler,
		tracer: newTracer(l.TracerProvider), spanName: "execute_tool " + m.ID}, nil
}

func loadError(m *Manifest, ps *Problems) *Error {
	list := ps.List()
	code := CodeInvalidToolDefinition
	nerr := 0
	for _, p := range list {
		if p.Severity == SeverityError {
			nerr++
		}
	}
	if nerr == ps.compileErrs {
		code = CodeInvalidSchema
	}
	id := ""
	if m != nil {
		id = m.ID
	}
	msgs := make([]string, 0, nerr)
	for _, p := range list[:nerr] {
		msgs = append(msgs, p.String())
	}
	what := "tool definition"
	if id != "" {
		what = fmt.Sprintf("tool definition %q", id)
	}
	return &Error{
		Code:     code,
		ToolID:   id,
		Message:  fmt.Sprintf("invalid %s: %s", what, strings.Join(msgs, "; ")),
		Problems: list,
	}
}

// checkSpecSchema checks the spec against its kind's schema, when the
// kind's synthesizer offers one.
func checkSpecSchema(doc any, reg *Registry, ps *Problems) {
	top, _ := doc.(map[string]any)
	spec, _ := top["spec"].(map[string]any)
	kind, _ := spec["kind"].(string)
	if kind == "" {
		return
	}
	sch := reg.specSchema(kind)
	if sch == nil {
		return
	}
	if err := sch.Validate(spec); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			schemaProblemsAt("spec", sch, ve, ps)
		} else {
			ps.schemaError("spec", err.Error())
		}
	}
}

// compiled holds a manifest's compiled input and output schemas.
type compiled struct {
	input, output *valueSchema
}

func load(src []byte, reg *Registry, opts LoadOptions, seen *CheckedSchemas, ps *Problems) (*Manifest, compiled, Handler) {
	var c compiled
	doc, ok := parseDocument(src, ps)
	if !ok {
		return nil, c, nil
	}
	if err := toolSchema().Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			schemaProblems(ve, ps)
		} else {
			ps.schemaError("", err.Error())
		}
	}
	checkSpecSchema(doc, reg, ps)
	m := &Manifest{}
	// Lenient on purpose: the schema has reported every shape problem; decode
	// what fits so that the other rules can still run.
	_ = json.Unmarshal(src, m)
	checkManifest(m, ps, opts)
	mcp := m.Transport == "mcp"
	if len(m.Input) > 0 && !ps.SchemaRefused("input") {
		c.input = seen.compile(m.Input, "input", mcp, ps)
	}
	if len(m.Output) > 0 && !ps.SchemaRefused("output") {
		c.output = seen.compile(m.Output, "output", mcp, ps)
	}
	if m.NeedsSpec != nil {
		for _, group := range []struct {
			name string
			m    map[string]json.RawMessage
		}{{"env", m.NeedsSpec.Env}, {"secrets", m.NeedsSpec.Secrets}} {
			for _, k := range slices.Sorted(maps.Keys(group.m)) {
				p := JoinPath(JoinPath("needsSpec", group.name), k)
				if !ps.SchemaRefused(p) {
					compileSchema(group.m[k], p, mcp, ps)
				}
				if group.name == "env" {
					if d, ok := defaultOf(group.m[k]); ok && (len(d) == 0 || d[0] != '"') {
						ps.Error(JoinPath(p, "default"), "an env default must be a string: quote it")
					}
				}
			}
		}
	}
	b := &Build{Manifest: m, Options: opts, Problems: ps, StreamsOutput: c.output.streams()}
	if m.Transport == "mcp" && m.MCPEndpoint != "" {
		b.Endpoint, _ = ParseMCPEndpoint(m.MCPEndpoint) // checkTransport reported an error
	}
	if m.Spec == nil && b.Endpoint != nil {
		// A remote MCP server's tool with nothing more to say: the "mcp"
		// kind's synthesizer, when one is registered, makes its client.
		if s, ok := reg.Lookup(KindMCP); ok && !ps.HasErrors() {
			return m, c, s.Synthesize(b)
		}
		return m, c, nil
	}
	if m.Spec == nil || ps.SchemaRefused("spec.kind") {
		return m, c, nil
	}
	s, ok := reg.Lookup(m.Spec.Kind)
	if !ok {
		kinds := reg.Kinds()
		ps.Error("spec.kind", fmt.Sprintf("unknown kind %q: registered kinds are %s", m.Spec.Kind, quoteList(kinds)))
		return m, c, nil
	}
	return m, c, s.Synthesize(b)
}

// KindMCP is the spec kind of a tool served by a remote MCP server
// (transport "mcp" with an mcpEndpoint): a manifest may write a spec of
// this kind (its credential, its timeout), or none, and the registry's
// synthesizer of the kind (package mcpremote's) makes the client that
// calls the remote tool. Without one registered, such a tool loads and
// its calls fail saying so.
const KindMCP = "mcp"

func defaultOf(raw json.RawMessage) (json.RawMessage, bool) {
	var s struct {
		Default json.RawMessage `json:"default"`
	}
	if json.Unmarshal(raw, &s) != nil || s.Default == nil {
		return nil, false
	}
	return s.Default, true
}

func quoteList(ss []string) string {
	if len(ss) == 0 {
		return "(none: import a package that registers one, such as httpspec)"
	}
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// MaxIDLength bounds a tool's id: MCP's limit for a tool name.
const MaxIDLength = 128

// checkID refuses an id that could not be served as it is everywhere a tool
// is named: an MCP tool name ([A-Za-z0-9._-], at most 128), a URL path
// segment, a log field, a console page. It starts with a letter or digit.
func checkID(id string, ps *Problems) {
	if id == "" {
		return // the schema's minLength says so
	}
	if len(id) > MaxIDLength {
		ps.Error("id", fmt.Sprintf("is %d bytes long: keep it to %d (MCP's limit for a tool name)", len(id), MaxIDLength))
		return
	}
	for i, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || i > 0 && (r == '.' || r == '_' || r == '-')
		if !ok {
			what := fmt.Sprintf("%q", r)
			if i == 0 {
				what += " first"
			}
			ps.Error("id", fmt.Sprintf("holds %s at byte %d: an id is letters, digits, '.', '_' and '-' (starting with a letter or digit), as MCP names tools, e.g. acme.get-invoice", what, i))
			return
		}
	}
}

// checkManifest runs the rules that hold for every kind.
func checkManifest(m *Manifest, ps *Problems, opts LoadOptions) {
	checkID(m.ID, ps)
	if m.Spec != nil && m.CodeArtifactRef != nil {
		ps.Error("spec", "spec and codeArtifactRef are mutually exclusive: keep the declarative spec or the handler artifact, not both")
	}
	if m.Pauses {
		switch {
		case m.Spec != nil:
			ps.Error("pauses", "only a pack tool with a handler can pause, not one with a declarative spec: remove pauses or the spec")
		case m.Transport == "mcp":
			ps.Error("pauses", "only a pack tool with a handler can pause, not an MCP server's tool (transport: \"mcp\"): remove pauses")
		case m.CodeArtifactRef == nil:
			ps.Error("pauses", "only a pack tool with a handler can pause, and this one has none: add its codeArtifactRef, or remove pauses")
		}
	}
	if a := m.CodeArtifactRef; a != nil && a.Kind == "filesystem" {
		if opts.RefuseFilesystemHandlers {
			ps.Error("codeArtifactRef.kind", "\"filesystem\" names a file on the author's disk, which a production server does not load: publish the handler as an oci artifact")
		} else {
			ps.Warn("codeArtifactRef.kind", "\"filesystem\" is for local development: httptools serve refuses it; publish the handler as an oci artifact")
		}
	}
	checkTransport(m, ps, opts)
	if m.Spec != nil && m.Sandbox != "" && m.Sandbox != "none" {
		// A declarative call runs in the service's process: what isolates
		// it is the fetch policy, not a sandbox around a handler.
		ps.Warn("sandbox", fmt.Sprintf("%q is not enforced on a declarative call, which has no handler to isolate: what holds instead is the SSRF guard, the network allowlist, the memory cap (limits.memMB) and the timeout (spec.timeoutMs)", m.Sandbox))
	}
}

// CheckJSON checks a document the way manifests are checked before their
// schema: one well-formed JSON value, no member named twice at any depth, no
// deeper than jsoncheck's document limit (512). It returns the problem with
// its field path, or nil. The project's other formats (apps.json, OpenAPI
// documents in JSON) use it.
func CheckJSON(src []byte) []Problem {
	var ps Problems
	if _, ok := parseDocument(src, &ps); ok {
		return nil
	}
	return ps.List()
}

// parseDocument reads a document the project is given (a manifest, a case
// file) for the schema validator, after jsoncheck: a member named twice is
// an error at its field path (a JSON reader would take either copy), and so
// is nesting over jsoncheck.MaxDocumentDepth.
func parseDocument(src []byte, ps *Problems) (any, bool) {
	doc, err := jsoncheck.Decode(context.Background(), src, jsoncheck.MaxDocumentDepth, jsoncheck.Options{})
	if err == nil {
		return doc, true
	}
	var je *jsoncheck.Error
	if !errors.As(err, &je) {
		ps.schemaError("", "is not valid JSON: "+err.Error())
		return nil, false
	}
	path := joinLocation("", je.Tokens())
	switch je.Kind {
	case jsoncheck.Duplicate:
		ps.schemaError(JoinPath(path, je.Name), "is given twice in one object: keep one (readers disagree on which copy wins)")
	case jsoncheck.TooDeep:
		ps.schemaError(path, fmt.Sprintf("nests deeper than %d levels: flatten it, or move shared parts under $defs", je.Limit))
	default:
		ps.schemaError("", "is not valid JSON: "+lineColumn(src, je.Offset)+je.Detail())
	}
	return nil, false
}

// lineColumn words a byte offset as "line L, column C: ".
func lineColumn(src []byte, off int64) string {
	line, col := 1, 1
	for _, c := range src[:max(0, min(int(off), len(src)))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d: ", line, col)
}

// ManifestFiles lists the manifests below dir: every *.json file except
// *.cases.json (test cases), sorted. Names starting with a dot are left out,
// folders with all below them: a ConfigMap's ..data holds what its links
// beside it name once more.
func ManifestFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			// Hidden: a Kubernetes ConfigMap's ..data and ..<timestamp>
			// folders (the manifests are the symbolic links beside
			// them), .git.
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".cases.json") {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// checkTransport applies the rules of transport and mcpEndpoint.
func checkTransport(m *Manifest, ps *Problems, opts LoadOptions) {
	if m.MCPEndpoint != "" {
		ep, err := ParseMCPEndpoint(m.MCPEndpoint)
		switch {
		case err != nil:
			ps.Error("mcpEndpoint", err.Error())
		case ep.Transport == "stdio" && opts.StdioAllowList && !slices.Contains(opts.StdioCommands, ep.Command[0]):
			ps.Error("mcpEndpoint", fmt.Sprintf("starts %s, which the operator has not allowed: a command a manifest names runs on the service's machine; allow it with --allow-stdio %s (serve and mcp take it)", ep.Command[0], ep.Command[0]))
		}
	}
	switch {
	case m.Transport == "mcp" && m.Spec != nil && m.Spec.Kind != KindMCP:
		// The spec says what the call does; httptools runs it, and serves
		// it over MCP as every tool.
		msg := "with a declarative spec: httptools runs the spec itself (and serves the tool over MCP, as every tool)"
		if m.MCPEndpoint != "" {
			msg += "; mcpEndpoint is not called: remove it, or the spec to call the remote tool"
		}
		ps.Warn("transport", msg)
	case m.Spec != nil && m.Spec.Kind == KindMCP && (m.Transport != "mcp" || m.MCPEndpoint == ""):
		ps.Error("spec.kind", "\"mcp\" calls a remote MCP server's tool: set transport to \"mcp\" and mcpEndpoint to the server (mcp+http://HOST/PATH, mcp+sse://HOST/PATH or mcp+stdio:///ABSOLUTE/COMMAND)")
	case m.Transport == "mcp" && m.MCPEndpoint == "" && m.CodeArtifactRef == nil:
		ps.Error("mcpEndpoint", "is required with transport \"mcp\" and no spec: name the server, mcp+http://HOST/PATH, mcp+sse://HOST/PATH or mcp+stdio:///ABSOLUTE/COMMAND")
	case m.MCPEndpoint != "" && m.Transport != "mcp" && m.Transport != "auto" && m.Transport != "":
		ps.Error("mcpEndpoint", fmt.Sprintf("is given with transport %q: an endpoint is for transport \"mcp\" (or \"auto\")", m.Transport))
	}
}
