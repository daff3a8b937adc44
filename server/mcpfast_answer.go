package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The fast path's answer to a tools/call: the JSON-RPC response the SDK
// writes for the same result (TestMCPFastPathAgreesWithTheSDK), encoded
// here in one buffer, and the headers it is sent with.

// appendCallAnswer appends the JSON-RPC response of id to a call of
// protocol version proto that gave res (or err), and says its HTTP status
// and its outcome for the access record ("" for a result, "tool-error",
// "rpc-error <code>").
func appendCallAnswer(out, id []byte, proto string, res mcpResult, err error) (_ []byte, status int, outcome string) {
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	if err != nil {
		var jerr *jsonrpc.Error
		if !errors.As(err, &jerr) {
			jerr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return appendErrorMember(out, jerr), modernStatus(proto, jerr.Code), "rpc-error " + strconv.FormatInt(jerr.Code, 10)
	}
	if res.isError {
		outcome = "tool-error"
	}
	return res.appendCallResult(out, proto >= modernVersion), http.StatusOK, outcome
}

// appendErrorMember appends the error member of a response, and closes it.
func appendErrorMember(out []byte, jerr *jsonrpc.Error) []byte {
	out = append(out, `,"error":{"code":`...)
	out = strconv.AppendInt(out, jerr.Code, 10)
	out = append(out, `,"message":`...)
	out, _ = jsontext.AppendQuote(out, jerr.Message)
	if len(jerr.Data) > 0 {
		out = append(out, `,"data":`...)
		out = append(out, jerr.Data...)
	}
	return append(out, "}}\n"...)
}

// appendCallResult appends the result member of a response (its _meta,
// content, structured content, isError and, from 2026-07-28, resultType),
// and closes it.
func (res mcpResult) appendCallResult(out []byte, modern bool) []byte {
	out = append(out, `,"result":{`...)
	out = res.appendResultMeta(out, modern)
	out = res.appendContent(out)
	if !res.isError && res.structured {
		out = append(out, `,"structuredContent":`...)
		out = res.appendStructured(out)
	}
	if res.isError {
		out = append(out, `,"isError":true`...)
	}
	if modern {
		out = append(out, `,"resultType":"complete"`...)
	}
	return append(out, "}}\n"...)
}

// appendResultMeta appends the result's _meta member and its comma, when
// it has one: a cut answer's (resultbudget.go), the outside-data mark,
// and from 2026-07-28 the server's identity.
func (res mcpResult) appendResultMeta(out []byte, modern bool) []byte {
	switch {
	case res.cut != nil:
		return res.appendCutMeta(out, modern) // resultbudget.go
	case modern && res.outside:
		out = append(out, `"_meta":{"`+OutsideDataMeta+`":true,`...)
		out = append(out, serverInfoMeta()...)
		return append(out, "},"...)
	case modern:
		out = append(out, `"_meta":{`...)
		out = append(out, serverInfoMeta()...)
		return append(out, "},"...)
	case res.outside:
		return append(out, `"_meta":{"`+OutsideDataMeta+`":true},`...)
	}
	return out
}

// appendContent appends the result's content member: a cut answer's
// blocks, a media block, or one text block (the output, inside its
// boundary when it is outside data, or the error's words).
func (res mcpResult) appendContent(out []byte) []byte {
	switch {
	case res.cut != nil:
		out = append(out, `"content":`...)
		b, _ := json.Marshal(res.content()) // a cut answer: the blocks the SDK's path writes (resultbudget.go)
		return append(out, b...)
	case res.media != "" && !res.isError:
		return res.appendMediaContent(out) // mcpmedia.go
	}
	out = append(out, `"content":[{"type":"text","text":`...)
	switch {
	case res.isError:
		out = appendQuoted(out, res.errText)
	case res.outside:
		out = appendQuoted(out, res.text())
	default:
		out = appendQuoted(out, res.output)
	}
	return append(out, "}]"...)
}

// writeFastHead writes the head of a fast-path answer of n bytes: status
// and the headers the SDK's handler wrote on a JSON answer to the probe
// (fastShapes.header: Content-Type, Cache-Control). The answer is counted
// first, so a caller that read it sees the count.
func (s *Server) writeFastHead(w http.ResponseWriter, status, n int) {
	h := w.Header()
	for k, v := range s.shapes().header {
		h[k] = v // shared, read-only: net/http copies a handler's header when it writes it
	}
	h.Set("Content-Length", strconv.Itoa(n))
	s.fastCalls.Add(1)
	w.WriteHeader(status)
}
