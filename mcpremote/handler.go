package mcpremote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
