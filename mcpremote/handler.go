package mcpremote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// Reasons of the mcp kind's errors (synth.Error.Reason), beside the ones
// every kind shares.
const (
	// ReasonRemoteToolError: the remote tool answered with isError; the
	// message carries its text.
	ReasonRemoteToolError = "remote-tool-error"
	// ReasonRemoteRefused: the server refused the call with a JSON-RPC
	// error (an unknown tool, arguments it rejects).
	ReasonRemoteRefused = "remote-refused"
	// ReasonRemoteUnreachable: no session could be opened, or it broke
	// during the call.
	ReasonRemoteUnreachable = "remote-unreachable"
	// ReasonRemoteUnauthorized: the server answered 401 to the credential.
	ReasonRemoteUnauthorized = "remote-unauthorized"
	// ReasonRemoteDrifted: the server lists the remote tool otherwise than
	// when the handler first listed it (its title, description, schemas,
	// annotations, _meta or icons), no longer lists it, or lists it twice,
	// differently; the call was not sent. The message names what changed, never the new text.
	ReasonRemoteDrifted = "remote-drifted"
)

// The SDK's own codes for a message that never got an answer: the
// transport failed (rejected), or a side was closing. Any other JSON-RPC
// error is the server's.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// Version is what httptools tells the servers it calls.
var implementation = &mcp.Implementation{Name: "httptools", Version: fetch.Version}

// Handler calls one remote tool. It is immutable (but for its pin and
// drift state) and safe for concurrent use.
type Handler struct {
	syn        *Synthesizer
	ep         *synth.MCPEndpoint
	url        url.URL // the server's, scheme decided; zero for stdio
	remote     string  // the remote tool's name
	toolID     string
	auth       *httpspec.Authorization
	need       *synth.ConnectionNeed
	timeout    *synth.Timeout // the tool's timeoutMs, as a context cause: made once
	mutating   bool
	input      json.RawMessage // the manifest's input schema, for drift
	allowlist  []string
	restricted bool
	maxBody    int64

	// pin is what a model reads of the remote tool (drift.go's view) as
	// the handler first listed it; nil until then. It outlives reloads
	// that keep the handler: a changed manifest is a new handler.
	pin atomic.Pointer[view]
	// since is the synthesizer's drift epoch of the last CheckDriftAgain:
	// a session's listing older than it is listed again.
	since atomic.Uint64
	// logged is the drift notes last logged, so that every session
	// listing the same drift logs it once.
	logged atomic.Pointer[string]
}

var (
	_ synth.Handler    = (*Handler)(nil)
	_ synth.DryRunner  = (*Handler)(nil)
	_ synth.SecretUser = (*Handler)(nil)
)

// CheckDriftAgain makes the next call on each session list the server's
// tools again and compare the remote tool with the manifest and the pin,
// logging the notes anew (a reload). It keeps the pin.
func (h *Handler) CheckDriftAgain() {
	h.logged.Store(nil)
	h.since.Store(h.syn.epoch.Add(1))
}

// RemoteTool is the name the tool is called by on its server.
func (h *Handler) RemoteTool() string { return h.remote }

// Endpoint is the tool's server.
func (h *Handler) Endpoint() *synth.MCPEndpoint { return h.ep }

// Host is the server's host, "" for a stdio server: the upstream the
// tool's calls go to, for policies.
func (h *Handler) Host() string { return h.url.Hostname() }

// Authorization is the tool's credential as its spec writes it, nil for
// none.
func (h *Handler) Authorization() *httpspec.Authorization {
	if h.auth == nil {
		return nil
	}
	a := *h.auth
	return &a
}

// SecretRefs names the secret the authorization sends, if any.
func (h *Handler) SecretRefs() []synth.SecretRef {
	if h.auth != nil && h.auth.SecretRef != nil {
		return []synth.SecretRef{*h.auth.SecretRef}
	}
	return nil
}

// Handle calls the remote tool with the call's input.
func (h *Handler) Handle(ctx context.Context, call *synth.Call) (*synth.Output, error) {
	own := h.timeout
	if call.Options.Timeout > 0 {
		own = &synth.Timeout{D: call.Options.Timeout, What: "the call's timeout option"}
	}
	outer := ctx
	ctx, dl, cancel := synth.WithTimeout(ctx, own)
	defer func() { cancel() }()
	// authorized answers the server's OAuth challenge ch outside the call's
	// timeout (a person may be at the authorization page), then starts the
	// timeout again for the call's own work.
	authorized := func(ch *challenge, tries *oauthTries) (httpspec.Credential, error) {
		c, err := h.authorize(outer, call, ch, tries)
		if err == nil {
			cancel()
			ctx, dl, cancel = synth.WithTimeout(outer, own)
		}
		return c, err
	}

	var cred httpspec.Credential
	rejected := ""
	resolve := func() error {
		if h.auth == nil {
			return nil
		}
		c, err := h.credential(ctx, call, rejected)
		if err != nil {
			return dl.TimeoutError(ctx, err)
		}
		cred = c
		return nil
	}
	if err := resolve(); err != nil {
		return nil, err
	}
	var tries oauthTries
	if h.oauth() {
		c, err := h.heldToken(ctx, call)
		if err != nil {
			return nil, dl.TimeoutError(ctx, err)
		}
		cred = c
	}
	params := &mcp.CallToolParams{Name: h.remote, Arguments: call.Input}
	for try := 1; ; try++ {
		s, err := h.syn.pool.get(ctx, h.key(call.Context.Tenant, cred), func(s *session) error {
			return h.open(ctx, s, call, cred)
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, dl.Ended(ctx, err)
			}
			var late *lateError
			if errors.As(err, &late) && try < 3 {
				continue // another call's deadline cut the handshake this one waited for
			}
			var se *scopeError
			if errors.As(err, &se) {
				return nil, h.stepUp(ctx, call, se.ch)
			}
			var u *unauthorizedError
			if errors.As(err, &u) && u.ch != nil && h.oauth() {
				if cred, err = authorized(u.ch, &tries); err != nil {
					return nil, err
				}
				continue
			}
			if h.refusedToken(err, cred, rejected) {
				rejected = cred.Secret
				if err := resolve(); err != nil {
					return nil, err
				}
				continue
			}
			return nil, h.openError(err, call)
		}
		if err := h.vet(ctx, s); err != nil {
			s.done()
			var le *listError
			if errors.As(err, &le) {
				if ctx.Err() != nil {
					return nil, dl.Ended(ctx, err)
				}
				// Listing again after a reload failed (the server forgot the
				// session, a token expired): a new session lists afresh.
				h.syn.pool.drop(s)
				if try < 3 {
					continue
				}
				return nil, h.openError(err, call)
			}
			return nil, err
		}
		res, err := s.cs.CallTool(ctx, params)
		s.done()
		if err == nil {
			return h.output(res, call)
		}
		var rpc *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			if h.ep.Transport == "stdio" {
				go h.checkAlive(s)
			}
			return nil, dl.Ended(ctx, err)
		case h.oauth() && s.challenge.Load() != nil:
			h.syn.pool.drop(s)
			if cred, err = authorized(s.challenge.Load(), &tries); err != nil {
				return nil, err
			}
			continue
		case h.need != nil && s.challenge.Load() != nil && s.challenge.Load().status == http.StatusForbidden:
			// More scopes than the connection holds: a step-up, which a
			// person must grant (oauth.go).
			h.syn.pool.drop(s)
			return nil, h.stepUp(ctx, call, s.challenge.Load())
		case s.unauthorized.Load():
			h.syn.pool.drop(s)
			if h.need != nil && rejected == "" {
				rejected = cred.Secret
				if err := resolve(); err != nil {
					return nil, err
				}
				continue
			}
			return nil, synth.HandlerError(ReasonRemoteUnauthorized, "the MCP server %s refused the tool's credential (401): %s", h.where(), h.credHint())
		case s.tooLarge.Load():
			h.syn.pool.drop(s)
			return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: httpspec.ReasonResponseTooLarge, Err: err,
				Message: fmt.Sprintf("the MCP server %s answered more than the tool's cap of %d bytes (limits.memMB, else the runtime's cap): the answer was cut off and the session closed", h.where(), h.maxBody)}
		case errors.As(err, &rpc) && rpc.Code != codeClientClosing && rpc.Code != codeServerClosing && rpc.Code != codeRejected:
			// The server's message is its words: Outside, which the
			// service's doors mark as outside data.
			refused := synth.HandlerError(ReasonRemoteRefused, "the MCP server %s refused the call of tool %q (code %d)", h.where(), h.remote, rpc.Code)
			refused.Outside = call.Secrets.Redact(clip(rpc.Message))
			return nil, refused
		case errors.Is(err, mcp.ErrSessionMissing) && try < 3:
			// The server forgot the session: it did not run the call,
			// which goes again on a new one.
			h.syn.pool.drop(s)
			continue
		case !h.mutating && try < 2:
			// Broken during the call: a tool that changes nothing may
			// be called again.
			h.syn.pool.drop(s)
			continue
		}
		h.syn.pool.drop(s)
		what := "the session broke during the call"
		if h.mutating {
			what += "; the tool is mutating, so it was not sent again (it may have run)"
		}
		return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonRemoteUnreachable, Err: err,
			Message: fmt.Sprintf("calling tool %q on the MCP server %s: %s", h.remote, h.where(), what), Outside: describe(err, call)}
	}
}

// credential resolves the tool's authorization for call (rejected: the
// connection token the server just refused, "" on a first try), refuses
// one no header can carry, and adds its secret to the call's redactor.
func (h *Handler) credential(ctx context.Context, call *synth.Call, rejected string) (httpspec.Credential, error) {
	c, err := h.auth.Resolve(ctx, call.Context, h.need, h.toolID, rejected)
	if err != nil {
		return httpspec.Credential{}, err
	}
	if strings.ContainsAny(c.Value, "\r\n\x00") {
		return httpspec.Credential{}, synth.HandlerError(httpspec.ReasonInvalidHeader, "header %s: the resolved credential holds a CR, LF or NUL character; nothing was sent", c.Header)
	}
	call.Secrets.Add(c.Secret)
	return c, nil
}

// where names the server in messages: its URL without query, or its
// command.
func (h *Handler) where() string {
	if h.ep.Transport == "stdio" {
		return h.ep.Command[0]
	}
	u := h.url
	u.RawQuery, u.ForceQuery = "", false
	return u.String()
}

func (h *Handler) credHint() string {
	switch {
	case h.auth == nil:
		return "the tool sends none: add spec.authorization"
	case h.auth.SecretRef != nil:
		return fmt.Sprintf("check secret %s", h.auth.SecretRef)
	}
	return fmt.Sprintf("connection %q was refreshed and still refused: connect it again", h.auth.Connection)
}

// refusedToken says the session could not be opened because the server
// refused a connection's token that was not yet refreshed.
func (h *Handler) refusedToken(err error, cred httpspec.Credential, rejected string) bool {
	var u *unauthorizedError
	return errors.As(err, &u) && h.need != nil && rejected == "" && cred.Secret != ""
}

// key is the pool's key of a call's session: the tenant, the endpoint, the
// credential (a digest) and the allowlist.
func (h *Handler) key(tenant string, cred httpspec.Credential) string {
	var b strings.Builder
	b.WriteString(tenant)
	b.WriteByte(0)
	b.WriteString(h.ep.Transport)
	b.WriteByte(0)
	if h.ep.Transport == "stdio" {
		b.WriteString(strings.Join(h.ep.Command, " "))
		b.WriteByte(0)
		fmt.Fprint(&b, h.maxBody) // the process's output cap
		return b.String()
	}
	b.WriteString(h.url.String())
	b.WriteByte(0)
	if cred.Header != "" {
		sum := sha256.Sum256([]byte(cred.Header + "\x00" + cred.Value))
		b.WriteString(hex.EncodeToString(sum[:]))
	}
	b.WriteByte(0)
	if h.restricted {
		b.WriteString(strings.Join(h.allowlist, ","))
	} else {
		b.WriteString("*")
	}
	b.WriteByte(0)
	fmt.Fprint(&b, h.maxBody)
	return b.String()
}

// open opens the session s of a call: its first caller's deadline bounds
// the handshake, not the session.
func (h *Handler) open(callCtx context.Context, s *session, call *synth.Call, cred httpspec.Credential) error {
	// The session outlives the call that opens it: its context keeps only
	// the call's span, for the handshake's spans.
	sctx, stop := context.WithCancel(trace.ContextWithSpan(context.Background(), trace.SpanFromContext(callCtx)))
	s.stop = stop
	var late atomic.Bool // the handshake outlived the first caller's deadline
	if dl, ok := callCtx.Deadline(); ok {
		t := time.AfterFunc(time.Until(dl), func() { late.Store(true); stop() })
		defer t.Stop()
	}
	var transport mcp.Transport
	switch h.ep.Transport {
	case "stdio":
		t, err := h.syn.startProcess(h.ep.Command, call.Context.Tenant, h.maxBody)
		if err != nil {
			return err
		}
		prev := s.stop
		s.stop = func() { prev(); t.stop() }
		transport = t.transport
	default:
		secrets := call.Secrets
		hc := h.syn.cfg.Client.SessionClient(fetch.Session{
			Allowlist: h.allowlist, Restricted: h.restricted, Secrets: secrets, MaxBody: h.maxBody,
			Tool: h.toolID, Tenant: call.Context.Tenant, AuthHeaders: authHeaders(cred),
		})
		hc.Transport = &credTransport{next: hc.Transport, scheme: h.url.Scheme, host: h.url.Host, cred: cred, s: s}
		if h.ep.Transport == "sse" {
			transport = &mcp.SSEClientTransport{Endpoint: h.url.String(), HTTPClient: hc, MaxEventSize: int(h.maxBody)}
		} else {
			transport = &mcp.StreamableClientTransport{Endpoint: h.url.String(), HTTPClient: hc, MaxEventSize: int(h.maxBody),
				DisableStandaloneSSE: true, MaxRetries: 2}
		}
	}
	cs, err := mcp.NewClient(implementation, nil).Connect(sctx, transport, nil)
	if err != nil {
		stop()
		switch {
		case s.unauthorized.Load():
			return &unauthorizedError{err, s.challenge.Load()}
		case h.need != nil && s.challenge.Load() != nil && s.challenge.Load().status == http.StatusForbidden:
			return &scopeError{err, s.challenge.Load()} // a step-up (oauth.go)
		case late.Load():
			return &lateError{err}
		}
		return err
	}
	// Every call is checked against its session's listing before it is
	// sent (drift.go): the session is ready once its tools are listed.
	l, err := list(sctx, cs, h.syn.epoch.Load())
	if err != nil {
		cs.Close()
		stop()
		if late.Load() {
			return &lateError{err}
		}
		if ch := s.challenge.Load(); ch != nil && h.oauth() {
			return &unauthorizedError{err, ch} // initialize was open, tools/list is not
		}
		return &listError{err}
	}
	s.listing.Store(l)
	s.cs = cs
	s.lastUsed.Store(time.Now().UnixNano())
	return nil
}

// lateError is a handshake cut off by the deadline of the call that
// started it: a call still in time that waited for it opens another.
type lateError struct{ err error }

func (e *lateError) Error() string { return e.err.Error() }
func (e *lateError) Unwrap() error { return e.err }

// unauthorizedError is a session the server refused with 401 (or, for an
// Authorizer, a 403 asking for more scopes), with its challenge when it
// gave one.
type unauthorizedError struct {
	err error
	ch  *challenge
}

func (e *unauthorizedError) Error() string { return e.err.Error() }
func (e *unauthorizedError) Unwrap() error { return e.err }

func authHeaders(cred httpspec.Credential) []string {
	if cred.Header == "" {
		return nil
	}
	return []string{cred.Header}
}

// openError words a session that could not be opened.
func (h *Handler) openError(err error, call *synth.Call) error {
	var e *synth.Error
	if errors.As(err, &e) {
		return e
	}
	var de *fetch.DeniedError
	if errors.As(err, &de) {
		return &synth.Error{Code: synth.CodeHandlerError, Reason: httpspec.ReasonEgressDenied, Err: err,
			Message: fmt.Sprintf("the outbound guard refused a request to the MCP server %s, so nothing was sent", h.where()), Outside: call.Secrets.Redact(de.Error())}
	}
	var late *lateError
	if errors.As(err, &late) {
		return &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonTimeout, Err: err,
			Message: fmt.Sprintf("the MCP server %s did not finish the handshake (initialize) within the call's time", h.where())}
	}
	var u *unauthorizedError
	if errors.As(err, &u) {
		return synth.HandlerError(ReasonRemoteUnauthorized, "the MCP server %s refused the tool's credential (401): %s", h.where(), h.credHint())
	}
	var le *listError
	if errors.As(err, &le) {
		return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonRemoteUnreachable, Err: err,
			Message: fmt.Sprintf("the MCP server %s did not list its tools, against which every call is checked first; nothing was sent", h.where()), Outside: describe(le.err, call)}
	}
	return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonRemoteUnreachable, Err: err,
		Message: fmt.Sprintf("could not open a session with the MCP server %s", h.where()), Outside: describe(err, call)}
}

// describe words a failure of the SDK or the transport, redacted and cut.
func describe(err error, call *synth.Call) string {
	var de *fetch.DeniedError
	if errors.As(err, &de) {
		return call.Secrets.Redact(de.Error())
	}
	return clip(call.Secrets.Redact(err.Error()))
}

// clip cuts a remote text to what a message should hold.
func clip(s string) string {
	const n = 2000
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// credTransport sends the credential to the endpoint's own scheme and
// host only, and notes a 401.
type credTransport struct {
	next         http.RoundTripper
	scheme, host string
	cred         httpspec.Credential
	s            *session
}

func (t *credTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.cred.Header != "" && r.URL.Scheme == t.scheme && strings.EqualFold(r.URL.Host, t.host) {
		r = r.Clone(r.Context())
		r.Header.Set(t.cred.Header, t.cred.Value)
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		if errors.Is(err, fetch.ErrTooLarge) {
			t.s.tooLarge.Store(true)
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		t.s.unauthorized.Store(true)
	}
	noteChallenge(t.s, resp)
	resp.Body = &noteBody{ReadCloser: resp.Body, s: t.s}
	return resp, nil
}

// noteBody notes on its session an answer cut at its cap.
type noteBody struct {
	io.ReadCloser
	s *session
}

func (b *noteBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && errors.Is(err, fetch.ErrTooLarge) {
		b.s.tooLarge.Store(true)
	}
	return n, err
}

// output turns the remote result into the tool's output.
func (h *Handler) output(res *mcp.CallToolResult, call *synth.Call) (*synth.Output, error) {
	if res.IsError {
		text := call.Secrets.Redact(clip(resultText(res)))
		if text == "" {
			text = "(no text)"
		}
		toolErr := synth.HandlerError(ReasonRemoteToolError, "the remote tool %q answered with an error", h.remote)
		toolErr.Outside = text
		return nil, toolErr
	}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, synth.HandlerError(synth.ReasonResponseNotJSON, "the remote tool's structuredContent: %v", err)
		}
		return &synth.Output{JSON: raw}, nil
	}
	onlyText := len(res.Content) > 0
	for _, c := range res.Content {
		if _, ok := c.(*mcp.TextContent); !ok {
			onlyText = false
		}
	}
	if onlyText {
		text := resultText(res)
		if json.Valid([]byte(text)) {
			return &synth.Output{JSON: json.RawMessage(strings.TrimSpace(text))}, nil
		}
		raw, _ := json.Marshal(text)
		return &synth.Output{JSON: raw}, nil
	}
	raw, err := json.Marshal(res.Content)
	if err != nil {
		return nil, synth.HandlerError(synth.ReasonResponseNotJSON, "the remote tool's content: %v", err)
	}
	return &synth.Output{JSON: raw}, nil
}

// resultText joins the text blocks of a result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// DryRun describes the call without making it: the server, the remote
// tool, the arguments and the credential's header (its value masked).
func (h *Handler) DryRun(ctx context.Context, call *synth.Call) (json.RawMessage, error) {
	d := map[string]any{
		"transport": h.ep.Transport,
		"tool":      h.remote,
		"arguments": call.Input,
	}
	if h.ep.Transport == "stdio" {
		d["command"] = h.ep.Command
	} else {
		d["url"] = h.url.String()
	}
	if h.auth != nil {
		switch h.auth.Kind {
		case httpspec.AuthHeader:
			d["credential"] = http.CanonicalHeaderKey(h.auth.HeaderName) + ": ***"
		default:
			d["credential"] = "Authorization: Bearer ***"
		}
	}
	return json.Marshal(d)
}
