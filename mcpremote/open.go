package mcpremote

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

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
	h.syn.pool.used(s)
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
