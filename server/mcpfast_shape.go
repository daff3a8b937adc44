package server

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// The transport's rules the fast path meets, and where each comes from.
// The SDK's streamable handler (go-sdk mcp/streamable.go, ServeHTTP and
// serveStateless) refuses a request before any JSON-RPC is read when its
// method is not POST, its Content-Type is not application/json, its
// Accept does not take both application/json and text/event-stream, its
// Host is not a loopback name on a loopback listener, its
// MCP-Protocol-Version is one its server does not serve, or (when an
// option sets it) its origin is another site. The SDK exports none of
// those checks but the list of versions, so the fast path does not copy
// them: it answers only requests of a small shape written down here
// (fastShapeCandidates), and each value of that shape is one the SDK's
// own handler was seen to accept (probeShapes asks it once, with a ping).
// Anything else goes to the SDK. A rule the SDK adds can then only make
// the fast path hand over more (a probed value it refuses leaves the
// whitelist), never answer where the SDK would refuse.
//
//   - method: POST only (the SDK serves nothing else statelessly).
//   - MCP-Protocol-Version: fastVersions, derived from
//     mcp.SupportedProtocolVersions(), and of those the ones the handler
//     accepted in the probe (an option that narrows them narrows these).
//   - Content-Type and Accept: one header line, exactly one of
//     fastShapeCandidates' values, and accepted in the probe.
//   - Host: any, on a listener that is not loopback (the SDK checks
//     nothing there, and the probe confirms it for one such host); on a
//     loopback listener, only localhost, 127.0.0.1 or [::1], with or
//     without a port, as the probe saw them accepted.
//   - Origin and Sec-Fetch-Site: absent (what a cross-origin check reads;
//     the SDK's is off unless an option sets it, so a browser's request
//     is left to it either way).

// fastShapeCandidates are the header values the fast path may answer: the
// ones MCP clients send (the Go, TypeScript and Python SDKs' own), each
// kept only if the SDK's handler accepts it (probeShapes).
var fastShapeCandidates = struct {
	contentTypes, accepts, loopbackHosts []string
}{
	contentTypes:  []string{"application/json", "application/json; charset=utf-8", "application/json;charset=utf-8"},
	accepts:       []string{"application/json, text/event-stream", "text/event-stream, application/json", "application/json,text/event-stream", "*/*"},
	loopbackHosts: []string{"localhost", "127.0.0.1", "[::1]"},
}

// fastShapes are the values of fastShapeCandidates the SDK's handler
// accepted.
type fastShapes struct {
	versions, contentTypes, accepts, loopbackHosts, loopbackHostPorts map[string]bool
	anyHost                                                           bool // a Host on a listener that is not loopback
	// header is the SDK's header of a JSON answer (Content-Type,
	// Cache-Control), as it wrote it to the probe: the fast path's
	// answers carry the same.
	header http.Header
}

// probedShapes is the probe's answer, asked once per process of the first
// server's handler (every server's handler is built from the same
// options: mcpHandler).
var probedShapes struct {
	once   sync.Once
	shapes fastShapes
}

// shapes is what the SDK's handler accepted of fastShapeCandidates.
func (s *Server) shapes() *fastShapes {
	probedShapes.once.Do(func() { probedShapes.shapes = probeShapes(s.mcpHandler()) })
	return &probedShapes.shapes
}

// fastShape says the request's transport is of the shape the fast path
// answers: every rule of the SDK's handler met by a value it accepted.
func (s *Server) fastShape(r *http.Request, proto string) bool {
	if r.Method != http.MethodPost || !fastVersions[proto] {
		return false
	}
	h := r.Header
	if len(h["Content-Type"]) != 1 || len(h["Accept"]) != 1 || h["Origin"] != nil || h["Sec-Fetch-Site"] != nil {
		return false
	}
	sh := s.shapes()
	return sh.versions[proto] && sh.contentTypes[h["Content-Type"][0]] && sh.accepts[h["Accept"][0]] && sh.hostAllowed(r)
}

// hostAllowed says the request's Host is one the SDK's DNS-rebinding
// check was seen to accept for its listener.
func (sh *fastShapes) hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	if ap, err := netip.ParseAddrPort(local.String()); err != nil || !ap.Addr().IsLoopback() {
		return err == nil && sh.anyHost
	}
	host, port, found := strings.Cut(r.Host, "]:")
	if found {
		host += "]"
	} else if i := strings.LastIndexByte(r.Host, ':'); i >= 0 && !strings.HasPrefix(r.Host, "[") {
		host, port, found = r.Host[:i], r.Host[i+1:], true
	}
	if !found {
		return sh.loopbackHosts[host]
	}
	return sh.loopbackHostPorts[host] && port != "" && strings.Trim(port, "0123456789") == ""
}

// probeShapes asks h, the SDK's handler, a ping in each shape of
// fastShapeCandidates (one value changed from a plain request at a time),
// and keeps the values it answered.
func probeShapes(h http.Handler) fastShapes {
	sh := fastShapes{versions: map[string]bool{}, contentTypes: map[string]bool{}, accepts: map[string]bool{},
		loopbackHosts: map[string]bool{}, loopbackHostPorts: map[string]bool{}}
	c := fastShapeCandidates
	plain := probe{version: "", contentType: c.contentTypes[0], accept: c.accepts[0], local: "192.0.2.1:443", host: "mcp.example.com"}
	for v := range fastVersions {
		p := plain
		p.version = v
		sh.versions[v] = p.accepted(h)
	}
	for _, ct := range c.contentTypes {
		p := plain
		p.contentType = ct
		sh.contentTypes[ct] = p.accepted(h)
	}
	for _, a := range c.accepts {
		p := plain
		p.accept = a
		sh.accepts[a] = p.accepted(h)
	}
	sh.anyHost, sh.header = plain.answer(h)
	for _, host := range c.loopbackHosts {
		p := plain
		p.local, p.host = "127.0.0.1:8080", host
		sh.loopbackHosts[host] = p.accepted(h)
		p.host = host + ":8080"
		sh.loopbackHostPorts[host] = p.accepted(h)
	}
	return sh
}

// probe is one request of probeShapes.
type probe struct {
	version, contentType, accept string
	local, host                  string // the listener's address, the Host
}

// accepted sends h a request of the probe's shape and says it answered
// a result.
func (p probe) accepted(h http.Handler) bool {
	ok, _ := p.answer(h)
	return ok
}

// answer sends h a request of the probe's shape — a ping, or from
// 2026-07-28 (which has no ping) a server/discover — and says it
// answered a result, with the header of that answer.
func (p probe) answer(h http.Handler) (bool, http.Header) {
	method, params := "ping", ""
	if p.version >= modernVersion {
		method = "server/discover"
		params = `,"params":{"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"` + p.version + `","` + mcp.MetaKeyClientCapabilities + `":{}}}`
	}
	req, err := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`"`+params+`}`))
	if err != nil {
		return false, nil
	}
	local, err := net.ResolveTCPAddr("tcp", p.local)
	if err != nil {
		return false, nil
	}
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(local)))
	req.Host = p.host
	req.Header.Set("Content-Type", p.contentType)
	req.Header.Set("Accept", p.accept)
	if p.version != "" {
		req.Header.Set("MCP-Protocol-Version", p.version)
	}
	if p.version >= modernVersion {
		req.Header.Set("Mcp-Method", method)
	}
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	rec.header.Del("Content-Length") // each answer's own
	return rec.status == http.StatusOK && gjson.GetBytes(rec.body.Bytes(), "result").IsObject(), rec.header
}

// fastVersions are the protocol versions whose tools/call and tools/list
// the fast path reads, derived from the SDK's own list so that a version
// the SDK stops serving leaves the fast path with it: every version of the
// handshake era (before 2026-07-28: the same request, the session's
// version in its header) and 2026-07-28 itself (read by modernRequest).
// "" is a request without the header, which the SDK takes as 2025-03-26
// (ephemeralConnectOpts): read only while the SDK serves that version.
// A version after 2026-07-28 has a wire format this code has not read, so
// it goes to the SDK until modernRequest learns it
// (TestFastPathKnowsTheSDKsVersions fails on the SDK upgrade that brings
// one, rather than letting it fall silently to the slow path).
var fastVersions = readableVersions(mcp.SupportedProtocolVersions())

func readableVersions(sdk []string) map[string]bool {
	m := map[string]bool{"": slices.Contains(sdk, "2025-03-26")}
	for _, v := range sdk {
		if v <= modernVersion {
			m[v] = true
		}
	}
	return m
}
