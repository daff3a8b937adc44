package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// MCP 2026-07-28 on the fast path (bench/run.sh, row "mcp-2026": without
// it such a request cost 3.7–4.6× REST's CPU, BENCHMARKS.md). From that
// version a request carries its own protocol version, client and
// capabilities in params._meta (SEP-2575) and names its method (and, for
// tools/call, its tool) in the Mcp-Method and Mcp-Name headers; there is
// no session. A result says "resultType": "complete" and carries the
// server's identity in its _meta. The fast path reads that much of the
// specification itself, through the SDK's exported types, and leaves
// anything else to the SDK: a _meta with more than the three members, a
// call that may be answered input_required (mayAsk: a client that answers
// elicitations calling a tool that can ask it something, elicit.go), a
// retry carrying answers, a tool whose schema binds arguments to headers
// (x-mcp-header).

// modernVersion is the first protocol version of per-request metadata.
const modernVersion = "2026-07-28"

// DefaultListTTL is how long an MCP client may keep a tools/list (its
// ttlMs) before listing again: five minutes. The list only grows stale
// when a reload, a policy or a toolset changes what a caller sees, and a
// stale list is safe — every call is decided again by the gate, and a
// tool the caller may no longer see is refused as unknown — so the TTL
// only bounds how long a new tool stays unseen. Five minutes is a
// conversation's few turns: clients stop listing every turn, and an
// operator's change reaches every client within that.
const DefaultListTTL = 5 * time.Minute

// listTTL is the server's tools/list TTL (Config.ListTTL).
func (s *Server) listTTL() time.Duration {
	if s.cfg.ListTTL > 0 {
		return s.cfg.ListTTL
	}
	return DefaultListTTL
}

// mcpCacheable decides the cache hints of every MCP result that carries
// them, on the SDK's path (ServerOptions.SetCacheable) and the fast path
// alike: a tools/list depends on who asks (tenant, key, person, policy,
// toolset) and is "private"; server/discover is the same for everyone and
// "public". Both may be kept for the list TTL.
func (s *Server) mcpCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	c.TTLMs = int(s.listTTL().Milliseconds())
	c.CacheScope = "public"
	if _, ok := req.(*mcp.ListToolsRequest); ok {
		c.CacheScope = "private"
	}
}

// listCacheHint is the JSON of a tools/list result's cache hints, as
// mcpCacheable decides them: "ttlMs":…,"cacheScope":….
func (s *Server) listCacheHint() []byte {
	var c mcp.Cacheable
	s.mcpCacheable(context.Background(), &mcp.ListToolsRequest{}, &c)
	b, _ := json.Marshal(c)
	return b[1 : len(b)-1]
}

// mcpImplementation is the server's identity on MCP.
func mcpImplementation() *mcp.Implementation {
	return &mcp.Implementation{Name: "httptools", Version: fetch.Version}
}

// httpMCPOptions are the options of the MCP server at the HTTP door: it
// is stateless, and advertises tools.listChanged for 2026-07-28's
// subscriptions/listen (mcplisten.go; an older version's initialize
// answers without it: withoutListChanged).
func (s *Server) httpMCPOptions() *mcp.ServerOptions {
	return &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		SetCacheable: s.mcpCacheable, PageSize: listPageSize}
}

// serverInfoMeta is the _meta member of a 2026-07-28 result that names
// the server, without its braces.
var serverInfoMeta = sync.OnceValue(func() []byte {
	b, _ := json.Marshal(mcpImplementation())
	return append([]byte(`"io.modelcontextprotocol/serverInfo":`), b...)
})

// modernRequest says a request of protocol version is one the fast path
// answers: before 2026-07-28, one without _meta, or a tools/call whose
// _meta is trace context only (fastMetaKnown); from it, one whose
// Mcp-Method header is method (and Mcp-Name, for a tools/call, name) and
// whose _meta is the request's version, client and capabilities, read as
// the SDK reads them, and trace context.
func modernRequest(r *http.Request, version, method, name string, meta gjson.Result) bool {
	if version < modernVersion {
		return !meta.Exists() || method == "tools/call" && fastMetaKnown(meta)
	}
	if r.Header.Get("Mcp-Method") != method || method == "tools/call" && r.Header.Get("Mcp-Name") != name {
		return false
	}
	if !meta.IsObject() {
		return false
	}
	ok, seenVersion, seenCaps := true, false, false
	meta.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case mcp.MetaKeyProtocolVersion:
			seenVersion = v.Type == gjson.String && v.Str == version
			ok = seenVersion
		case mcp.MetaKeyClientInfo:
			ok = v.IsObject() && (allStrings(v) || json.Unmarshal([]byte(v.Raw), new(mcp.Implementation)) == nil)
		case mcp.MetaKeyClientCapabilities:
			// As the SDK reads them (roots at the top, 2026-07-28's
			// place). A client that answers elicitations is served here
			// too, unless its call may ask it something (mayAsk).
			var caps struct {
				mcp.ClientCapabilities
				// mcp.RootCapabilities' shape (roots are deprecated in
				// 2026-07-28, and the name with them).
				Roots *struct {
					ListChanged bool `json:"listChanged,omitempty"`
				} `json:"roots,omitempty"`
			}
			seenCaps = v.IsObject() && (v.Raw == "{}" || json.Unmarshal([]byte(v.Raw), &caps) == nil)
			ok = seenCaps
		case "traceparent", "tracestate", "baggage":
			ok = method == "tools/call" && v.Type == gjson.String // mcptrace.go
		default:
			ok = false
		}
		return ok
	})
	return ok && seenVersion && seenCaps
}

// allStrings says every member of the object v is a string (a client's
// identity usually is: it then decodes as an mcp.Implementation).
func allStrings(v gjson.Result) bool {
	ok := true
	v.ForEach(func(_, m gjson.Result) bool {
		ok = m.Type == gjson.String
		return ok
	})
	return ok
}

// serveMCPDiscover answers a 2026-07-28 server/discover (params only the
// request's _meta) and reports true, or leaves it to the SDK.
func (s *Server) serveMCPDiscover(w http.ResponseWriter, r *http.Request, version string, idJSON []byte, params gjson.Result) bool {
	if version < modernVersion || !params.IsObject() {
		return false
	}
	var meta gjson.Result
	ok := true
	params.ForEach(func(k, v gjson.Result) bool {
		ok = k.String() == "_meta"
		meta = v
		return ok
	})
	if !ok || !modernRequest(r, version, "server/discover", "", meta) {
		return false
	}
	result := s.discoverResult()
	if result == nil {
		return false
	}
	out := make([]byte, 0, 40+len(idJSON)+len(result))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, idJSON...)
	out = append(out, `,"result":`...)
	out = append(out, result...)
	out = append(out, "}\n"...)
	if a := accessOf(r.Context()); a != nil {
		a.rpc, a.outcome, a.outcomeKnown = "server/discover", "", true
	}
	s.writeFastHead(w, http.StatusOK, len(out))
	w.Write(out)
	return true
}

// discoverResult is the server/discover result: the SDK's own answer
// (its capabilities, protocol versions and cache hints), asked of its
// handler once and kept; nil when it did not answer, and the SDK then
// answers every discover itself.
func (s *Server) discoverResult() []byte {
	s.discoverOnce.Do(func() {
		body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"` + modernVersion +
			`","` + mcp.MetaKeyClientCapabilities + `":{}}}}`
		req, err := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", modernVersion)
		req.Header.Set("Mcp-Method", "server/discover")
		rec := &recorder{header: http.Header{}}
		s.mcpHandler().ServeHTTP(rec, req)
		if res := gjson.GetBytes(rec.body.Bytes(), "result"); rec.status == http.StatusOK && res.IsObject() {
			s.discover = []byte(res.Raw)
		}
	})
	return s.discover
}

// recorder is the ResponseWriter discoverResult hands the SDK.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// mayAsk says whether a 2026-07-28 call of tool whose _meta is meta may be
// answered input_required, which the SDK's handler answers: its client
// answers elicitations and the tool can ask one of the two questions a
// call asks (elicit.go) — the approval of an unattended run, or the
// connection of the call's person.
func (s *Server) mayAsk(tool *synth.Tool, meta gjson.Result) bool {
	if !tool.NeedsApproval() && (s.cfg.Manager == nil || !asksForConnection(tool)) {
		return false
	}
	elicits := false
	meta.ForEach(func(k, v gjson.Result) bool {
		if k.String() == mcp.MetaKeyClientCapabilities {
			v.ForEach(func(c, _ gjson.Result) bool {
				elicits = c.String() == "elicitation"
				return !elicits
			})
		}
		return !elicits
	})
	return elicits
}

// asksForConnection says whether tool acts with its person's connection,
// which a call may ask the person to connect.
func asksForConnection(tool *synth.Tool) bool {
	_, ok := personConnection(tool)
	return ok
}
