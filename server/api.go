package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unsafe"

	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/synth"
	"github.com/tidwall/gjson"
)

// The REST API's reading of request bodies (one check before any decode),
// and the catalogue routes. The other routes: invoke.go, secrets.go,
// connroutes.go, keys.go.

// readJSON decodes a capped request body: 413 over the cap, 400 with the
// byte offset on malformed JSON, and 400 for a member named twice or nesting
// over the document limit (jsoncheck), so that no field is read two ways.
// In an invoke body, such a fault under "input" is the input's:
// input-validation-failed with the pointer into the input.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := s.readCheckedBody(w, r)
	return ok && decodeBody(w, body, v)
}

// bareInput reads the usual invoke body, {"input": {…}} and nothing else,
// without reflection: true when body is that and req is filled (its input a
// view of body). Any other body — a context, another member, an input that
// is not an object, a name spelled with escapes — is left to decodeBody,
// which reads it as it always has.
func bareInput(body []byte, req *callRequest) bool {
	view := unsafe.String(unsafe.SliceData(body), len(body)) // read here only; nothing keeps it
	root := gjson.Parse(view)
	if !root.IsObject() {
		return false
	}
	var in gjson.Result
	ok := true
	root.ForEach(func(k, v gjson.Result) bool {
		if k.Raw != `"input"` || !v.IsObject() {
			ok = false
		}
		in = v
		return ok
	})
	if !ok || in.Raw == "" {
		return false
	}
	if in.Index > 0 && in.Index+len(in.Raw) <= len(body) && string(body[in.Index:in.Index+len(in.Raw)]) == in.Raw {
		req.Input = json.RawMessage(body[in.Index : in.Index+len(in.Raw) : in.Index+len(in.Raw)])
	} else {
		req.Input = json.RawMessage(in.Raw) // copied off the view
	}
	return true
}

// readCheckedBody reads a JSON body under the input cap and checks it
// (jsoncheck), answering the request itself when it is refused.
// readBody reads a request body of length n (-1: unknown) under max, for
// REST and MCP alike: a body whose length is known is read into a buffer
// of its size, not one grown from 512 bytes (a call that waits on a slow
// upstream holds its body all along).
func readBody(body io.Reader, n, max int64) ([]byte, error) {
	if n <= 0 || n > max {
		return io.ReadAll(body)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

func (s *Server) readCheckedBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := readBody(http.MaxBytesReader(w, r.Body, s.cfg.MaxInputBytes), r.ContentLength, s.cfg.MaxInputBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "request-too-large", "", fmt.Sprintf("the body is over the %d-byte limit", s.cfg.MaxInputBytes))
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "bad-request", "", "cannot read the body")
		return nil, false
	}
	if err := jsoncheck.Check(body, jsoncheck.MaxDocumentDepth); err != nil {
		var je *jsoncheck.Error
		errors.As(err, &je)
		if je.Kind == jsoncheck.Syntax {
			writeError(w, http.StatusBadRequest, "bad-request", "malformed-json", fmt.Sprintf("malformed JSON at byte %d: %s", je.Offset, je.Detail()))
			return nil, false
		}
		if in, ok := strings.CutPrefix(je.At(), "/input"); ok && (in == "" || in[0] == '/') && r.PathValue("id") != "" {
			where := in
			if where == "" {
				where = "/"
			}
			msg := fmt.Sprintf("input failed validation: %s: %v", where, err)
			writeJSON(w, http.StatusBadRequest, map[string]errorBody{"error": {
				Code: string(synth.CodeInputValidationFailed), Reason: synth.ReasonInputInvalid, Message: msg,
				Details: map[string]any{"violations": []synth.Violation{{Pointer: in, Message: err.Error()}}},
			}})
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "bad-request", synth.ReasonInputInvalid, "the body "+err.Error())
		return nil, false
	}
	return body, true
}

// decodeBody decodes a checked body into v strictly (decodeStrict: an
// unknown member is a 400 naming it), answering the request itself when
// it does not fit.
func decodeBody(w http.ResponseWriter, body []byte, v any) bool {
	if err := decodeStrict(body, v); err != nil {
		writeFailure(w, err)
		return false
	}
	return true
}

// listTools lists the tools the caller may see: the policies' denied ones
// are not there.
func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	ctx := withToolset(r.Context(), r.URL.Query().Get("toolset"))
	g, err := s.gateFor(ctx, tenantOf(r.Context()), identity(r.Context()), r.Header.Get("X-Person-Id"))
	if err != nil {
		writeFailure(w, err)
		return
	}
	if r.URL.Query().Has("q") {
		s.searchTools(w, r, g) // mcpcatalogue.go
		return
	}
	// The answer is encoded once per tool set and policy view (which
	// tools the caller sees), as tools/list's pages are.
	ts := s.Tools()
	seen, digest := viewOf(g, ts, ts.ids)
	key := listKey{ts: ts, cursor: "GET /v1/tools", view: digest}
	body, ok := s.lists.get(key)
	if !ok {
		out := make([]json.RawMessage, 0, len(ts.ids))
		for i, id := range ts.ids {
			if seen[i] {
				out = append(out, ts.raw[id])
			}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b) // as writeJSON encodes: no HTML escaping, a newline
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{"tools": out}); err != nil {
			writeFailure(w, err)
			return
		}
		body = b.Bytes()
		s.lists.put(key, body)
	}
	hd := w.Header()
	hd["Content-Type"] = jsonType
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ts := s.Tools()
	raw, ok := ts.raw[id]
	if !ok {
		toolNotFound(w, id)
		return
	}
	g, err := s.gateFor(r.Context(), tenantOf(r.Context()), identity(r.Context()), r.Header.Get("X-Person-Id"))
	if err != nil {
		writeFailure(w, err)
		return
	}
	if !g.allows(r.Context(), ts.tools[id]) {
		toolNotFound(w, id)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(raw)
}
