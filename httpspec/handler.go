package httpspec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/httptools/httptools/body"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/synth"
	"github.com/tidwall/gjson"
)

// UserAgent is sent unless the manifest sets its own.
const UserAgent = "httptools/" + fetch.Version

var (
	defaultClientOnce sync.Once
	defaultClient     *fetch.Client
)

// sharedClient is the client of handlers synthesized without one: the SSRF
// guard on with no exceptions, no proxy.
func sharedClient() *fetch.Client {
	defaultClientOnce.Do(func() { defaultClient = fetch.NewClient(fetch.Config{UserAgent: UserAgent}) })
	return defaultClient
}

// Sender sends one outbound request and reads its answer. *fetch.Client is
// the one httptools has: the SSRF guard, the allowlist on every redirect
// hop, retries that never repeat a POST, the caps and the audit record. A
// kernel may put its own in front of one (a test double, a recorder); to
// trace or change what goes on the wire, wrap the client's transport
// instead (fetch.Config.WrapTransport), which keeps the guard underneath.
// A Sender must not change req.Header: calls of one tool may share it.
// It must be safe for concurrent use: the calls of every tool share it.
type Sender interface {
	Do(ctx context.Context, req *fetch.Request) (*fetch.Response, error)
}

var _ Sender = (*fetch.Client)(nil)

// Synthesizer builds handlers for the "http" kind.
type Synthesizer struct {
	sender Sender
}

var _ synth.Synthesizer = (*Synthesizer)(nil)

// NewSynthesizer returns a synthesizer whose handlers send through s (nil:
// one shared *fetch.Client, guard on with no exceptions, no proxy).
// Register it in a registry of your own to use your own client:
//
//	reg := &synth.Registry{}
//	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(client))
func NewSynthesizer(s Sender) *Synthesizer {
	if c, ok := s.(*fetch.Client); ok && c == nil {
		s = nil // a nil *fetch.Client is no client
	}
	return &Synthesizer{sender: s}
}

// Synthesize checks the spec and compiles a Handler.
func (sy *Synthesizer) Synthesize(b *synth.Build) synth.Handler {
	m := b.Manifest
	s := decodeSpec(m.Spec.Raw)
	tmpl, org := checkSpec(m, s, b.Options, b.Problems)
	if b.Problems.HasErrors() || tmpl == nil {
		return nil
	}
	h := &Handler{spec: s, tmpl: tmpl, origin: org, client: sy.sender, consumed: map[string]bool{}, vars: map[string]string{}, toolID: m.ID,
		timeout: &ownTimeout{d: time.Duration(s.Timeout()) * time.Millisecond, what: "the tool's timeoutMs"}}
	if n := m.Network; n != nil && n.Kind == synth.NetworkAllowlist {
		h.allowlist, h.restricted = n.Hosts, true
	}
	if a := s.Authorization; a != nil && a.Kind == AuthHeader {
		h.authHeaders = []string{http.CanonicalHeaderKey(a.HeaderName)}
	}
	if h.client == nil {
		h.client = sharedClient() // the zero Synthesizer, or NewSynthesizer(nil)
	}
	h.credVar = credentialVar(s.Authorization)
	for _, v := range tmpl.Vars() {
		keys := InputKeys(v.Name)
		h.vars[v.Name] = body.Path(keys)
		if len(keys) == 1 {
			h.consumed[keys[0]] = true
		}
	}
	for _, hd := range s.Headers {
		name := http.CanonicalHeaderKey(hd.Name)
		h.headers = append(h.headers, header{name: name, tmpl: body.NewTemplate(hd.Value)})
		switch name {
		case "Content-Type":
			h.hasContentType = true
		case "User-Agent":
			h.hasUserAgent = true
		}
	}
	if s.RequestBody != nil && s.RequestBody.Kind == body.Text {
		if isForm(s) {
			h.form, _ = body.ParseForm(s.RequestBody.Template) // checkSpec refused a bad one
		} else {
			h.text = body.NewTemplate(s.RequestBody.Template)
		}
	}
	if l := m.Limits; l != nil && l.MemMB > 0 && l.MemMB<<20 < fetch.DefaultMaxBodyBytes {
		h.maxBody = l.MemMB << 20
	}
	h.fixed = fixedHeader(h)
	return h
}

// fixedHeader is the request header of every call of h that sends no body,
// when nothing in it varies by call: no authorization, every header value
// literal (and no Idempotency-Key, which may come from the kernel). Such
// calls share it, read-only (fetch and net/http copy a request's header
// before they change one), instead of building the same map each time.
// nil when some call's header differs from another's.
func fixedHeader(h *Handler) http.Header {
	if h.spec.Authorization != nil {
		return nil
	}
	hdr := make(http.Header, len(h.headers)+1)
	for _, hd := range h.headers {
		if !hd.tmpl.Static() || hd.name == "Idempotency-Key" {
			return nil
		}
		// Clipped, as every shared header value is: an append elsewhere copies.
		hdr[hd.name] = slices.Clip(append(hdr[hd.name], hd.tmpl.Fill(nil)))
	}
	h.addDefaults(hdr, "")
	return hdr
}

// addDefaults adds the headers httptools sends unless the manifest sets
// them: the body's Content-Type (ct, "" for no body) and the User-Agent.
func (h *Handler) addDefaults(hdr http.Header, ct string) {
	if ct != "" && !h.hasContentType {
		hdr["Content-Type"] = contentTypes[ct]
	}
	if !h.hasUserAgent {
		hdr["User-Agent"] = userAgent
	}
}

// Shared, read-only header values; len == cap, so an append elsewhere copies.
var (
	userAgent    = []string{UserAgent}
	contentTypes = map[string][]string{
		body.ContentTypeJSON: {body.ContentTypeJSON},
		body.ContentTypeText: {body.ContentTypeText},
	}
)

// Handler runs calls of one http tool. It is immutable and safe for
// concurrent use.
type Handler struct {
	spec *Spec

	tmpl           *Template
	origin         origin
	client         Sender
	vars           map[string]string // template variable → gjson path
	consumed       map[string]bool   // top-level input keys the URL uses
	headers        []header
	text           *body.Template
	form           *body.Form // a text body whose Content-Type is a form
	hasContentType bool
	hasUserAgent   bool
	maxBody        int64
	toolID         string
	allowlist      []string // the network allowlist, when restricted
	restricted     bool
	authHeaders    []string    // header-auth names, dropped on cross-host redirects
	credVar        string      // the variable a printed curl writes the credential as
	timeout        *ownTimeout // the tool's timeoutMs, as a context cause: made once
	fixed          http.Header // the header of a call without a body, when every call's is the same (fixedHeader)
}

type header struct {
	name string
	tmpl *body.Template
}

var (
	_ synth.Handler    = (*Handler)(nil)
	_ synth.DryRunner  = (*Handler)(nil)
	_ synth.SecretUser = (*Handler)(nil)
)

// SecretRefs returns the secret the authorization reads, if any.
func (h *Handler) SecretRefs() []synth.SecretRef {
	if a := h.spec.Authorization; a != nil && a.SecretRef != nil {
		return []synth.SecretRef{*a.SecretRef}
	}
	return nil
}

// request is a built request before it is sent.
type request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
	// redactor knows every secret resolved for this request: the call's.
	redactor *redact.Set
	// credential is the resolved secret or token, for a 401 retry;
	// credentialVar the variable that stands for it in a printed curl, in
	// the header credentialHeader.
	credential, credentialVar, credentialHeader string
	// sent is the request as handed to the client: made with it, in one
	// allocation, as are the values of a few headers.
	sent fetch.Request
	vals [4]string
}

// Spec returns a copy of the handler's spec, defaults not filled in.
func (h *Handler) Spec() *Spec {
	c := *h.spec
	c.Headers = slices.Clone(h.spec.Headers)
	if a := h.spec.Authorization; a != nil {
		v := *a
		if a.SecretRef != nil {
			r := *a.SecretRef
			v.SecretRef = &r
		}
		c.Authorization = &v
	}
	if b := h.spec.RequestBody; b != nil {
		v := *b
		c.RequestBody = &v
	}
	if p := h.spec.ParseJSON; p != nil {
		v := *p
		c.ParseJSON = &v
	}
	if r := h.spec.SuccessStatus; r != nil {
		v := *r
		c.SuccessStatus = &v
	}
	return &c
}

// prepare builds the request; rejected is the connection token a first
// attempt got a 401 for.
func (h *Handler) prepare(ctx context.Context, call *synth.Call, rejected string) (*request, error) {
	in := call.Input
	u, err := h.expandURL(in)
	if err != nil {
		return nil, err
	}
	secrets := call.Secrets
	if secrets == nil {
		secrets = &redact.Set{}
	}
	r := &request{Method: h.spec.Method, URL: u, redactor: secrets}
	ct := ""
	switch h.spec.BodyKind() {
	case body.JSONInput:
		r.Body = body.JSONWithout(in, h.consumed)
		if r.Body != nil {
			ct = body.ContentTypeJSON
		}
	case body.InputPassthrough:
		r.Body, ct = in, body.ContentTypeJSON
	case body.Text:
		if h.form != nil {
			f, err := h.form.Fill(in)
			if err != nil {
				return nil, h.inputInvalid("", "cannot be sent as the form body: "+err.Error())
			}
			r.Body = []byte(f)
			break
		}
		r.Body, ct = []byte(h.text.Fill(in)), body.ContentTypeText
	}
	if r.Body == nil && h.fixed != nil {
		r.Header = h.fixed
		return r, nil
	}
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
		v := hd.tmpl.Fill(in)
		if hasLineBreakOrNUL(v) {
			return nil, synth.HandlerError(ReasonInvalidHeader, "header %s: the value filled from the input holds a CR, LF or NUL character; the request was not sent", hd.name)
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
		if prev, ok := r.Header[hd.name]; ok {
			r.Header[hd.name] = append(prev[:len(prev):len(prev)], v)
		} else {
			r.Header[hd.name] = vals[i : i+1 : i+1]
		}
	}
	h.addDefaults(r.Header, ct)
	// The credential goes last, so that no default (User-Agent,
	// Content-Type) can replace it: it reaches the wire as declared.
	if a := h.spec.Authorization; a != nil {
		cred, err := resolveCredential(ctx, a, call.Tool, call.Context, rejected)
		if err != nil {
			return nil, err
		}
		r.redactor.Add(cred.Secret)
		r.credential, r.credentialVar, r.credentialHeader = cred.Secret, h.credVar, http.CanonicalHeaderKey(cred.Header)
		if hasLineBreakOrNUL(cred.Value) {
			return nil, synth.HandlerError(ReasonInvalidHeader, "header %s: the resolved credential holds a CR, LF or NUL character; the request was not sent", cred.Header)
		}
		r.Header.Set(cred.Header, cred.Value)
	}
	return r, nil
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

// expandURL fills the template after checking the input's values: a simple
// {name} needs a present, primitive value.
func (h *Handler) expandURL(in []byte) (string, error) {
	var bad error
	// The values are copied into the URL as it is built; the view of the
	// input does not outlive this call.
	view := unsafe.String(unsafe.SliceData(in), len(in))
	lookup := func(v *VarSpec) Value {
		r := gjson.Get(view, h.vars[v.Name])
		if v.Operator == 0 {
			switch {
			case !r.Exists() || r.Type == gjson.Null:
				if bad == nil {
					bad = synth.HandlerError(ReasonMissingValue, "URL placeholder {%s} has no value: the input must set %q", v.Name, strings.Join(InputKeys(v.Name), "."))
				}
				return Value{}
			case r.IsArray() || r.IsObject():
				if bad == nil {
					bad = synth.HandlerError(ReasonNotPrimitive, "URL placeholder {%s} must be a primitive (string, number or boolean), not an %s; use an operator form such as {?%s*} for lists and objects", v.Name, kindName(r), v.Name)
				}
				return Value{}
			}
		}
		return toValue(r)
	}
	// Where each value went is needed only to tell which input broke a
	// rule, and for reserved expansion ({+x}, {#x}), whose values may hold
	// delimiters: the plain path costs no spans.
	var u string
	var spans []Span
	var err error
	if h.tmpl.Reserved() {
		u, spans, err = h.tmpl.ExpandSpans(lookup)
	} else {
		u, err = h.tmpl.Expand(lookup)
	}
	if bad != nil {
		return "", bad
	}
	if err != nil {
		return "", synth.HandlerError(ReasonInvalidURL, "URL template: %v", err)
	}
	// The host is literal in the template, and expansion encodes every
	// delimiter in values; check again anyway.
	originLen := len(h.origin.scheme) + 3 + len(h.origin.host)
	if len(u) < originLen || !strings.EqualFold(u[:len(h.origin.scheme)], h.origin.scheme) || u[len(h.origin.scheme):len(h.origin.scheme)+3] != "://" ||
		!strings.EqualFold(u[len(h.origin.scheme)+3:originLen], h.origin.host) {
		return "", synth.HandlerError(ReasonInvalidURL, "the expanded URL left the template's origin %s://%s", h.origin.scheme, h.origin.host)
	}
	if rest := u[originLen:]; rest != "" && !strings.ContainsRune("/?#", rune(rest[0])) {
		return "", synth.HandlerError(ReasonInvalidURL, "the expanded URL left the template's origin %s://%s", h.origin.scheme, h.origin.host)
	}
	if bad := dotSegments(u, originLen); len(bad) > 0 {
		if spans == nil {
			_, spans, _ = h.tmpl.ExpandSpans(lookup)
		}
		return "", h.dotSegmentError(u, bad[0], spans)
	}
	if spans != nil {
		if err := h.delimiterError(u, originLen, spans); err != nil {
			return "", err
		}
	}
	return u, nil
}

// delimiterError refuses a value that would end the URL's path or query
// early: a "?" written by an expression of the path (the rest of the path
// becomes a query), or a "#" written by any expression but a fragment one
// (the rest is never sent). Only reserved expansion ({+x}) lets them
// through unencoded.
func (h *Handler) delimiterError(u string, originLen int, spans []Span) error {
	pathEnd := strings.IndexAny(u[originLen:], "?#")
	for _, sp := range spans {
		op := sp.Var.Operator
		if op == '#' {
			continue
		}
		text := u[sp.Start:sp.End]
		inPath := pathEnd < 0 || sp.Start < originLen+pathEnd || (sp.Start == originLen+pathEnd && op != '?' && op != '&')
		var c string
		switch {
		case strings.Contains(text, "#"):
			c = "#"
		case inPath && strings.Contains(text, "?"):
			c = "?"
		default:
			continue
		}
		part := "query"
		if inPath {
			part = "path"
		}
		return h.inputInvalid(inputPointer(sp.Var.Name), fmt.Sprintf("holds %q, which would end the URL's %s there: the rest of the template would not be sent as written", c, part))
	}
	return nil
}

// dotSegmentError refuses input whose value makes a "." or ".." path
// segment, naming the input that wrote it.
func (h *Handler) dotSegmentError(u string, seg [2]int, spans []Span) error {
	ptr := ""
	for _, sp := range spans {
		if sp.Start < seg[1] && sp.End > seg[0] {
			ptr = inputPointer(sp.Var.Name)
			break
		}
	}
	return h.inputInvalid(ptr, fmt.Sprintf("makes the URL path segment %q, which servers resolve as \".\" or \"..\" and so climb out of the template's path: a value in the path must not be \".\" or \"..\"", u[seg[0]:seg[1]]))
}

// inputPointer is the JSON pointer of a template variable's input ("a.b"
// reads /a/b).
func inputPointer(name string) string {
	var b strings.Builder
	for _, k := range InputKeys(name) {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// InputKeys is the input member a URL template variable reads: a.b is
// member b of member a; a percent-encoded character is the character
// (max%2Dkeys reads "max-keys", %24filter reads "$filter", assignee%2Eany
// reads "assignee.any"), so that a parameter whose name RFC 6570 cannot
// spell is sent under its name (servers decode it) and read from a member
// of that name.
func InputKeys(name string) []string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		if d, err := url.PathUnescape(p); err == nil {
			parts[i] = d
		}
	}
	return parts
}

// inputInvalid refuses input for its structure: input-validation-failed,
// reason input-invalid, one violation at ptr.
func (h *Handler) inputInvalid(ptr, msg string) error {
	where := ptr
	if where == "" {
		where = "/"
	}
	return &synth.Error{
		Code: synth.CodeInputValidationFailed, Reason: synth.ReasonInputInvalid,
		Violations: []synth.Violation{{Pointer: ptr, Message: msg}},
		Message:    fmt.Sprintf("Tool %q input failed validation: %s: %s", h.toolID, where, msg),
	}
}

func kindName(r gjson.Result) string {
	if r.IsArray() {
		return "array"
	}
	return "object"
}

// toValue converts an input value for RFC 6570: strings as they are, numbers
// as their JSON text (42, never 42.0; big integers exact), booleans as
// true/false, arrays and objects as lists and maps of those.
func toValue(r gjson.Result) Value {
	switch {
	case !r.Exists() || r.Type == gjson.Null:
		return Value{}
	case r.IsArray():
		v := Value{Kind: List}
		r.ForEach(func(_, it gjson.Result) bool {
			v.List = append(v.List, scalar(it))
			return true
		})
		return v
	case r.IsObject():
		v := Value{Kind: Map}
		r.ForEach(func(k, it gjson.Result) bool {
			v.Map = append(v.Map, KV{k.Str, scalar(it)})
			return true
		})
		return v
	}
	return Value{Kind: String, Str: scalar(r)}
}

func scalar(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		return r.Str
	case gjson.Null:
		return ""
	}
	return r.Raw
}

// Handle runs invoke steps 2–8.
func (h *Handler) Handle(ctx context.Context, call *synth.Call) (*synth.Output, error) {
	start := time.Now()
	own := h.timeout
	if call.Options.Timeout > 0 {
		own = &ownTimeout{d: call.Options.Timeout, what: "the call's timeout option"}
	}
	cctx, cancel := context.WithTimeoutCause(ctx, own.d, own)
	defer cancel()
	dl := deadlines{parent: ctx, call: cctx, own: own, start: start}
	req, err := h.prepare(cctx, call, "")
	if err != nil {
		return nil, dl.timeoutError(err)
	}
	var stream func(int, io.Reader) error
	var small *[]byte // an answer that fit in the first read: not streamed
	if sink := synth.OutputSinkFrom(ctx); sink != nil && h.spec.Parse() && call.Tool.StreamsOutput() {
		small = new([]byte)
		stream = func(status int, body io.Reader) (err error) {
			*small, err = streamJSON(cctx, sink, status, body)
			return err
		}
	}
	resp, err := h.send(cctx, req, call, stream)
	if err == nil && resp.Status == http.StatusUnauthorized && h.spec.Authorization != nil && h.spec.Authorization.Kind == AuthConnection {
		// The token may have been revoked early: refresh once, retry once.
		attempts := resp.Attempts
		if req, err = h.prepare(cctx, call, req.credential); err != nil {
			return nil, dl.timeoutError(err)
		}
		resp, err = h.send(cctx, req, call, stream)
		if resp != nil {
			resp.Attempts += attempts
		}
	}
	if err != nil {
		return nil, h.fetchError(dl, req, err)
	}
	if resp.Streamed {
		if small == nil || *small == nil {
			return &synth.Output{Status: resp.Status, Attempts: resp.Attempts, Streamed: true}, nil
		}
		resp.Body, resp.Streamed = *small, false
	}
	return h.output(req, resp)
}

// streamJSON passes an answer to the call's sink as it arrives, checking it
// as the buffered path does (one value, unique names, the depth and number
// limits). An answer that ends within the first streamBlock bytes is not
// streamed: it is returned whole, for the usual path (and its usual errors).
// A bigger one found broken after the sink has begun is an error: the
// sink's owner cuts its response off.
func streamJSON(ctx context.Context, sink synth.OutputSink, status int, body io.Reader) ([]byte, error) {
	// What the check holds (the read buffer; a long string whole) is drawn
	// on the call's memory budget as it grows, waiting briefly once the
	// call holds part of its answer (see fetch's readCapped).
	hold := budget.FromContext(ctx)
	if err := hold.Take(ctx, 2*streamBlock); err != nil {
		return nil, err
	}
	grow := func(n int64) error { return hold.TakeWithin(ctx, n, time.Second) }
	br := bufio.NewReaderSize(body, streamBlock)
	first, err := br.Peek(streamBlock)
	if err == io.EOF {
		return bytes.Clone(first), nil
	}
	if err != nil {
		return nil, err
	}
	// Nothing has gone to the client yet: an answer already broken within
	// its first block is refused as an error answer, not begun and cut.
	if err := jsoncheck.CheckReader(io.MultiReader(bytes.NewReader(first), prefixEnd{}), jsoncheck.MaxDepth, jsoncheck.Options{AllowInvalidUTF8: true}); !errors.Is(err, errPrefixEnd) {
		var je *jsoncheck.Error
		if errors.As(err, &je) {
			return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonResponseNotJSON, Status: status, Message: notJSON(err)}
		}
	}
	w := &errWriter{w: sink.Begin(status)}
	// What is checked is what is sent: the answer with its invalid UTF-8
	// replaced by U+FFFD, as a held answer is (synth).
	err = jsoncheck.CheckReader(io.TeeReader(jsoncheck.ValidUTF8Reader(br), w), jsoncheck.MaxDepth, jsoncheck.Options{Grow: grow})
	if w.err != nil {
		return nil, fmt.Errorf("writing the answer on: %w", w.err)
	}
	var je *jsoncheck.Error
	if errors.As(err, &je) {
		return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonResponseNotJSON, Status: status,
			Message: notJSON(err) + " (it was being streamed, and was cut off)"}
	}
	return nil, err
}

// prefixEnd ends the first block of a streamed answer for its check: what
// follows has not arrived yet.
type prefixEnd struct{}

var errPrefixEnd = errors.New("the end of the first block")

func (prefixEnd) Read([]byte) (int, error) { return 0, errPrefixEnd }

// streamBlock is the first read of an answer that may stream: one that ends
// within it is handled whole.
const streamBlock = 32 << 10

// errWriter keeps a write error (a client gone) apart from the answer's.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (h *Handler) send(ctx context.Context, r *request, call *synth.Call, stream func(int, io.Reader) error) (*fetch.Response, error) {
	rng := h.spec.Success()
	r.sent = fetch.Request{
		Method: r.Method, URL: r.URL, Header: r.Header, Body: r.Body,
		Allowlist: h.allowlist, Restricted: h.restricted,
		AuthHeaders: h.authHeaders, Secrets: r.redactor,
		MaxBody:    h.maxBody,
		SuccessMin: rng.Min, SuccessMax: rng.Max,
		Tool: h.toolID, Tenant: call.Context.Tenant,
		Logger: call.Options.Logger, LogAttrs: call.Options.LogAttrs,
		Stream: stream,
	}
	return h.client.Do(ctx, &r.sent)
}

func (h *Handler) fetchError(dl deadlines, r *request, err error) error {
	var denied *fetch.DeniedError
	var truncated *fetch.TruncatedError
	var over *budget.OverError
	var own *synth.Error
	switch {
	case errors.As(err, &own):
		return own // a streamed answer found broken
	case errors.As(err, &over):
		return &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonOverloaded, Err: err,
			Message: "the service is at its memory budget and could not hold this answer in time: try again shortly (" + over.Error() + ")"}
	case errors.As(err, &denied):
		hint := "add the host to the manifest's network allowlist if the tool should reach it"
		if denied.IP.IsValid() {
			hint = "the operator can allow the range (httptools call --allow-cidr)"
		}
		return &synth.Error{Code: synth.CodePreconditionFailed, Reason: ReasonEgressDenied, Err: err,
			Message: r.redactor.Redact(fmt.Sprintf("%v; nothing was sent: %s", denied, hint))}
	case errors.Is(err, fetch.ErrTooManyRedirects):
		return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonTooManyRedirects, Err: err,
			Message: r.redactor.Redact(fmt.Sprintf("%s %s: %v", r.Method, redactURL(r.URL), fetch.Describe(err, r.redactor)))}
	case errors.Is(err, fetch.ErrTooLarge):
		return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonResponseTooLarge, Err: err,
			Message: r.redactor.Redact(fmt.Sprintf("the response is larger than the %d-byte cap (%v): raise limits.memMB or ask the API for less", h.cap(), err))}
	case errors.As(err, &truncated) && dl.call.Err() == nil:
		return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonResponseTruncated, Err: err,
			Message: r.redactor.Redact(fmt.Sprintf("%s %s: fetch failed: %v, so the answer is incomplete", r.Method, redactURL(r.URL), truncated))}
	case dl.call.Err() != nil:
		return dl.ended(err)
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE):
		// The service's own limit, not the upstream's fault.
		return &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonOverloaded, Err: err,
			Message: "the service has no file descriptor left to open a connection upstream; nothing was sent: try again shortly (the operator can raise the process's limit, ulimit -n or LimitNOFILE=)"}
	}
	return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonFetchFailed, Err: err,
		Message: r.redactor.Redact(fmt.Sprintf("%s %s failed: %s", r.Method, redactURL(r.URL), fetch.Describe(err, r.redactor)))}
}

// ownTimeout is the cause a call's own deadline ends its context with:
// the manifest's timeoutMs or the caller's timeout option.
type ownTimeout struct {
	d    time.Duration
	what string
}

func (o *ownTimeout) Error() string {
	return fmt.Sprintf("%s of %dms passed", o.what, o.d.Milliseconds())
}

// deadlines are the contexts of one call: the caller's and the call's own
// (the caller's, bounded by ownTimeout).
type deadlines struct {
	parent, call context.Context
	own          *ownTimeout
	start        time.Time
}

// ended words the error of a call whose context has ended, naming what
// ended it: the caller cancelling, the caller's deadline, or the call's
// own timeout.
func (dl deadlines) ended(err error) error {
	elapsed := time.Since(dl.start).Milliseconds()
	var own *ownTimeout
	switch {
	case errors.As(context.Cause(dl.call), &own) || dl.parent.Err() == nil:
		return &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonTimeout, Err: err,
			Message: fmt.Sprintf("timed out after %dms (%s)", dl.own.d.Milliseconds(), dl.own.what)}
	case errors.Is(dl.parent.Err(), context.DeadlineExceeded):
		msg := fmt.Sprintf("timed out after %dms: the caller's deadline passed, before %s of %dms", elapsed, dl.own.what, dl.own.d.Milliseconds())
		return &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonTimeout, Err: err, Message: msg}
	}
	return &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonCanceled, Err: err,
		Message: fmt.Sprintf("the call was canceled by its caller after %dms", elapsed)}
}

// timeoutError is err, or, when the call's context has ended and err is
// not already the library's, the words of ended: a connection refresh or
// a secret store cut off by the deadline says so.
func (dl deadlines) timeoutError(err error) error {
	var e *synth.Error
	if dl.call.Err() == nil || errors.As(err, &e) {
		return err
	}
	return dl.ended(err)
}

func (h *Handler) cap() int64 {
	if h.maxBody > 0 {
		return h.maxBody
	}
	return fetch.DefaultMaxBodyBytes
}

// output runs steps 7 and 8: the status range and the parse.
func (h *Handler) output(r *request, resp *fetch.Response) (*synth.Output, error) {
	rng := h.spec.Success()
	if resp.Status < rng.Min || resp.Status > rng.Max {
		start := excerpt(r.redactor.Redact(string(resp.Body)), 512)
		msg := fmt.Sprintf("upstream answered %d, outside the success range %d–%d", resp.Status, rng.Min, rng.Max)
		if start != "" {
			msg += ": " + start
		}
		return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonUpstreamStatus, Status: resp.Status, Body: start, Message: msg}
	}
	if !h.spec.Parse() {
		out := &synth.Output{Status: resp.Status, Attempts: resp.Attempts}
		if !utf8.Valid(resp.Body) {
			return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonResponseNotText, Status: resp.Status,
				Message: "the response is not valid UTF-8 text, so it cannot be returned as a string"}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(string(resp.Body))
		out.JSON = bytes.TrimRight(b.Bytes(), "\n")
		return out, nil
	}
	raw := bytes.TrimSpace(resp.Body)
	if len(raw) == 0 {
		return &synth.Output{Status: resp.Status, Attempts: resp.Attempts, JSON: json.RawMessage("null")}, nil
	}
	out, err := synth.CheckOutput(raw)
	if err != nil {
		return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonResponseNotJSON, Status: resp.Status,
			Body: excerpt(r.redactor.Redact(string(resp.Body)), 512), Message: notJSON(err)}
	}
	out.Status, out.Attempts = resp.Status, resp.Attempts
	return out, nil
}

// notJSON words an answer jsoncheck refused: a limit it broke, or that it
// is not JSON at all.
func notJSON(err error) string {
	var je *jsoncheck.Error
	if errors.As(err, &je) && je.Kind != jsoncheck.Syntax {
		return "the response " + je.Error()
	}
	return "the response is not valid JSON: set parseJson: false to get it as text"
}

// excerpt returns at most n bytes of s, cut on a UTF-8 boundary.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// redactURL hides user info and the values of query parameters that look
// like credentials.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[unparseable URL]"
	}
	if u.User != nil {
		u.User = url.User(redact.Mask)
	}
	q := u.Query()
	changed := false
	for k := range q {
		if looksSecret(k) {
			q[k] = []string{redact.Mask}
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func looksSecret(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"key", "token", "secret", "password", "passwd", "signature", "sig", "auth", "credential"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
