package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// Connecting from inside the MCP client: a call that needs the person's
// connection, missing or needing re-authorization, is answered with URL-mode
// elicitation (URLElicitationRequiredError, -32042) holding the connect
// flow's authorize URL, when the client said it handles URL elicitation.
// Once the person has completed the flow, the client's retry works.
//
// Over stateless HTTP the client's capabilities come only with its
// initialize request, so they are remembered per credential (tenant, key or
// token, person) for a day on the replica that saw it; a replica that has
// not seen the initialize gives today's error, which is what a client
// without the capability gets.

// elicitMemo remembers which credentials' clients handle URL elicitation.
type elicitMemo struct{ m sync.Map } // memoKey → time.Time (until)

const elicitMemoTTL = 24 * time.Hour

func memoKey(k *auth.APIKey, person string) string {
	return k.Tenant + "\x00" + k.ID + "\x00" + person
}

// noteInitialize reads an MCP POST body for an initialize request and
// remembers whether its client declared elicitation.url.
func (s *Server) noteInitialize(r *http.Request, body []byte) {
	if !bytes.Contains(body, []byte(`"initialize"`)) || jsoncheck.Check(body, jsoncheck.MaxDocumentDepth) != nil {
		return // not an initialize, or nothing to read safely (the SDK refuses it)
	}
	if m := gjson.GetBytes(body, "method"); m.String() != "initialize" {
		return
	}
	k := identity(r.Context())
	key := memoKey(k, personOfRequest(k, r.Header.Get("X-Person-Id")))
	if gjson.GetBytes(body, "params.capabilities.elicitation.url").IsObject() {
		s.elicit.m.Store(key, time.Now().Add(elicitMemoTTL))
	} else {
		s.elicit.m.Delete(key)
	}
}

func personOfRequest(k *auth.APIKey, header string) string {
	if k.Role == auth.RolePerson {
		return k.Person
	}
	return header
}

// supportsURLElicitation says whether the client of this call handles URL
// elicitation: from its session (stdio) or from the memo (HTTP).
func (s *Server) supportsURLElicitation(ctx context.Context, req *mcp.CallToolRequest, person string) bool {
	if req != nil && req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil {
			return p.Capabilities.Elicitation.URL != nil
		}
	}
	k := identity(ctx)
	if k.Tenant == "" {
		return false
	}
	until, ok := s.elicit.m.Load(memoKey(k, person))
	return ok && time.Now().Before(until.(time.Time))
}

// connectElicitation turns a call error that a person's connect flow would
// cure into the URL elicitation that asks for it, or returns nil.
func (s *Server) connectElicitation(ctx context.Context, req *mcp.CallToolRequest, tool *synth.Tool, tenant, person string, err error) *mcp.ElicitParams {
	var e *synth.Error
	if s.cfg.Manager == nil || person == "" || !errors.As(err, &e) ||
		(e.Reason != synth.ReasonConnectionUnavailable && e.Reason != synth.ReasonConnectionNeedsReauth && e.Reason != synth.ReasonConnectionPermissionMissing) {
		return nil
	}
	need, ok := personConnection(tool)
	if !ok || !s.supportsURLElicitation(ctx, req, person) {
		return nil
	}
	if e.Reason == synth.ReasonConnectionUnavailable && !strings.Contains(e.Message, "has no "+need.App+" connection") {
		return nil // the token endpoint is down, say: connecting again would not help
	}
	url, state, aerr := s.cfg.Manager.AuthorizeState(ctx, tenant, need.App, connections.OwnerPerson(person))
	if aerr != nil {
		return nil
	}
	return &mcp.ElicitParams{
		Mode:          "url",
		URL:           url,
		ElicitationID: state,
		Message:       "Connect your " + need.App + " account to let " + tool.ID() + " act for you, then try again.",
	}
}

// Asking inside a call's answer. From MCP 2026-07-28 a server asks its
// client nothing on its own (SEP-2322): a tools/call that needs the
// client's input is answered input_required with its questions and a
// request state, and the client's retry of the call carries the answers
// and the state back. A call asks two questions so: the approval of an
// unattended call (approvalRound: "approval", its state "approval:" and
// the approval's id) and the connection of its person (the URL to open:
// "connect", its state "connect", which makes the retry run the call
// without asking again). The request state is the client's to echo and
// proves nothing: the approval it names is used only when it is this
// call's (approvalMismatch), and deciding it takes a key that may.

// Request states of the questions a call asks.
const (
	stateApproval = "approval:"
	stateConnect  = "connect"
)

// asksInCall says whether the client of req is asked inside a call's
// answer (2026-07-28 or later), and whether it takes forms.
func asksInCall(req *mcp.CallToolRequest) (inCall, forms bool) {
	if req == nil || req.Session == nil {
		return false, false // the fast path: a protocol before 2026-07-28
	}
	p := req.Session.InitializeParams()
	if p == nil || p.ProtocolVersion < "2026-07-28" {
		return false, false
	}
	e := (*mcp.ElicitationCapabilities)(nil)
	if p.Capabilities != nil {
		e = p.Capabilities.Elicitation
	}
	return true, e != nil && (e.Form != nil || e.URL == nil)
}

// approvalRoundOf is the approval round of an MCP call whose approval
// decider answers (nil: the caller may decide none), or nil when its
// client is not asked inside the call's answer.
func approvalRoundOf(req *mcp.CallToolRequest, decider *auth.APIKey) *approvalRound {
	if _, forms := asksInCall(req); !forms || decider == nil {
		return nil
	}
	r := &approvalRound{decider: decider}
	if id, ok := strings.CutPrefix(req.Params.RequestState, stateApproval); ok {
		r.id = id
		r.answer, _ = req.Params.InputResponses["approval"].(*mcp.ElicitResult)
	}
	return r
}

// stdioDecider is who answers the approval questions of the stdio server
// of tenant: its person, as ElicitApprovals asks them, or with no person
// the process's user, the tenant's admin.
func stdioDecider(ctx context.Context, tenant, person string) *auth.APIKey {
	if person != "" {
		return &auth.APIKey{ID: "mcp-person:" + person, Tenant: tenant, Role: auth.RolePerson, Person: person, Toolset: toolsetOf(ctx)}
	}
	return &auth.APIKey{ID: "mcp-stdio", Tenant: tenant, Role: auth.RoleAdmin, Toolset: toolsetOf(ctx)}
}

// personConnection is the person connection a tool's authorization uses.
func personConnection(tool *synth.Tool) (synth.ConnectionNeed, bool) {
	m := tool.Manifest()
	if m.Spec == nil || m.NeedsSpec == nil {
		return synth.ConnectionNeed{}, false
	}
	name := gjson.GetBytes(m.Spec.Raw, "authorization.connection").String()
	need, ok := m.NeedsSpec.Connections[name]
	return need, ok && need.As == synth.AsPerson
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
