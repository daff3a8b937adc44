package httpspec

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/httptools/httptools/body"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/synth"
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
		mutating: m.IsMutating(), timeout: &synth.Timeout{D: time.Duration(s.Timeout()) * time.Millisecond, What: "the tool's timeoutMs"}}
	if n := m.Network; n != nil && n.Kind == synth.NetworkAllowlist {
		h.allowlist, h.restricted = n.Hosts, true
	}
	if a := s.Authorization; a != nil && a.Kind == AuthHeader {
		h.authHeaders = []string{http.CanonicalHeaderKey(a.HeaderName)}
	}
	if a := s.Authorization; a != nil && a.Kind == AuthConnection && m.NeedsSpec != nil {
		if need, ok := m.NeedsSpec.Connections[a.Connection]; ok { // checkSpec refused an undeclared one
			need.Permissions = slices.Clone(need.Permissions)
			h.conn = &connection{name: a.Connection, need: need}
		}
	}
	h.streams = s.Parse() && b.StreamsOutput
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
		h.headers = append(h.headers, header{name: name, wire: wireName(hd.Name, name), tmpl: body.NewTemplate(hd.Value)})
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
		if hd.name == "Content-Type" && h.spec.RequestBody != nil {
			continue // the body's type: a call without a body sends none
		}
		// Clipped, as every shared header value is: an append elsewhere copies.
		hdr[hd.wire] = slices.Clip(append(hdr[hd.wire], hd.tmpl.Fill(nil)))
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
	mutating       bool     // an answer outside the success range may follow a write
	allowlist      []string // the network allowlist, when restricted
	restricted     bool
	authHeaders    []string       // header-auth names, dropped on cross-host redirects
	credVar        string         // the variable a printed curl writes the credential as
	timeout        *synth.Timeout // the tool's timeoutMs, as a context cause: made once
	fixed          http.Header    // the header of a call without a body, when every call's is the same (fixedHeader)
	// streams says a JSON answer may go to a call's OutputSink as it
	// arrives: the spec parses JSON and the output schema accepts any
	// value.
	streams bool
	// conn is the connection the authorization names, as needsSpec
	// declares it; nil without a connection.
	conn *connection
}

// connection is a declared connection a tool's calls take a token of.
type connection struct {
	name string
	need synth.ConnectionNeed
}

type header struct {
	name string // canonical: what the code compares
	// wire is the key the request's header map holds and sends: the
	// manifest's own spelling (X-GitHub-Api-Version, which the dry run
	// shows as written), or the canonical one for a header this package,
	// package fetch or net/http reads or strips (a credential, the
	// content type, the user agent, the idempotency key).
	wire string
	tmpl *body.Template
}

// canonicalOnly are the headers whose key stays canonical in a request:
// code looks them up or strips them by that key (a redirect drops
// Authorization and Cookie and sets Referer; the defaults test
// Content-Type and User-Agent; net/http's transport reads Accept-Encoding,
// Range and Expect). Hop-by-hop headers and a static copy of the
// credential's header never get here: checkHeaders refuses them at load.
var canonicalOnly = map[string]bool{
	"Authorization": true, "Cookie": true, "Proxy-Authorization": true, "Content-Type": true, "User-Agent": true,
	"Idempotency-Key": true, "Accept-Encoding": true, "Range": true, "Expect": true, "Referer": true,
}

// wireName is the key a manifest's header is sent under: as written, or
// canonical.
func wireName(written, canonical string) string {
	if canonicalOnly[canonical] {
		return canonical
	}
	return written
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

// Host is the literal host of the handler's URL template, lower case,
// without port or brackets: the upstream its calls go to first.
func (h *Handler) Host() string { return h.origin.name }

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
