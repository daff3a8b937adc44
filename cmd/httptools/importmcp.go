package main

// import mcp: one manifest per tool a remote MCP server lists, so that a
// pack author pins what a model may call. Each manifest carries the
// remote tool as the server listed it (metadata.mcpTool), which
// validate --remote compares the server's listing with.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/mcpauth"
	"github.com/httptools/httptools/mcpremote"
	"github.com/httptools/httptools/openapi"
	"github.com/httptools/httptools/synth"
)

// mcpImport is what an import of one server writes into every manifest.
type mcpImport struct {
	endpoint string // mcp+http://HOST/PATH, mcp+sse://… or mcp+stdio://…, no fragment
	host     string // "" for a stdio server
	where    string // the host, or the command, for messages
	network  *synth.Network
	prefix   string
	auth     *httpspec.Authorization // nil: the server needs none
	need     string                  // --connection: the connection the manifests send, "" for none
	app      string                  // the server's discovered app, mcp:URL, for need
	scopes   []string                // the connection's permissions: the scopes the listing was authorized with
	oauth    *oauthFlags             // how a server behind OAuth is authorized to list
}

func importMCP(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("import mcp", "import mcp URL [--out DIR] [--prefix P] [--bearer-secret ENV/NAME] [--connection NAME] [--allow-cidr CIDR]… [--mcp-plain-http HOST]… [--oauth-client-id ID --oauth-client-secret-env VAR] [--oauth-client-metadata-url URL] [--apps FILE]",
		`List the tools of a remote MCP server (every page of tools/list) and write one manifest per tool: printed as a JSON
array, or one ID.json per tool with --out. URL is mcp+http://HOST/PATH (streamable HTTP over https), mcp+sse://HOST/PATH,
an https:// URL (streamable HTTP), or mcp+stdio:///ABSOLUTE/COMMAND ARG… (started to list, as validate --remote does).
Each manifest names the remote tool in its endpoint's fragment and pins what a model reads of it (metadata.mcpTool),
which validate --remote compares with the server's listing. A tool that cannot be written is skipped with its reason;
the import ends with "N tools: M written, K skipped (reasons: …)". A server that answers 401 is authorized as
httptools call does (its OAuth discovered; the authorization URL followed, or printed for a person to open), and the
manifests then send a connection of the server's own OAuth (--connection, default "server"), with the scopes granted;
--bearer-secret lists with a token you hold instead.`)
	out := fs.String("out", "", "write one ID.json per tool into this folder (default: print a JSON array)")
	prefix := fs.String("prefix", "", "tool id prefix (default: from the server's host)")
	bearer := fs.String("bearer-secret", "", "list with the token in secret ENV/NAME ($HTTPTOOLS_SECRET_<ENV>_<NAME>) as a bearer, and write it as the tools' authorization")
	conn := fs.String("connection", "", "write the tools' authorization as this connection, of the server's own OAuth (app mcp:URL, which serve discovers); its scopes to fill in")
	var allow cidrFlags
	fs.Var(&allow, "allow-cidr", "let the listing reach this range despite the SSRF guard, e.g. 127.0.0.0/8 (repeatable)")
	var plain stringsFlag
	fs.Var(&plain, "mcp-plain-http", "reach this host over plain http (repeatable)")
	var oauth oauthFlags
	oauth.register(fs)
	pos, rc, ok := fs.parse(args, stdout, stderr)
	if !ok {
		return rc
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "httptools import mcp: name one server, mcp+http://HOST/PATH")
		return 2
	}
	imp, err := newMCPImport(pos[0], *prefix, *bearer, *conn, plain)
	if err != nil {
		fmt.Fprintln(stderr, "httptools import mcp:", err)
		return 2
	}
	imp.oauth = &oauth
	tools, err := imp.list(allow, plain, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "httptools import mcp:", err)
		return 1
	}
	ms, skipped := imp.manifests(tools)
	for _, s := range skipped {
		fmt.Fprintln(stderr, "warning:", s)
	}
	for _, t := range tools {
		if strings.TrimSpace(t.Description) == "" && !slices.ContainsFunc(skipped, func(k skip) bool { return k.tool == t.Name }) {
			fmt.Fprintf(stderr, "warning: tool %q: the server gives no description, so the manifest's is its title or name: write what a model should know of it\n", t.Name)
		}
	}
	if imp.need != "" {
		fmt.Fprintf(stderr, "authorization: every tool sends connection %q of app %q, the server's own OAuth, which serve discovers (nothing in apps.json): list the scopes its calls need as needsSpec.connections.%s.permissions\n", imp.need, imp.app, imp.need)
	}
	fmt.Fprintln(stderr, importSummary(len(tools), len(ms), skipped))
	if len(ms) == 0 {
		fmt.Fprintln(stderr, "httptools import mcp: no tool could be written")
		return 1
	}
	if err := writeManifests(*out, ms, stdout); err != nil {
		fmt.Fprintln(stderr, "httptools import mcp:", err)
		return 1
	}
	return 0
}

// newMCPImport reads the command line: the server, the prefix and the
// credential.
func newMCPImport(raw, prefix, bearer, conn string, plain []string) (*mcpImport, error) {
	ep, err := importEndpoint(raw, plain)
	if err != nil {
		return nil, err
	}
	parsed, err := synth.ParseMCPEndpoint(ep)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", raw, err)
	}
	imp := &mcpImport{endpoint: ep, prefix: prefix}
	if parsed.Transport == "stdio" {
		// A process of this machine: no host to allow, no credential.
		imp.where = parsed.Command[0]
		if bearer != "" || conn != "" {
			return nil, errors.New("a stdio server gets no credential: remove --bearer-secret and --connection")
		}
		if imp.prefix == "" {
			imp.prefix = idPart(filepath.Base(imp.where))
		}
	} else {
		imp.host = parsed.URL.Hostname()
		imp.where = imp.host
		imp.network = &synth.Network{Kind: synth.NetworkAllowlist, Hosts: []string{imp.host}}
		u := *parsed.URL // the URL a call reaches, as a discovered app names it
		if fetch.HostAllowed(plain, imp.host) {
			u.Scheme = "http"
		}
		imp.app = "mcp:" + u.String()
		if imp.prefix == "" {
			imp.prefix = hostPrefix(imp.host)
		}
	}
	if bad := idPart(imp.prefix); bad != imp.prefix {
		return nil, fmt.Errorf("--prefix %q: a prefix is letters, digits, '_' and '-', e.g. %s", prefix, bad)
	}
	if bearer != "" {
		env, name, ok := strings.Cut(bearer, "/")
		if !ok || env == "" || name == "" {
			return nil, fmt.Errorf("--bearer-secret %q: want ENV/NAME, e.g. production/ACME_TOKEN", bearer)
		}
		imp.auth = &httpspec.Authorization{Kind: httpspec.AuthBearer, SecretRef: &synth.SecretRef{EnvName: env, Name: name}}
	}
	if conn != "" {
		if idPart(conn) != conn {
			return nil, fmt.Errorf("--connection %q: a connection name is letters, digits, '_' and '-'", conn)
		}
		imp.need = conn
	}
	return imp, nil
}

// importEndpoint is raw as an mcpEndpoint without fragment: an https URL
// is streamable HTTP; an http URL too, when its host is allowed plain
// http (else the listing would go over https to a plain server).
func importEndpoint(raw string, plain []string) (string, error) {
	raw, _, _ = strings.Cut(raw, "#")
	scheme, rest, ok := strings.Cut(raw, "://")
	switch {
	case !ok:
		return "", fmt.Errorf("%q is not a URL: write mcp+http://HOST/PATH", raw)
	case scheme == "https":
		return "mcp+http://" + rest, nil
	case scheme == "mcp+stdio":
		return raw, nil // the command as written; ParseMCPEndpoint checks it
	case scheme == "http":
		u, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("%q: %w", raw, err)
		}
		if !fetch.HostAllowed(plain, u.Hostname()) {
			return "", fmt.Errorf("%q is plain http: add --mcp-plain-http %s to reach it so (the manifests need the same flag at serve), or use https", raw, u.Hostname())
		}
		return "mcp+http://" + rest, nil
	}
	return raw, nil
}

// list asks the server for its tools as validate --remote does: through
// a handler of a manifest that names the server, under the SSRF guard and
// an allowlist of the server's host.
func (imp *mcpImport) list(allow cidrFlags, plain stringsFlag, stderr io.Writer) ([]*mcp.Tool, error) {
	probe := map[string]any{
		"id": "import.list", "description": "Lists the server's tools.", "version": "1.0.0", "mutating": false,
		"transport": "mcp", "mcpEndpoint": imp.endpoint, "input": map[string]any{"type": "object"}, "output": map[string]any{},
	}
	if imp.network != nil {
		probe["network"] = imp.network
	}
	if imp.auth != nil {
		probe["spec"] = mcpremote.Spec{Kind: "mcp", Authorization: imp.auth}
	}
	src, err := json.Marshal(probe)
	if err != nil {
		return nil, err
	}
	var flow *mcpauth.Flow
	var stops []func()
	var authorizer func(*fetch.Client) mcpauth.Authorizer
	if imp.auth == nil && imp.host != "" && imp.oauth != nil {
		// A server behind OAuth is authorized as httptools call does.
		authorizer = func(client *fetch.Client) mcpauth.Authorizer {
			f, stop, err := imp.oauth.authorizer(client, plain, stderr)
			if err != nil {
				return nil
			}
			stops = append(stops, stop)
			flow = f
			return f
		}
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	rc := newRemoteCheckAuth(allow, plain, stderr, authorizer)
	defer rc.close()
	t, err := rc.loader.Load(src)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := t.Handler().(*mcpremote.Handler).Tools(ctx, synth.CallContext{Tenant: "local", Secrets: auth.Env{}})
	var se *synth.Error
	if errors.As(err, &se) && se.Reason == mcpremote.ReasonRemoteUnauthorized {
		if imp.auth == nil {
			return nil, fmt.Errorf("the server %s answered 401: it lists its tools only to a client it authorized. List them with a token you hold: --bearer-secret ENV/NAME (the token in $HTTPTOOLS_SECRET_<ENV>_<NAME>), and --connection NAME to write the manifests with an OAuth connection placeholder instead of that secret", imp.host)
		}
		return nil, fmt.Errorf("the server %s refused the token of secret %s (401): check it", imp.host, imp.auth.SecretRef)
	}
	if err != nil {
		return nil, fmt.Errorf("listing the tools of %s: %w", imp.where, err)
	}
	if flow != nil {
		if scopes, ok := flow.Granted(); ok {
			// Listed with the server's own OAuth: the manifests send a
			// connection of it, with the scopes it granted.
			if imp.need == "" {
				imp.need = "server"
			}
			imp.scopes = scopes
		}
	}
	return tools, nil
}

// skip is a remote tool import mcp did not write: reason is its class,
// for the summary; detail says more.
type skip struct {
	tool, reason, detail string
}

func (s skip) String() string {
	if s.detail == "" {
		return fmt.Sprintf("tool %q skipped: %s", s.tool, s.reason)
	}
	return fmt.Sprintf("tool %q skipped: %s: %s", s.tool, s.reason, s.detail)
}

// manifests makes a manifest of each tool, in listing order, and says
// why each other one was skipped.
func (imp *mcpImport) manifests(tools []*mcp.Tool) ([]openapi.Manifest, []skip) {
	count := map[string]int{}
	for _, t := range tools {
		count[t.Name]++
	}
	used := map[string]bool{}
	var ms []openapi.Manifest
	var skipped []skip
	for _, t := range tools {
		switch n := count[t.Name]; {
		case n < 0: // said already
			continue
		case n > 1:
			skipped = append(skipped, skip{t.Name, "listed more than once (which copy the server runs is unknown)", fmt.Sprintf("%d copies", n)})
			count[t.Name] = -1
			continue
		}
		m, sk := imp.manifest(t, uniqueID(imp.prefix, t.Name, used))
		if sk != nil {
			skipped = append(skipped, *sk)
			continue
		}
		used[m.ID] = true
		ms = append(ms, m)
	}
	return ms, skipped
}

// importedManifest is a manifest as import mcp writes it, members in the
// order a reader wants them.
type importedManifest struct {
	ID          string               `json:"id"`
	Description string               `json:"description"`
	Version     string               `json:"version"`
	Mutating    bool                 `json:"mutating"`
	Transport   string               `json:"transport"`
	MCPEndpoint string               `json:"mcpEndpoint"`
	Input       json.RawMessage      `json:"input"`
	Output      json.RawMessage      `json:"output"`
	Network     *synth.Network       `json:"network,omitempty"`
	NeedsSpec   *synth.NeedsSpec     `json:"needsSpec,omitempty"`
	Spec        *mcpremote.Spec      `json:"spec,omitempty"`
	Metadata    map[string]*mcp.Tool `json:"metadata"`
}

// manifest writes the manifest of tool t as id, refusing one that would
// not load.
func (imp *mcpImport) manifest(t *mcp.Tool, id string) (openapi.Manifest, *skip) {
	ep := imp.endpoint + "#" + t.Name
	if _, err := synth.ParseMCPEndpoint(ep); err != nil {
		return openapi.Manifest{}, &skip{t.Name, "a name an endpoint's fragment cannot hold (letters, digits, '_', '-', '.', '/', 1 to 128)", ""}
	}
	input, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		return openapi.Manifest{}, &skip{t.Name, "no input schema", ""}
	}
	output := json.RawMessage(`{}`) // no schema: structuredContent, text or content blocks, whichever the server answers
	if t.OutputSchema != nil {
		if output, err = json.Marshal(t.OutputSchema); err != nil {
			return openapi.Manifest{}, &skip{t.Name, "an output schema that is not JSON", err.Error()}
		}
	}
	m := importedManifest{ID: id, Description: describeTool(t, imp.where), Version: "1.0.0", Mutating: mutatingOf(t.Annotations),
		Transport: "mcp", MCPEndpoint: ep, Input: input, Output: output,
		Network:  imp.network,
		Metadata: map[string]*mcp.Tool{mcpremote.PinKey: t}}
	switch {
	case imp.need != "":
		m.Spec = &mcpremote.Spec{Kind: "mcp", Authorization: &httpspec.Authorization{Kind: httpspec.AuthConnection, Connection: imp.need}}
		m.NeedsSpec = &synth.NeedsSpec{Connections: map[string]synth.ConnectionNeed{imp.need: {App: imp.app, Permissions: append([]string{}, imp.scopes...), As: synth.AsPerson}}}
	case imp.auth != nil:
		m.Spec = &mcpremote.Spec{Kind: "mcp", Authorization: imp.auth}
	}
	src, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return openapi.Manifest{}, &skip{t.Name, "a listing that is not JSON", err.Error()}
	}
	src = append(src, '\n')
	if _, err := synth.Load(src); err != nil {
		return openapi.Manifest{}, &skip{t.Name, "its manifest would not load", err.Error()}
	}
	return openapi.Manifest{ID: id, JSON: src}, nil
}

// mutatingOf reads the MCP annotations as the specification's defaults
// have them: readOnlyHint is false unless said, so only a tool its server
// marks read-only changes nothing. A destructiveHint of false still
// changes things (additively), and no annotations at all is the
// defaults: mutating.
func mutatingOf(a *mcp.ToolAnnotations) bool {
	return a == nil || !a.ReadOnlyHint
}

// describeTool is the manifest's description: the server's, else its
// title, else a sentence naming the tool (a description is required).
func describeTool(t *mcp.Tool, where string) string {
	for _, d := range []string{t.Description, t.Title} {
		if strings.TrimSpace(d) != "" {
			return d
		}
	}
	if t.Annotations != nil && strings.TrimSpace(t.Annotations.Title) != "" {
		return t.Annotations.Title
	}
	return fmt.Sprintf("The tool %s of the MCP server %s, which describes it no further.", t.Name, where)
}

// maxImportedID bounds an imported id, as import openapi does: MCP
// clients and models show ids whole.
const maxImportedID = 64

// uniqueID is prefix.NAME, NAME the remote name as an id may hold it,
// within maxImportedID; when another tool took that id already (two names
// that read alike, "a b" and "a-b"), a hash of the remote name is added.
func uniqueID(prefix, name string, used map[string]bool) string {
	id := prefix + "." + idPart(name)
	if cut := cutID(id); !used[cut] {
		return cut
	}
	return withHash(id, name)
}

// cutID cuts id to maxImportedID, with a hash of the whole so that two
// long names stay apart.
func cutID(id string) string {
	if len(id) <= maxImportedID {
		return id
	}
	return withHash(id, id)
}

// withHash is id, cut where the result fits maxImportedID, then "-" and
// 8 hex digits of of's SHA-256.
func withHash(id, of string) string {
	sum := sha256.Sum256([]byte(of))
	h := "-" + hex.EncodeToString(sum[:4])
	if len(id)+len(h) > maxImportedID {
		id = strings.TrimRight(id[:maxImportedID-len(h)], "-_.")
	}
	return id + h
}

// idPart is s as a part of an id: letters, digits, '_' and '-' kept, any
// other run of characters one '-', starting and ending with a letter or
// digit; "tool" when nothing is left.
func idPart(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-_")
	if out == "" {
		return "tool"
	}
	return out
}

// hostPrefix is the id prefix of a server's host: its registrable name
// (mcp.acme.example → acme, api.githubcopilot.com → githubcopilot);
// "remote" for an address or a single name.
func hostPrefix(host string) string {
	labels := strings.Split(strings.ToLower(strings.TrimSuffix(host, ".")), ".")
	if net.ParseIP(host) != nil || len(labels) < 2 {
		return "remote"
	}
	labels = slices.DeleteFunc(labels[:len(labels)-1], func(l string) bool { return l == "mcp" || l == "api" || l == "www" })
	if len(labels) == 0 {
		return "remote"
	}
	return idPart(labels[len(labels)-1])
}

// importSummary is the last line: "N tools: M written, K skipped
// (reasons: 2 × no input schema; …)", as import openapi ends.
func importSummary(listed, written int, skipped []skip) string {
	s := fmt.Sprintf("%s: %d written, %d skipped", plural(listed, "tool"), written, len(skipped))
	if len(skipped) == 0 {
		return s
	}
	by := map[string]int{}
	for _, k := range skipped {
		by[k.reason]++
	}
	var reasons []string
	for _, r := range slices.Sorted(maps.Keys(by)) {
		reasons = append(reasons, fmt.Sprintf("%d × %s", by[r], r))
	}
	return s + " (reasons: " + strings.Join(reasons, "; ") + ")"
}
