package httpspec

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

// DryRun prepares the request and describes it as JSON, with every resolved
// secret redacted; nothing is sent.
//
//	{"method":"POST","url":"…","headers":["Name: value",…],"body":…}
//
// The body is the JSON value when it is JSON, else a string.
func (h *Handler) DryRun(ctx context.Context, call *synth.Call) (json.RawMessage, error) {
	r, err := h.Prepare(ctx, call)
	if err != nil {
		return nil, err
	}
	return r.Describe(), nil
}

// Describe renders the request as DryRun does, secrets redacted.
func (r *Request) Describe() json.RawMessage {
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	hs := []string{}
	for _, k := range names {
		for _, v := range r.Header[k] {
			hs = append(hs, k+": "+r.redactor.Redact(v))
		}
	}
	var bodyVal any
	if r.Body != nil {
		text := r.redactor.Redact(string(r.Body))
		if json.Valid([]byte(text)) && (r.Header.Get("Content-Type") == "" || isJSONType(r.Header.Get("Content-Type"))) {
			bodyVal = json.RawMessage(text)
		} else {
			bodyVal = text
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(struct {
		Method  string   `json:"method"`
		URL     string   `json:"url"`
		Headers []string `json:"headers"`
		Body    any      `json:"body"`
	}{r.Method, r.redactor.Redact(r.URL), hs, bodyVal})
	return bytes.TrimRight(b.Bytes(), "\n")
}

func isJSONType(ct string) bool {
	return bytes.Contains([]byte(ct), []byte("json"))
}

// Redactor returns the redactor holding the secrets resolved for r.
func (r *Request) Redactor() *auth.Redactor { return r.redactor }
