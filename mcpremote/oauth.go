package mcpremote

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/mcpauth"
	"github.com/httptools/httptools/synth"
)

// challenge is a server's OAuth refusal of a session's request: a 401, or
// a 403 asking for more scopes (insufficient_scope).
type challenge struct {
	status int
	values []string // WWW-Authenticate
}

// noteChallenge keeps on s the refusal resp carries, if it is one an
// Authorizer answers.
func noteChallenge(s *session, resp *http.Response) {
	values := resp.Header.Values("WWW-Authenticate")
	switch resp.StatusCode {
	case http.StatusUnauthorized:
	case http.StatusForbidden:
		if ch, err := mcpauth.ParseChallenge(values); err != nil || !ch.InsufficientScope() {
			return
		}
	default:
		return
	}
	s.challenge.Store(&challenge{status: resp.StatusCode, values: values})
}

// oauth says the handler's refusals go to the synthesizer's Authorizer: a
// network server, a tool with no authorization of its own.
func (h *Handler) oauth() bool {
	return h.syn.cfg.Authorizer != nil && h.auth == nil && h.ep.Transport != "stdio"
}

// oauthTries is what a call has asked of the Authorizer.
type oauthTries struct{ authorized, steppedUp bool }

// authRequest is the Authorizer's view of the call (status 0, no
// challenge: a held token is asked).
func (h *Handler) authRequest(call *synth.Call, ch *challenge) *mcpauth.Request {
	r := &mcpauth.Request{
		Endpoint: h.url.String(), Person: call.Context.Person,
		Egress: mcpauth.Egress{Allowlist: h.allowlist, Restricted: h.restricted, Tool: h.toolID, Tenant: call.Context.Tenant},
	}
	if ch != nil {
		r.Status, r.WWWAuthenticate = ch.status, ch.values
	}
	return r
}

// heldToken is the bearer the Authorizer already holds for the call's
// server and person, the zero Credential for none.
func (h *Handler) heldToken(ctx context.Context, call *synth.Call) (httpspec.Credential, error) {
	tok, err := h.syn.cfg.Authorizer.Token(ctx, h.authRequest(call, nil))
	if err != nil || tok == "" {
		return httpspec.Credential{}, err
	}
	return bearer(tok, call), nil
}

// authorize answers the server's challenge ch through the Authorizer: once
// per call for a 401, once more for a step-up.
func (h *Handler) authorize(ctx context.Context, call *synth.Call, ch *challenge, tries *oauthTries) (httpspec.Credential, error) {
	stepUp := ch.status == http.StatusForbidden
	switch {
	case stepUp && tries.steppedUp:
		return httpspec.Credential{}, synth.HandlerError(ReasonRemoteUnauthorized, "the MCP server %s still asks for more scopes (403 insufficient_scope) after a step-up in this call: ask its operator which scopes the tool needs", h.where())
	case !stepUp && tries.authorized:
		return httpspec.Credential{}, synth.HandlerError(ReasonRemoteUnauthorized, "the MCP server %s refused (401) the token it was just authorized for", h.where())
	}
	tries.authorized = true
	tries.steppedUp = tries.steppedUp || stepUp
	tok, err := h.syn.cfg.Authorizer.Authorize(ctx, h.authRequest(call, ch))
	if err != nil {
		e := synth.HandlerError(ReasonRemoteUnauthorized, "the MCP server %s asks for OAuth authorization, which failed: %s", h.where(), call.Secrets.Redact(err.Error()))
		e.Err = err
		return httpspec.Credential{}, e
	}
	return bearer(tok, call), nil
}

// bearer is a token as the Authorization header carries it, added to the
// call's redactor.
func bearer(tok string, call *synth.Call) httpspec.Credential {
	call.Secrets.Add(tok)
	return httpspec.Credential{Header: "Authorization", Value: "Bearer " + tok, Secret: tok}
}

// stepUp answers a 403 insufficient_scope to a connection's token: the
// connection is told the scopes its server asked for (so that its next
// authorization asks them: synth.ConnectionStepUp), and the call fails
// connection-permission-missing — which a person cures by connecting again
// (over MCP, the URL elicitation of the connect flow), not a retry. At
// most once per call: nothing is sent again.
func (h *Handler) stepUp(ctx context.Context, call *synth.Call, ch *challenge) error {
	c, _ := mcpauth.ParseChallenge(ch.values)
	if su, ok := call.Context.Connections.(synth.ConnectionStepUp); ok && len(c.Scopes) > 0 {
		req := synth.ConnectionRequest{Name: h.auth.Connection, Need: *h.need, ToolID: h.toolID, Tenant: call.Context.Tenant, Person: call.Context.Person}
		if err := su.StepUp(ctx, req, c.Scopes); err != nil {
			return synth.HandlerError(ReasonRemoteUnauthorized, "the MCP server %s asks for more scopes than connection %q holds, and the connection could not be told so: connect it again", h.where(), h.auth.Connection)
		}
	}
	e := synth.PreconditionFailed(synth.ReasonConnectionPermissionMissing,
		"the MCP server %s asks for more scopes than the %s connection holds (insufficient_scope): connect it again to grant them (POST /v1/connections/%s/authorize)", h.where(), h.need.App, url.PathEscape(h.need.App))
	e.Outside = call.Secrets.Redact(clip(strings.Join(c.Scopes, " ")))
	return e
}

// scopeError is a session the server refused with 403 insufficient_scope
// to a connection's token.
type scopeError struct {
	err error
	ch  *challenge
}

func (e *scopeError) Error() string { return e.err.Error() }
func (e *scopeError) Unwrap() error { return e.err }
