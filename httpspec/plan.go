package httpspec

import (
	"context"
	"net/http"

	"github.com/httptools/httptools/body"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/synth"
)

// The plan of a call: the spec and the input (and the credential they
// resolve) make the fetch.Request the send stage hands to the client as it
// is, and the dry run describes as it is.

// plan is one call's request, complete: the fetch.Request (its Secrets
// know every secret resolved for it: the call's), and what a 401 retry
// and a printed curl need besides.
type plan struct {
	fetch.Request
	// credential is the resolved secret or token, for a 401 retry;
	// credentialVar the variable that stands for it in a printed curl, in
	// the header credentialHeader.
	credential, credentialVar, credentialHeader string
	// vals backs the values of a few headers, in the plan's allocation.
	vals [4]string
}

// planCall makes the plan of call; rejected is the connection token a
// first attempt got a 401 for.
func (h *Handler) planCall(ctx context.Context, call *synth.Call, rejected string) (*plan, error) {
	// The URL first, from a small frame: its expansion reads the input
	// and is the deepest point before a call waits, and a goroutine waits
	// on a stack as big as its deepest point was.
	u, err := h.expandURL(call.Input)
	if err != nil {
		return nil, err
	}
	return h.planWith(ctx, call, u, rejected)
}

// planWith makes the rest of the plan of call, whose URL is u: the request,
// its body, its headers, then the credential.
//
//go:noinline
func (h *Handler) planWith(ctx context.Context, call *synth.Call, u, rejected string) (*plan, error) {
	secrets := call.Secrets
	if secrets == nil {
		secrets = &redact.Set{}
	}
	rng := h.spec.Success()
	r := &plan{Request: fetch.Request{
		Method: h.spec.Method, URL: u,
		Allowlist: h.allowlist, Restricted: h.restricted,
		AuthHeaders: h.authHeaders, Secrets: secrets,
		MaxBody:    h.maxBody,
		SuccessMin: rng.Min, SuccessMax: rng.Max,
		Tool: h.toolID, Tenant: call.Context.Tenant,
		Logger: call.Options.Logger, LogAttrs: call.Options.LogAttrs,
		Hold: call.Options.Hold,
	}}
	var ct string
	var err error
	if r.Body, ct, err = h.planBody(call.Input); err != nil {
		return nil, err
	}
	if r.Body == nil && h.fixed != nil {
		r.Header = h.fixed
		return r, nil
	}
	if err := h.planHeaders(r, call); err != nil {
		return nil, err
	}
	h.addDefaults(r.Header, ct)
	// The credential goes last, so that no default (User-Agent,
	// Content-Type) can replace it: it reaches the wire as declared.
	if h.spec.Authorization != nil {
		if err := h.planCredential(ctx, r, call, rejected); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// planBody is the body the spec makes of the input in, and its type: none
// (nil) for a JSON body the input leaves empty or an optional text body it
// does not give.
func (h *Handler) planBody(in []byte) (b []byte, ct string, err error) {
	switch h.spec.BodyKind() {
	case body.JSONInput:
		if b = body.JSONWithout(in, h.consumed); b != nil {
			ct = body.ContentTypeJSON
		}
	case body.InputPassthrough:
		b, ct = in, body.ContentTypeJSON
	case body.Text:
		if h.form != nil {
			f, err := h.form.Fill(in)
			if err != nil {
				return nil, "", h.inputInvalid("", "cannot be sent as the form body: "+err.Error())
			}
			return []byte(f), "", nil
		}
		// A template that is one value the input lacks (absent or null)
		// is an optional body not given: none is sent, as an optional
		// header is not (an imported operation whose body is optional).
		if text, absent := h.text.FillOptional(in); !absent {
			b, ct = []byte(text), body.ContentTypeText
		}
	}
	return b, ct, nil
}

// planHeaders fills r's headers from the spec's templates and call's input:
// an optional header the input does not give is not sent, a value holding a
// line break or NUL refuses the call, and an empty Idempotency-Key is the
// call's own.
func (h *Handler) planHeaders(r *plan, call *synth.Call) error {
	r.Header = make(http.Header, len(h.headers)+3)
	// One backing array for every header value; each slice is capped so an
	// Add by someone else reallocates instead of writing into a neighbour.
	var vals []string
	if len(h.headers) <= len(r.vals) {
		vals = r.vals[:len(h.headers)]
	} else {
		vals = make([]string, len(h.headers))
	}
	for i, hd := range h.headers {
		if r.Body == nil && hd.name == "Content-Type" && h.spec.RequestBody != nil {
			// The body's type, and no body this call: nothing to type.
			continue
		}
		v, absent := hd.tmpl.FillOptional(call.Input)
		if absent && hd.name != "Idempotency-Key" {
			// A header that is one input value, which the input does
			// not give: an optional header, not sent.
			continue
		}
		if hasLineBreakOrNUL(v) {
			return synth.HandlerError(ReasonInvalidHeader, "header %s: the value filled from the input holds a CR, LF or NUL character; the request was not sent", hd.name)
		}
		if v == "" && hd.name == "Idempotency-Key" {
			// The manifest asks for an idempotency key and the input gave
			// none: use the kernel's, stable across retries and re-runs of
			// this call; with none either, send no empty key.
			if v = call.Context.IdempotencyKey; v == "" {
				continue
			}
		}
		vals[i] = v
		if prev, ok := r.Header[hd.wire]; ok {
			r.Header[hd.wire] = append(prev[:len(prev):len(prev)], v)
		} else {
			r.Header[hd.wire] = vals[i : i+1 : i+1]
		}
	}
	return nil
}

// planCredential resolves the spec's credential for call (rejected is the
// connection token a first attempt got a 401 for), adds it to r's secrets
// and sets its header, refusing one holding a line break or NUL.
func (h *Handler) planCredential(ctx context.Context, r *plan, call *synth.Call, rejected string) error {
	cred, err := h.resolveCredential(ctx, call.Context, rejected)
	if err != nil {
		return err
	}
	r.Secrets.Add(cred.Secret)
	r.credential, r.credentialVar, r.credentialHeader = cred.Secret, h.credVar, http.CanonicalHeaderKey(cred.Header)
	if hasLineBreakOrNUL(cred.Value) {
		return synth.HandlerError(ReasonInvalidHeader, "header %s: the resolved credential holds a CR, LF or NUL character; the request was not sent", cred.Header)
	}
	r.Header.Set(cred.Header, cred.Value)
	return nil
}

// hasLineBreakOrNUL reports whether s holds a CR, LF or NUL, which no
// header value may: checked at load time for literal values and per call
// for filled ones and credentials.
func hasLineBreakOrNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' || c == 0 {
			return true
		}
	}
	return false
}
