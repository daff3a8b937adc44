package mcpremote

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// callState is what one call carries from one try to the next: its
// deadlines, its credential and the connection token the server refused.
// It holds no context: each step is given the call's.
type callState struct {
	call   *synth.Call
	own    *synth.Timeout // the call's timeout: the tool's, or the call's option
	dl     synth.Deadlines
	cancel context.CancelFunc // ends the call's present context
	cred   httpspec.Credential
	// rejected is the connection token the server just refused, "" until
	// it refuses one.
	rejected string
	tries    oauthTries
}

// next is where a try that did not answer leads: the call's error, another
// try, or an authorization (then another try).
type next struct {
	err       error
	again     bool
	authorize *challenge // the server's OAuth challenge to answer first
}

// Handle calls the remote tool with the call's input: it resolves the
// credential, then tries until a session answers (a forgotten session, a
// refreshed token, an authorization and a broken read-only call go again).
func (h *Handler) Handle(ctx context.Context, call *synth.Call) (*synth.Output, error) {
	st := &callState{call: call, own: h.timeout}
	if call.Options.Timeout > 0 {
		st.own = &synth.Timeout{D: call.Options.Timeout, What: "the call's timeout option"}
	}
	outer := ctx
	ctx, st.dl, st.cancel = synth.WithTimeout(outer, st.own)
	defer func() { st.cancel() }()
	if err := h.firstCredential(ctx, st); err != nil {
		return nil, err
	}
	params := &mcp.CallToolParams{Name: h.remote, Arguments: call.Input}
	for try := 1; ; try++ {
		out, nx := h.try(ctx, st, params, try)
		switch {
		case nx.authorize != nil:
			// The server's OAuth challenge is answered outside the call's
			// timeout (a person may be at the authorization page), which
			// then starts again for the call's own work.
			c, err := h.authorize(outer, call, nx.authorize, &st.tries)
			if err != nil {
				return nil, err
			}
			st.cred = c
			st.cancel()
			ctx, st.dl, st.cancel = synth.WithTimeout(outer, st.own)
		case nx.again:
		default:
			return out, nx.err
		}
	}
}

// firstCredential resolves the tool's authorization, or, for a tool an
// Authorizer serves, the token it holds.
func (h *Handler) firstCredential(ctx context.Context, st *callState) error {
	if err := h.resolve(ctx, st); err != nil {
		return err
	}
	if h.oauth() {
		c, err := h.heldToken(ctx, st.call)
		if err != nil {
			return st.dl.TimeoutError(ctx, err)
		}
		st.cred = c
	}
	return nil
}

// resolve resolves the tool's authorization into st.cred (after a
// refused token, a fresh one), when it has one.
func (h *Handler) resolve(ctx context.Context, st *callState) error {
	if h.auth == nil {
		return nil
	}
	c, err := h.credential(ctx, st.call, st.rejected)
	if err != nil {
		return st.dl.TimeoutError(ctx, err)
	}
	st.cred = c
	return nil
}

// refresh notes the credential the server refused and resolves a fresh
// one for another try.
func (h *Handler) refresh(ctx context.Context, st *callState) next {
	st.rejected = st.cred.Secret
	if err := h.resolve(ctx, st); err != nil {
		return next{err: err}
	}
	return next{again: true}
}

// try is one try of the call: a session (opened when there is none, its
// listing checked for drift), then the call on it.
func (h *Handler) try(ctx context.Context, st *callState, params *mcp.CallToolParams, try int) (*synth.Output, next) {
	s, nx := h.session(ctx, st, try)
	if s == nil {
		return nil, nx
	}
	res, err := s.cs.CallTool(ctx, params)
	h.syn.pool.done(s)
	if err != nil {
		return nil, h.callFailed(ctx, st, s, err, try)
	}
	out, err := h.output(res, st.call)
	return out, next{err: err}
}

// session returns the call's session, ready and checked against the pin
// (drift.go), or, when there is none, where the try leads.
func (h *Handler) session(ctx context.Context, st *callState, try int) (*session, next) {
	call, cred := st.call, st.cred
	s, err := h.syn.pool.get(ctx, h.key(call.Context.Tenant, cred), func(s *session) error {
		return h.open(ctx, s, call, cred)
	})
	if err != nil {
		return nil, h.openFailed(ctx, st, err, try)
	}
	if err := h.vet(ctx, s); err != nil {
		h.syn.pool.done(s)
		return nil, h.vetFailed(ctx, st, s, err, try)
	}
	return s, next{}
}

// openFailed is where a session that could not be opened leads.
func (h *Handler) openFailed(ctx context.Context, st *callState, err error, try int) next {
	if ctx.Err() != nil {
		return next{err: st.dl.Ended(ctx, err)}
	}
	var late *lateError
	if errors.As(err, &late) && try < 3 {
		return next{again: true} // another call's deadline cut the handshake this one waited for
	}
	var se *scopeError
	if errors.As(err, &se) {
		return next{err: h.stepUp(ctx, st.call, se.ch)}
	}
	var u *unauthorizedError
	if errors.As(err, &u) && u.ch != nil && h.oauth() {
		return next{authorize: u.ch}
	}
	if h.refusedToken(err, st.cred, st.rejected) {
		return h.refresh(ctx, st)
	}
	return next{err: h.openError(err, st.call)}
}

// vetFailed is where a session whose listing refuses the call leads.
func (h *Handler) vetFailed(ctx context.Context, st *callState, s *session, err error, try int) next {
	var le *listError
	if !errors.As(err, &le) {
		return next{err: err}
	}
	if ctx.Err() != nil {
		return next{err: st.dl.Ended(ctx, err)}
	}
	// Listing again after a reload failed (the server forgot the session,
	// a token expired): a new session lists afresh.
	h.syn.pool.drop(s)
	if try < 3 {
		return next{again: true}
	}
	return next{err: h.openError(err, st.call)}
}

// callFailed is where a call that got no result leads: the session is
// dropped (but when the call timed out or the server refused the call)
// and the call goes again when the server did not run it, or the tool
// changes nothing.
func (h *Handler) callFailed(ctx context.Context, st *callState, s *session, err error, try int) next {
	if ctx.Err() != nil {
		if h.ep.Transport == "stdio" {
			h.syn.pool.background(func(stop <-chan struct{}) { h.checkAlive(stop, s) })
		}
		return next{err: st.dl.Ended(ctx, err)}
	}
	if nx, ok := h.sessionRefused(ctx, st, s, err); ok {
		return nx
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && rpc.Code != codeClientClosing && rpc.Code != codeServerClosing && rpc.Code != codeRejected {
		// The server's message is its words: Outside, which the service's
		// doors mark as outside data.
		refused := synth.HandlerError(ReasonRemoteRefused, "the MCP server %s refused the call of tool %q (code %d)", h.where(), h.remote, rpc.Code)
		refused.Outside = st.call.Secrets.Redact(clip(rpc.Message))
		return next{err: refused}
	}
	h.syn.pool.drop(s)
	switch {
	case errors.Is(err, mcp.ErrSessionMissing) && try < 3:
		// The server forgot the session: it did not run the call, which
		// goes again on a new one.
		return next{again: true}
	case !h.mutating && try < 2:
		// Broken during the call: a tool that changes nothing may be
		// called again.
		return next{again: true}
	}
	return next{err: h.brokenError(err, st.call)}
}

// sessionRefused is where a call leads whose session the transport marked
// refused (an OAuth challenge, a 401, an answer cut at the cap), and
// whether it was: such a session is dropped.
func (h *Handler) sessionRefused(ctx context.Context, st *callState, s *session, err error) (next, bool) {
	ch := s.challenge.Load()
	switch {
	case h.oauth() && ch != nil:
		h.syn.pool.drop(s)
		return next{authorize: ch}, true
	case h.refusedForScope(ch):
		// More scopes than the connection holds: a step-up, which a
		// person must grant (oauth.go).
		h.syn.pool.drop(s)
		return next{err: h.stepUp(ctx, st.call, ch)}, true
	case s.unauthorized.Load():
		h.syn.pool.drop(s)
		if h.need != nil && st.rejected == "" {
			return h.refresh(ctx, st), true
		}
		return next{err: synth.HandlerError(ReasonRemoteUnauthorized, "the MCP server %s refused the tool's credential (401): %s", h.where(), h.credHint())}, true
	case s.tooLarge.Load():
		h.syn.pool.drop(s)
		return next{err: h.tooLargeError(err)}, true
	}
	return next{}, false
}

// refusedForScope says the server's challenge ch to a connection's token
// asks for more scopes than it holds (a 403).
func (h *Handler) refusedForScope(ch *challenge) bool {
	return h.need != nil && ch != nil && ch.status == http.StatusForbidden
}

// tooLargeError words an answer cut at the tool's cap.
func (h *Handler) tooLargeError(err error) error {
	return &synth.Error{Code: synth.CodeHandlerError, Reason: httpspec.ReasonResponseTooLarge, Err: err,
		Message: fmt.Sprintf("the MCP server %s answered more than the tool's cap of %d bytes (limits.memMB, else the runtime's cap): the answer was cut off and the session closed", h.where(), h.maxBody)}
}

// brokenError words a session that broke during a call not sent again.
func (h *Handler) brokenError(err error, call *synth.Call) error {
	what := "the session broke during the call"
	if h.mutating {
		what += "; the tool is mutating, so it was not sent again (it may have run)"
	}
	return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonRemoteUnreachable, Err: err,
		Message: fmt.Sprintf("calling tool %q on the MCP server %s: %s", h.remote, h.where(), what), Outside: describe(err, call)}
}
