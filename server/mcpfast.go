package server

import (
	"net/http"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/tidwall/gjson"
)

// The MCP fast path (BenchmarkMCPFastPath, BENCHMARKS.md "What the MCP
// fast path saves": a tools/call costs 2.5-4x less time and 15-22x fewer
// bytes allocated than the SDK's answer). Over stateless HTTP the Go SDK
// answers each request by connecting a fresh session to the server: it
// decodes the body three times (each decoder allocating a 32 KiB buffer),
// starts the session's goroutines and routes the message through them.
// For the one request that carries the load — a single tools/call — that
// is most of the cost. serveMCPCall answers exactly that request itself
// (and tools/list, server/discover), with the same result the SDK would
// give (a test sends each case to both); anything else, or anything
// unusual about it, is left to the SDK, which stays the reference.
//
// Where its rules come from: the transport's (method, Content-Type,
// Accept, Host, Origin, MCP-Protocol-Version) are the SDK handler's,
// met by answering only a whitelisted shape whose every value the
// handler itself accepted (mcpfast_shape.go), and the answer's headers
// are the ones the handler wrote then; the versions come from
// mcp.SupportedProtocolVersions(); 2026-07-28's request layer is read
// through the SDK's exported keys and types (mcpmodern.go); the JSON-RPC
// envelope is a whitelist too (readRPCRequest: one object of exactly the
// four members, jsoncheck-valid), so a body the SDK reads differently is
// one the fast path leaves.

// fastAnswer says what the fast path did with a request.
type fastAnswer int

const (
	fastLeft   fastAnswer = iota // not its request: the SDK's
	fastServed                   // answered
	// fastDenied: a call of a tool the caller may not see, counted as
	// denied and left to the SDK, which answers it as an unknown tool
	// (the same bytes, on every path).
	fastDenied
)

// serveMCPCall answers a stateless tools/call of a known tool, or a
// tools/list, or a server/discover, or leaves the request alone. It reads
// the request in named steps, each of which may leave it to the SDK:
// the transport's shape (fastShape), the JSON-RPC envelope
// (readRPCRequest), the call's params (readCallParams), the tool; then it
// calls the tool and writes the answer (appendCallAnswer).
func (s *Server) serveMCPCall(w http.ResponseWriter, r *http.Request, body []byte, hold *budget.Hold) fastAnswer {
	proto := r.Header.Get("MCP-Protocol-Version")
	if !s.fastShape(r, proto) {
		return fastLeft
	}
	req, ok := readRPCRequest(body)
	if !ok {
		return fastLeft
	}
	switch req.method {
	case "tools/list":
		return served(s.serveMCPList(w, r, proto, req.id, req.params))
	case "server/discover":
		return served(s.serveMCPDiscover(w, r, proto, req.id, req.params))
	case "tools/call":
	default:
		return fastLeft
	}
	call, ok := readCallParams(req.params)
	if !ok || !modernRequest(r, proto, req.method, call.name, call.meta) {
		return fastLeft
	}
	modern := proto >= modernVersion
	ts := s.Tools()
	tool, found := ts.Tool(call.name)
	if !found || modern && (ts.headerBound(call.name) || s.mayAsk(tool, call.meta)) {
		return fastLeft // the SDK's "unknown tool" error; its checks of x-mcp-header; input_required
	}
	var raw []byte
	if call.args.Exists() {
		raw = body[call.args.Index : call.args.Index+len(call.args.Raw)]
	}
	tenant, person := mcpCaller(r.Context(), r.Header)
	res, err := s.mcpCall(fastMetaTraceContext(r.Context(), call.meta), nil, tool, ts.mcpTool(tool.ID()), tenant, person, raw, hold)
	if res.denied {
		return fastDenied // nothing of it ran: the SDK answers it as it answers an unknown tool
	}
	if err == nil && !res.isError {
		// The response quotes the output once and may repeat it as
		// structured content: drawn on the memory budget first.
		if derr := s.draw(r, hold, 3*int64(len(res.output)), s.cfg.BudgetWait); derr != nil {
			res = mcpResult{errText: derr.Error(), isError: true}
		}
	}
	out, status, outcome := appendCallAnswer(make([]byte, 0, 128+len(res.errText)+3*len(res.output)), req.id, proto, res, err)
	noteMCPCall(r.Context(), call.name, outcome)
	s.writeFastHead(w, status, len(out))
	w.Write(out)
	return fastServed
}

// served is fastServed when a step answered the request, else fastLeft.
func served(answered bool) fastAnswer {
	if answered {
		return fastServed
	}
	return fastLeft
}

// rpcRequest is the JSON-RPC envelope of a request the fast path reads:
// its id (the JSON to echo), method and params.
type rpcRequest struct {
	id     []byte
	method string
	params gjson.Result
}

// readRPCRequest reads body as exactly one JSON-RPC request: a valid JSON
// object (jsoncheck: no duplicate names, valid UTF-8) of "jsonrpc": "2.0",
// a string or number id, a string method and params, and nothing else.
func readRPCRequest(body []byte) (rpcRequest, bool) {
	var req rpcRequest
	if jsoncheck.Check(body, jsoncheck.MaxDocumentDepth) != nil {
		return req, false
	}
	doc := gjson.ParseBytes(body)
	if !doc.IsObject() {
		return req, false
	}
	var id, method gjson.Result
	ok, version := true, false
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "jsonrpc":
			ok = v.Type == gjson.String && v.Str == "2.0"
			version = ok
		case "id":
			id = v
		case "method":
			method = v
		case "params":
			req.params = v
		default:
			ok = false
		}
		return ok
	})
	if !ok || !version || method.Type != gjson.String {
		return req, false
	}
	req.method = method.Str
	req.id, ok = rpcID(id)
	return req, ok
}

// callParams are the params of a tools/call the fast path reads.
type callParams struct {
	name       string
	args, meta gjson.Result // meta is read by modernRequest
}

// readCallParams reads a tools/call's params: an object of a string name,
// arguments absent or an object, and _meta, nothing else.
func readCallParams(params gjson.Result) (callParams, bool) {
	var c callParams
	if !params.IsObject() {
		return c, false
	}
	var name gjson.Result
	ok := true
	params.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "name":
			name = v
		case "arguments":
			c.args = v
		case "_meta":
			c.meta = v
		default:
			ok = false
		}
		return ok
	})
	c.name = name.Str
	return c, ok && name.Type == gjson.String && (!c.args.Exists() || c.args.IsObject())
}

// rpcID is the JSON of a request id the fast path echoes: a string or a
// number, as sent (the body passed jsoncheck: its strings are valid UTF-8,
// its numbers within bounds). Anything else (null, a notification without
// id) is the SDK's to answer.
func rpcID(id gjson.Result) ([]byte, bool) {
	switch id.Type {
	case gjson.String, gjson.Number:
		return []byte(id.Raw), true
	}
	return nil, false
}

// quoteSafe marks the bytes a JSON string holds as they are.
var quoteSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendQuoted appends s as a JSON string, as jsontext.AppendQuote does
// (byte for byte, for any input: a fuzz test holds it to that), but plain
// ASCII costs a table look-up and a store a byte: 16 k instructions for a
// 1 KiB output (the text content of every tools/call) against jsontext's
// 33 k. From the first control character or non-ASCII byte on, jsontext
// quotes the rest.
func appendQuoted[Bytes ~[]byte | ~string](dst []byte, s Bytes) []byte {
	// JSON text quotes often (every few bytes): bytes are written by index
	// into room for the worst case (every byte escaped), made once.
	j := len(dst)
	dst = slices.Grow(dst, 2*len(s)+2)[:j+2*len(s)+2]
	dst[j] = '"'
	j++
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoteSafe[c]:
			dst[j] = c
			j++
		case c == '"' || c == '\\':
			dst[j], dst[j+1] = '\\', c
			j += 2
		default:
			// jsontext quotes the rest, opening quote and all: the
			// opening one is dropped (the rest starts at a rune's first
			// byte, or at a byte no rune starts with, which jsontext
			// replaces).
			dst, _ = jsontext.AppendQuote(dst[:j], s[i:])
			return append(dst[:j], dst[j+1:]...)
		}
	}
	dst[j] = '"'
	return dst[:j+1]
}

// jsonType is the shared, read-only Content-Type of REST's JSON answers
// (net/http copies a handler's header when it writes it). The fast path's
// MCP answers carry the SDK's own headers instead (writeFastHead).
var jsonType = []string{"application/json"}
