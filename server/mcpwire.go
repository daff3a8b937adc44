package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/tidwall/gjson"
)

// JSON-RPC exactness at the MCP door, for what the SDK answers (the fast
// path echoes ids as sent itself). The SDK reads a request's id through a
// float64 into an int64: 2^53+1 came back as 2^53, 2^64+1 as -2^63, 1.5
// as 1. And it refuses a body it cannot read — not JSON, not JSON-RPC, a
// method it does not have — with a line of plain text and 400, where
// JSON-RPC answers a JSON-RPC error.
//
// So before the SDK reads a body, each message's id the SDK would not echo
// as sent (a number past ±2^53, a fraction, an exponent, -0; a string with an
// escape or a character the SDK escapes) is swapped
// for a placeholder string of the request's own (64 random bits: no
// caller's id can be one), and in the answer each placeholder is put back
// as its id was sent, byte for byte. Plain strings and integers within
// ±2^53 are left alone, so that a notifications/cancelled naming one still
// finds its request. A refusal of the body that the SDK words in
// plain text (it comes after the SDK read the body) is answered as the
// JSON-RPC error it is: -32700 for a body that is not JSON, -32600 for one
// that is not a JSON-RPC request, -32601 (HTTP 200, as the SDK answers
// every JSON-RPC error of a request it read) for a method it does not
// have, -32603 for its own failures; the error carries the request's id
// as sent, null for a batch or when there is none. A body the door finds
// wrong where the SDK would read it anyway (a member of the envelope
// named twice, an id that is neither a string nor a number) is handed to
// the SDK as one it refuses, so that its checks of the HTTP request
// (method, media types, host, protocol version) still come first.
// Refusals of the request itself stay HTTP errors in plain text, as the
// SDK words them (README "MCP").

// rpcBody is what the door read of an MCP POST body before the SDK.
type rpcBody struct {
	// sdk is what the SDK reads: the body with its ids swapped, or a body
	// it refuses.
	sdk []byte
	// code and reason are the JSON-RPC error of a body the door refuses
	// (0 for none); reason in the service's words.
	code   int64
	reason string
	// id is the id of a single request as sent, "null" when there is
	// none or the body is a batch.
	id []byte
	// swaps are the placeholders the answer's ids are put back from.
	swaps []idSwap
}

// idSwap is one id: its placeholder (a JSON string) and its text as sent.
type idSwap struct {
	placeholder, raw []byte
}

// refusedBody is what the SDK is given for a body the door refuses: it
// refuses it in turn, after its checks of the request.
var refusedBody = []byte("-")

// readRPC reads an MCP POST body as JSON-RPC: one message or a batch.
func readRPC(body []byte) rpcBody {
	in := rpcBody{sdk: body, id: []byte("null")}
	if len(bytes.TrimSpace(body)) == 0 {
		in.code, in.reason = jsonrpc.CodeParseError, "the body is empty: send one JSON-RPC message"
		return in
	}
	if err := jsoncheck.Check(body, jsoncheck.MaxDocumentDepth); err != nil {
		je, _ := err.(*jsoncheck.Error)
		switch {
		case je == nil:
			in.code, in.reason = jsonrpc.CodeParseError, "the body "+err.Error()
			return in
		case je.Kind == jsoncheck.Syntax || je.Kind == jsoncheck.BadUTF8:
			in.code, in.reason = jsonrpc.CodeParseError, "the body "+je.What()+": "+je.Where()
			return in
		case envelope(body, je.At()):
			return in.refuse("the message " + je.What() + ": " + je.Where())
		}
		// Deeper in a message (its params): the SDK's, or the tool's, to
		// refuse.
	}
	doc := gjson.ParseBytes(body)
	switch {
	case doc.IsObject():
		return in.message(body, doc, true)
	case doc.IsArray():
		n := 0
		doc.ForEach(func(_, m gjson.Result) bool {
			n++
			if !m.IsObject() {
				in = in.refuse("a batch holds JSON-RPC messages (objects) only")
				return false
			}
			in = in.message(body, m, false)
			return in.code == 0
		})
		if n == 0 {
			return in.refuse("the batch is empty")
		}
		return in
	}
	return in.refuse("the body is neither a JSON-RPC message (an object) nor a batch (an array)")
}

// envelope says a jsoncheck refusal at pointer is in a message's own
// members (its jsonrpc, id, method…), not in its params.
func envelope(body []byte, pointer string) bool {
	depth := strings.Count(pointer, "/")
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		depth-- // a batch's messages are one level down
	}
	return depth <= 1
}

// refuse makes in a body the door refuses as an invalid request.
func (in rpcBody) refuse(reason string) rpcBody {
	in.code, in.reason, in.sdk, in.swaps = jsonrpc.CodeInvalidRequest, reason, refusedBody, nil
	return in
}

// message reads one message of body (m), swapping its id; single says it
// is the whole body, whose id a refusal then carries.
func (in rpcBody) message(body []byte, m gjson.Result, single bool) rpcBody {
	var id, method, version gjson.Result
	hasResult := false
	m.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			id = v
		case "method":
			method = v
		case "jsonrpc":
			version = v
		case "result", "error":
			hasResult = true
		}
		return true
	})
	if single && (id.Type == gjson.String || id.Type == gjson.Number) {
		in.id = []byte(id.Raw)
	}
	switch {
	case version.Type != gjson.String || version.Str != "2.0":
		return in.refuse(`a JSON-RPC 2.0 message has "jsonrpc": "2.0"`)
	case method.Exists() && method.Type != gjson.String:
		return in.refuse("the method is not a string")
	case id.Exists() && id.Type != gjson.String && id.Type != gjson.Number && id.Type != gjson.Null:
		return in.refuse("the id is neither a string nor a number")
	case !method.Exists() && !hasResult:
		return in.refuse("the message has neither a method nor a result or an error")
	case id.Type != gjson.String && id.Type != gjson.Number:
		return in // a notification (or a null id, which the SDK refuses for a request)
	case exactForSDK(id):
		// The SDK echoes it as sent, and a notifications/cancelled that
		// names it finds the request: left as it is.
		return in
	}
	return in.swap(body, id)
}

// exactForSDK says the SDK echoes id as sent: a string of printable ASCII
// that needs no escape (the SDK re-encodes a string, escapes and <, >, &
// its own way), or an integer written plainly within ±2^53, which its
// float64 holds exactly.
func exactForSDK(id gjson.Result) bool {
	if id.Type == gjson.String {
		for i := 1; i < len(id.Raw)-1; i++ {
			if c := id.Raw[i]; c < 0x20 || c >= 0x7f || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	n, err := strconv.ParseInt(id.Raw, 10, 64)
	return err == nil && n <= 1<<53 && n >= -(1<<53) && strconv.FormatInt(n, 10) == id.Raw
}

// swap replaces the id (a value of body) by its placeholder in in.sdk: one
// placeholder per distinct id text, so that the SDK still sees two
// messages of one id as such.
func (in rpcBody) swap(body []byte, id gjson.Result) rpcBody {
	start := id.Index
	if start <= 0 || start+len(id.Raw) > len(body) || string(body[start:start+len(id.Raw)]) != id.Raw {
		return in.refuse("the id could not be read") // not reached: gjson knows where its values are
	}
	ph := in.placeholderOf(id.Raw)
	// Messages are read front to back, so the ids swapped already are all
	// before this one: its offset in sdk has moved by what they changed.
	at := start + len(in.sdk) - len(body)
	out := make([]byte, 0, len(in.sdk)+len(ph))
	out = append(out, in.sdk[:at]...)
	out = append(out, ph...)
	in.sdk = append(out, in.sdk[at+len(id.Raw):]...)
	return in
}

// placeholderOf is the placeholder of the id text raw, made on first use.
func (in *rpcBody) placeholderOf(raw string) []byte {
	for _, s := range in.swaps {
		if string(s.raw) == raw {
			return s.placeholder
		}
	}
	var b [8]byte
	rand.Read(b[:])
	ph := []byte(`"httptools-id-` + hex.EncodeToString(b[:]) + `"`)
	in.swaps = append(in.swaps, idSwap{placeholder: ph, raw: []byte(raw)})
	return ph
}

// restore puts the ids back in an answer of the SDK: each placeholder as a
// JSON value becomes the id as sent, and inside a string (an error's
// words) its text.
func (in *rpcBody) restore(b []byte) []byte {
	for _, s := range in.swaps {
		if !bytes.Contains(b, s.placeholder[1:len(s.placeholder)-1]) {
			continue
		}
		b = bytes.ReplaceAll(b, s.placeholder, s.raw)
		inner := appendQuoted(nil, s.raw)
		b = bytes.ReplaceAll(b, s.placeholder[1:len(s.placeholder)-1], inner[1:len(inner)-1])
	}
	return b
}

// readFlag is a body that notes when it has been read to its end: the SDK
// refuses the request itself before it reads the body, and the body
// after.
type readFlag struct {
	r    *bytes.Reader
	done bool
}

func (f *readFlag) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil {
		f.done = true
	}
	return n, err
}

func (f *readFlag) Close() error { return nil }

// rpcWriter is the SDK's ResponseWriter at the door: it puts the ids back
// in the SDK's answers and words its plain-text refusals of the body as
// JSON-RPC errors. finish ends the answer.
type rpcWriter struct {
	http.ResponseWriter
	in   *rpcBody
	body *readFlag
	// status is the SDK's, held until finish (or a flush) writes.
	status  int
	held    []byte // the answer not yet written: ids to put back
	plain   bool   // the SDK refused the body in plain text: held is its words
	written bool   // the header went out
}

func (w *rpcWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	ct := w.Header().Get("Content-Type")
	w.plain = w.body.done && strings.HasPrefix(ct, "text/plain") && (status == http.StatusBadRequest || status >= 500)
}

func (w *rpcWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.held = append(w.held, p...)
	return len(p), nil
}

// Flush writes what is held, its ids put back (an event stream's events
// go out as the SDK flushes them).
func (w *rpcWriter) Flush() {
	if w.plain {
		return
	}
	w.emit()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *rpcWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// emit writes the header once and what is held, its ids put back.
func (w *rpcWriter) emit() {
	if w.status == 0 {
		return // nothing was answered yet
	}
	if !w.written {
		w.written = true
		w.Header().Del("Content-Length")
		w.ResponseWriter.WriteHeader(w.status)
	}
	if len(w.held) > 0 {
		w.ResponseWriter.Write(w.in.restore(w.held))
		w.held = w.held[:0]
	}
}

// finish ends the answer: a plain-text refusal of the body as a JSON-RPC
// error, anything else as the SDK wrote it, ids put back.
func (w *rpcWriter) finish() {
	if !w.plain {
		w.emit()
		return
	}
	code, msg := w.in.code, w.in.reason
	said := strings.TrimSpace(string(w.held))
	switch {
	case code != 0:
	case w.status >= 500:
		code, msg = jsonrpc.CodeInternalError, said
	case strings.Contains(said, "JSON RPC not handled"):
		code, msg = jsonrpc.CodeMethodNotFound, "this server has no such method ("+said+")"
	default:
		code, msg = jsonrpc.CodeInvalidRequest, said
	}
	status := w.status
	if code == jsonrpc.CodeMethodNotFound {
		status = http.StatusOK // a request read whole, answered with an error, as the SDK answers the others
	}
	out := appendRPCError(nil, w.in.id, code, msg)
	h := w.Header()
	h.Del("X-Content-Type-Options")
	h["Content-Type"] = jsonType
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.ResponseWriter.WriteHeader(status)
	w.ResponseWriter.Write(out)
}

// rpcErrorWords are JSON-RPC 2.0's own words for its error codes.
var rpcErrorWords = map[int64]string{
	jsonrpc.CodeParseError:     "Parse error",
	jsonrpc.CodeInvalidRequest: "Invalid Request",
	jsonrpc.CodeMethodNotFound: "Method not found",
	jsonrpc.CodeInternalError:  "Internal error",
}

// appendRPCError appends a JSON-RPC error response: its id (JSON text as
// sent, or null), code, and message (JSON-RPC's words for the code, then
// why).
func appendRPCError(dst, id []byte, code int64, why string) []byte {
	msg := rpcErrorWords[code]
	if why != "" {
		msg += ": " + why
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, code, 10)
	dst = append(dst, `,"message":`...)
	dst = appendQuoted(dst, msg)
	return append(dst, "}}"...)
}

// serveRPC hands an MCP POST body the fast path left to the SDK's handler
// h: its ids swapped, the answer's put back, a plain-text refusal of the
// body worded as a JSON-RPC error.
func serveRPC(w http.ResponseWriter, r *http.Request, h http.Handler, body []byte) {
	in := readRPC(body)
	flag := &readFlag{r: bytes.NewReader(in.sdk)}
	r.Body = flag
	rw := &rpcWriter{ResponseWriter: w, in: &in, body: flag}
	h.ServeHTTP(rw, r)
	rw.finish()
}
