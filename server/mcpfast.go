package server

import (
	"encoding/json"
	"errors"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// The MCP fast path. Over stateless HTTP the Go SDK answers each request by
// connecting a fresh session to the server: it decodes the body three times
// (each decoder allocating a 32 KiB buffer), starts the session's
// goroutines and routes the message through them. For the one request that
// carries the load — a single tools/call — that is most of the cost
// (BENCHMARKS.md). serveMCPCall answers exactly that request itself, with
// the same result the SDK would give (a test sends each case to both);
// anything else, or anything unusual about it, is left
// to the SDK, which stays the reference.

// fastVersions are the protocol versions whose tools/call and tools/list
// the fast path reads, derived from the SDK's own list so that a version
// the SDK stops serving leaves the fast path with it: every version of the
// handshake era (before 2026-07-28: the same request, the session's
// version in its header) and 2026-07-28 itself (read by modernRequest).
// "" is a request without the header, which the SDK takes as 2025-03-26.
// A version after 2026-07-28 has a wire format this code has not read, so
// it goes to the SDK until modernRequest learns it
// (TestFastPathKnowsTheSDKsVersions fails on the SDK upgrade that brings
// one, rather than letting it fall silently to the slow path).
var fastVersions = readableVersions(mcp.SupportedProtocolVersions())

func readableVersions(sdk []string) map[string]bool {
	m := map[string]bool{"": true}
	for _, v := range sdk {
		if v <= modernVersion {
			m[v] = true
		}
	}
	return m
}

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
// tools/list, or leaves the request alone.
func (s *Server) serveMCPCall(w http.ResponseWriter, r *http.Request, body []byte, hold *budget.Hold) fastAnswer {
	proto := r.Header.Get("MCP-Protocol-Version")
	if r.Method != http.MethodPost || !fastVersions[proto] ||
		!isJSONContentType(r.Header.Get("Content-Type")) || !acceptsJSONAndStream(r.Header.Values("Accept")) ||
		!hostAllowed(r) {
		return fastLeft
	}
	if jsoncheck.Check(body, jsoncheck.MaxDocumentDepth) != nil {
		return fastLeft
	}
	doc := gjson.ParseBytes(body)
	if !doc.IsObject() {
		return fastLeft
	}
	var id, method, params gjson.Result
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
			params = v
		default:
			ok = false
		}
		return ok
	})
	if !ok || !version || method.Type != gjson.String {
		return fastLeft
	}
	idJSON, ok := rpcID(id)
	if !ok {
		return fastLeft
	}
	switch method.Str {
	case "tools/list":
		if s.serveMCPList(w, r, proto, idJSON, params) {
			return fastServed
		}
		return fastLeft
	case "server/discover":
		if s.serveMCPDiscover(w, r, proto, idJSON, params) {
			return fastServed
		}
		return fastLeft
	}
	if method.Str != "tools/call" || !params.IsObject() {
		return fastLeft
	}
	var name, args, meta gjson.Result
	params.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "name":
			name = v
		case "arguments":
			args = v
		case "_meta":
			meta = v // read by modernRequest
		default:
			ok = false
		}
		return ok
	})
	if !ok || name.Type != gjson.String || args.Exists() && !args.IsObject() ||
		!modernRequest(r, proto, method.Str, name.Str, meta) {
		return fastLeft
	}
	modern := proto >= modernVersion
	ts := s.Tools()
	tool, found := ts.Tool(name.Str)
	if !found || modern && (ts.headerBound(name.Str) || s.mayAsk(tool, meta)) {
		return fastLeft // the SDK's "unknown tool" error; its checks of x-mcp-header; input_required
	}
	var raw []byte
	if args.Exists() {
		raw = body[args.Index : args.Index+len(args.Raw)]
	}
	tenant, person := mcpCaller(r.Context(), r.Header)
	res, err := s.mcpCall(fastMetaTraceContext(r.Context(), meta), nil, tool, ts.mcpTool(tool.ID()), tenant, person, raw, hold)
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
	out := make([]byte, 0, 128+len(res.errText)+3*len(res.output))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, idJSON...)
	outcome := "" // for the access record
	status := http.StatusOK
	if err != nil {
		var jerr *jsonrpc.Error
		if !errors.As(err, &jerr) {
			jerr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		outcome = "rpc-error " + strconv.FormatInt(jerr.Code, 10)
		status = modernStatus(proto, jerr.Code)
		out = append(out, `,"error":{"code":`...)
		out = strconv.AppendInt(out, jerr.Code, 10)
		out = append(out, `,"message":`...)
		out, _ = jsontext.AppendQuote(out, jerr.Message)
		if len(jerr.Data) > 0 {
			out = append(out, `,"data":`...)
			out = append(out, jerr.Data...)
		}
		out = append(out, "}}\n"...)
	} else {
		out = append(out, `,"result":{`...)
		switch {
		case res.cut != nil:
			out = res.appendCutMeta(out, modern) // resultbudget.go
		case modern && res.outside:
			out = append(out, `"_meta":{"`+OutsideDataMeta+`":true,`...)
			out = append(out, serverInfoMeta()...)
			out = append(out, "},"...)
		case modern:
			out = append(out, `"_meta":{`...)
			out = append(out, serverInfoMeta()...)
			out = append(out, "},"...)
		case res.outside:
			out = append(out, `"_meta":{"`+OutsideDataMeta+`":true},`...)
		}
		if res.cut != nil {
			out = append(out, `"content":`...)
			b, _ := json.Marshal(res.content()) // a cut answer: the blocks the SDK's path writes (resultbudget.go)
			out = append(out, b...)
		} else if res.media != "" && !res.isError {
			out = res.appendMediaContent(out) // mcpmedia.go
		} else {
			out = append(out, `"content":[{"type":"text","text":`...)
			switch {
			case res.isError:
				out = appendQuoted(out, res.errText)
			case res.outside:
				out = appendQuoted(out, res.text())
			default:
				out = appendQuoted(out, res.output)
			}
			out = append(out, "}]"...)
		}
		if !res.isError && res.structured {
			out = append(out, `,"structuredContent":`...)
			out = res.appendStructured(out)
		}
		if res.isError {
			out = append(out, `,"isError":true`...)
			outcome = "tool-error"
		}
		if modern {
			out = append(out, `,"resultType":"complete"`...)
		}
		out = append(out, "}}\n"...)
	}
	noteMCPCall(r.Context(), name.Str, outcome)
	h := w.Header()
	h["Cache-Control"] = noCache
	h["Content-Type"] = jsonType
	h.Set("Content-Length", strconv.Itoa(len(out)))
	s.fastCalls.Add(1) // before the answer: a caller that read it sees the count
	w.WriteHeader(status)
	w.Write(out)
	return fastServed
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

// isJSONContentType: the media type is application/json.
func isJSONContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// acceptsJSONAndStream: Accept takes both application/json and
// text/event-stream, as the SDK reads it.
func acceptsJSONAndStream(values []string) bool {
	var j, sse bool
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				j = true
			case "text/event-stream", "text/*":
				sse = true
			case "*/*":
				j, sse = true, true
			}
		}
	}
	return j && sse
}

// hostAllowed is the SDK's DNS-rebinding check, on the safe side: a request
// to a loopback listener must name a loopback host. When in doubt it says
// no, and the SDK decides.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopback(local.String()) {
		return true
	}
	return isLoopback(r.Host)
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
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

// Shared, read-only header values of the hot paths' responses (net/http
// copies a handler's header when it writes it).
var (
	jsonType = []string{"application/json"}
	noCache  = []string{"no-cache, no-transform"}
)
