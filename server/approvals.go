package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approvals that are records. A call in a run no person started, of a tool
// that needs a person's yes (synth.Tool.NeedsApproval), runs only with an
// approval: a record bound to the call's tenant, tool, person, run and the
// hash of its exact input, decided by a person allowed to (an admin key,
// or the person key of the call's person), and used once, before it
// expires. A caller's "approved": true approves nothing. A service key's
// UnattendedTools (its toolsAllowedUnattended) run without one.

// ApprovalStore keeps approvals (sqlstore.SQLStore is one). It must be
// safe for concurrent use.
type ApprovalStore interface {
	CreateApproval(ctx context.Context, a *auth.Approval) (*auth.Approval, error)
	Approval(ctx context.Context, tenant, id string) (*auth.Approval, error)
	// Approvals lists tenant's approvals of state ("" for any) of person
	// ("" for every person's) that scope lets through (nil: all), newest
	// first.
	Approvals(ctx context.Context, tenant, state, person string, scope *history.Scope) ([]*auth.Approval, error)
	// DecideApproval and UseApproval act on an approval unexpired at at
	// (the server's clock, Config.Now).
	DecideApproval(ctx context.Context, tenant, id, state, decidedBy string, at time.Time) error
	UseApproval(ctx context.Context, tenant, id string, at time.Time) error
}

// DefaultApprovalTTL is how long an approval request can be decided and
// used.
const DefaultApprovalTTL = time.Hour

// inputHash is the hash an approval binds a call's input by: SHA-256 of
// its canonical form (members sorted, no spaces, numbers as written).
func inputHash(input json.RawMessage) string {
	canon := input
	var v any
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if dec.Decode(&v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canon = b
		}
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// allowedUnattended says whether key may run tool unattended without an
// approval.
func allowedUnattended(key *auth.APIKey, tool string) bool {
	if key == nil || key.Role != auth.RoleService {
		return false
	}
	return slices.ContainsFunc(key.UnattendedTools, func(g string) bool {
		ok, err := path.Match(g, tool)
		return err == nil && ok
	})
}

// approve settles a call's approval before it runs: a call that needs none
// passes; one that needs one and names none gets a new request (and the
// refusal that says so, with its id, or the question its MCP client is
// asked: c.round); one that names one, or answers the question asked
// about one, runs only if that approval was made for exactly this call
// and is spent now.
func (s *Server) approve(ctx context.Context, c *toolCall) error {
	c.context.Approved = false // a caller's word approves nothing
	if !c.context.Unattended || !c.tool.NeedsApproval() {
		return nil
	}
	if allowedUnattended(c.caller, c.tool.ID()) {
		c.context.Approved = true
		return nil
	}
	st := s.cfg.Approvals
	if st == nil {
		return nil // no records kept: the tool refuses it (approval-required)
	}
	hash := inputHash(c.input)
	keyID := ""
	if c.caller != nil {
		keyID = c.caller.ID
	}
	if c.context.Approval == "" && c.round != nil && c.round.id != "" {
		// The answer to the question the call's previous round asked.
		if err := s.answerApproval(ctx, c, hash); err != nil {
			return err
		}
	}
	if c.context.Approval == "" {
		ttl := s.cfg.ApprovalTTL
		if ttl <= 0 {
			ttl = DefaultApprovalTTL
		}
		now := s.now()
		a, err := st.CreateApproval(ctx, &auth.Approval{Tenant: c.tenant, Tool: c.tool.ID(), Person: c.context.Person, Run: c.context.Run,
			InputHash: hash, Input: history.Cut(string(c.input), history.MaxText), RequestedBy: keyID, Created: now, Expires: now.Add(ttl)})
		if err != nil {
			return s.storeRefusal("recording the approval request", err)
		}
		s.approvalLog("approval requested", a, keyID)
		if c.round != nil && c.round.decider != nil && mayDecide(c.round.decider, a) == "" {
			c.round.asked = a // the call's answer asks its client (mcpCall)
		}
		return &refusal{status: http.StatusForbidden, code: string(synth.CodePreconditionFailed), reason: synth.ReasonApprovalRequired,
			msg:     fmt.Sprintf("a person must approve this call of %s in a run no person started: approval %s is requested (the console: /ui/approvals); call again with \"approval\": %q once it is approved, with the same input", c.tool.ID(), a.ID, a.ID),
			details: map[string]any{"approval": a.ID, "url": "/ui/approvals#" + a.ID, "expires": a.Expires}}
	}
	refuse := func(why string) error {
		s.cfg.Logger.Warn("approval refused", "approval", c.context.Approval, "tool", c.tool.ID(), "tenant", c.tenant, "key", keyID, "why", why)
		return &refusal{status: http.StatusForbidden, code: string(synth.CodePreconditionFailed), reason: synth.ReasonApprovalRequired,
			msg: fmt.Sprintf("approval %s does not approve this call: %s; call without it to request a new one", c.context.Approval, why)}
	}
	a, err := st.Approval(ctx, c.tenant, c.context.Approval)
	switch {
	case errors.Is(err, connections.ErrNotFound):
		return refuse("there is no such approval in this tenant")
	case err != nil:
		return s.storeRefusal("reading the approval", err)
	case c.approvalMismatch(a, hash) != "":
		return refuse(c.approvalMismatch(a, hash))
	case a.State != auth.ApprovalApproved:
		return refuse("it is " + a.State)
	case !s.now().Before(a.Expires):
		return refuse("it expired")
	}
	if err := st.UseApproval(ctx, c.tenant, a.ID, s.now()); err != nil {
		if errors.Is(err, connections.ErrNotFound) {
			return refuse("it was used already, or expired")
		}
		return s.storeRefusal("spending the approval", err)
	}
	s.approvalLog("approval used", a, keyID)
	c.context.Approved = true
	return nil
}

// approvalMismatch says why a is not an approval of the call c (whose
// input hashes to hash), or "".
func (c *toolCall) approvalMismatch(a *auth.Approval, hash string) string {
	switch {
	case a.Tool != c.tool.ID():
		return "it is for another tool"
	case a.Person != c.context.Person:
		return "it is for another person"
	case a.Run != c.context.Run:
		return "it is for another run"
	case a.InputHash != hash:
		return "it is for another input"
	}
	return ""
}

// approvalRound is an approval asked and answered inside an MCP call's
// answers (multi round-trip requests, MCP 2026-07-28): the call that
// needs one is answered input_required with the approval question, and
// the client's retry carries the answer, which decides the approval as
// decider would on the console before the call runs with it.
type approvalRound struct {
	// decider is who answers: the call's key, or on stdio the server's
	// person. The question is asked only when it may decide the approval
	// (mayDecide): a service key's call gets the refusal, for a person to
	// decide on the console.
	decider *auth.APIKey
	// id is the approval the previous round asked about ("" for none),
	// and answer the client's answer to it (nil for none).
	id     string
	answer *mcp.ElicitResult
	// asked is set by approve: the request the call's answer asks about.
	asked *auth.Approval
}

// approvalSchema is the form of the approval question.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve this call","description":"Yes lets it run once, with exactly this input; no denies it."}},"required":["approve"]}`)

// approvalRequest is the question about a, as a client shows it.
func approvalRequest(a *auth.Approval) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: approvalQuestion(a), RequestedSchema: approvalSchema}
}

// answerApproval decides the approval the call's previous round asked
// about by the client's answer, and names it as the call's: yes approves
// it, no (or a decline) denies it, and the call's own check (approve)
// then runs it or refuses it. A dismissed question (cancel, or no answer)
// leaves it pending, for the console. The approval must be this call's:
// a request state naming another one decides nothing.
func (s *Server) answerApproval(ctx context.Context, c *toolCall, hash string) error {
	r := c.round
	a, err := s.cfg.Approvals.Approval(ctx, c.tenant, r.id)
	if errors.Is(err, connections.ErrNotFound) {
		return nil // no such approval: asked anew
	}
	if err != nil {
		return s.storeRefusal("reading the approval", err)
	}
	if why := c.approvalMismatch(a, hash); why != "" {
		s.cfg.Logger.Warn("an MCP client answered about another call's approval", "approval", a.ID, "tool", c.tool.ID(), "why", why)
		return nil // not this call's: asked anew
	}
	if r.answer == nil || r.answer.Action == "cancel" {
		return &refusal{status: http.StatusForbidden, code: string(synth.CodePreconditionFailed), reason: synth.ReasonApprovalRequired,
			msg:     fmt.Sprintf("approval %s of this call of %s was dismissed and stays pending (the console: /ui/approvals); call again with \"approval\": %q once it is approved, with the same input", a.ID, c.tool.ID(), a.ID),
			details: map[string]any{"approval": a.ID, "url": "/ui/approvals#" + a.ID, "expires": a.Expires}}
	}
	if a.State == auth.ApprovalPending {
		yes := r.answer.Action == "accept" && r.answer.Content["approve"] == true
		var rf *refusal
		if err := s.decideApproval(ctx, r.decider, a.ID, yes); err != nil && !(errors.As(err, &rf) && rf.status == http.StatusConflict) {
			return err
		} // decided meanwhile (the console), or expired: the call's check says which
	}
	c.context.Approval = a.ID
	return nil
}

// approvalLog writes one step of an approval to the service's log: the
// audit of who asked, decided and used it.
func (s *Server) approvalLog(what string, a *auth.Approval, by string) {
	s.cfg.Logger.Info(what, "approval", a.ID, "tool", a.Tool, "tenant", a.Tenant, "person", a.Person, "run", a.Run, "by", by)
}

// mayDecide says why key may not decide a: admin keys decide every
// approval of their tenant, a person key those of its own person's calls.
func mayDecide(k *auth.APIKey, a *auth.Approval) string {
	switch {
	case k.Tenant != a.Tenant:
		return "no such approval"
	case k.Role == auth.RoleAdmin:
		return ""
	case k.Role == auth.RolePerson && a.Person != "" && a.Person == k.Person:
		return ""
	}
	return "an approval is decided by an admin key, or by the person key of the call's person"
}

// decideApproval approves or denies an approval for key. An approval of
// a tool key's gate refuses it (scopeOf) is no approval to it.
func (s *Server) decideApproval(ctx context.Context, k *auth.APIKey, id string, approve bool) error {
	st := s.cfg.Approvals
	if st == nil {
		return notFound("this service keeps no approvals")
	}
	a, err := st.Approval(ctx, k.Tenant, id)
	if errors.Is(err, connections.ErrNotFound) {
		return notFound("no such approval")
	}
	if err != nil {
		return s.storeRefusal("reading the approval", err)
	}
	scope, err := s.scopeOf(ctx, k.Tenant, k)
	if err != nil {
		return err
	}
	if !scope.Allows(a.Tool, a.Person) {
		return notFound("no such approval") // of a tool it cannot see
	}
	if why := mayDecide(k, a); why != "" {
		if k.Role == auth.RolePerson {
			return notFound("no such approval") // another person's is none of its business
		}
		return forbiddenErr(why)
	}
	state := auth.ApprovalDenied
	if approve {
		state = auth.ApprovalApproved
	}
	if err := st.DecideApproval(ctx, k.Tenant, id, state, k.ID, s.now()); err != nil {
		if errors.Is(err, connections.ErrNotFound) {
			return &refusal{status: http.StatusConflict, code: "conflict", msg: "approval " + id + " is " + a.State + " or expired: it is decided once"}
		}
		return s.storeRefusal("deciding the approval", err)
	}
	a.State = state
	s.approvalLog("approval "+state, a, k.ID)
	return nil
}

// approvalsOf lists the approvals key may see: a person key its own
// person's, others the tenant's, and of the tools its gate lets it see
// only (scopeOf), selected in the query.
func (s *Server) approvalsOf(ctx context.Context, k *auth.APIKey, state string) ([]*auth.Approval, error) {
	if s.cfg.Approvals == nil {
		return []*auth.Approval{}, nil
	}
	person := ""
	if k.Role == auth.RolePerson {
		person = k.Person
	}
	scope, err := s.scopeOf(ctx, k.Tenant, k)
	if err != nil {
		return nil, err
	}
	out, err := s.cfg.Approvals.Approvals(ctx, k.Tenant, state, person, scope)
	if err != nil {
		return nil, s.storeRefusal("listing approvals", err)
	}
	// Whatever the store let through, nothing the key may not see leaves.
	out = slices.DeleteFunc(out, func(a *auth.Approval) bool {
		return !scope.Allows(a.Tool, a.Person) || person != "" && a.Person != person
	})
	now := s.now()
	for _, a := range out {
		if (a.State == auth.ApprovalPending || a.State == auth.ApprovalApproved) && !now.Before(a.Expires) {
			a.State = auth.ApprovalExpired // as it is now: it can no longer be decided or used
		}
	}
	if out == nil {
		out = []*auth.Approval{}
	}
	return out, nil
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	out, err := s.approvalsOf(r.Context(), identity(r.Context()), r.URL.Query().Get("state"))
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": out})
}

func (s *Server) approveRoute(w http.ResponseWriter, r *http.Request) {
	if !s.noBody(w, r) {
		return
	}
	noContent(w, s.decideApproval(r.Context(), identity(r.Context()), r.PathValue("id"), true))
}

func (s *Server) denyRoute(w http.ResponseWriter, r *http.Request) {
	if !s.noBody(w, r) {
		return
	}
	noContent(w, s.decideApproval(r.Context(), identity(r.Context()), r.PathValue("id"), false))
}

// ElicitApprovals asks person, through every client of srv that declared
// form elicitation on a protocol version that lets a server ask on its own
// (before 2026-07-28; a desktop client on httptools mcp --person), to decide
// each pending approval of their calls, every poll, until ctx ends: the
// client shows the tool, the run and the input, and the person's answer
// approves or denies it, as the console's buttons do. An approval is asked
// once per client; one dismissed (cancel) stays pending for the console.
// Only approvals of the tools person's gate shows, within toolset ("" for
// none: the server's own, MCPToolsetServer's), are asked, as the console
// lists them to that person's key.
func (s *Server) ElicitApprovals(ctx context.Context, srv *mcp.Server, tenant, toolset, person string, poll time.Duration) {
	if s.cfg.Approvals == nil || person == "" {
		return
	}
	asked := map[string]bool{}
	who := &auth.APIKey{ID: "mcp-person:" + person, Tenant: tenant, Role: auth.RolePerson, Person: person, Toolset: toolset}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if pending, err := s.approvalsOf(ctx, who, auth.ApprovalPending); err == nil {
			for _, a := range pending {
				if asked[a.ID] || !s.now().Before(a.Expires) {
					continue
				}
				for ss := range srv.Sessions() {
					p := ss.InitializeParams()
					if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil ||
						(p.Capabilities.Elicitation.Form == nil && p.Capabilities.Elicitation.URL != nil) {
						continue // no form elicitation declared
					}
					if p.ProtocolVersion >= "2026-07-28" {
						// From this version a server asks only inside a
						// call's answer (SEP-2322): the call asks its own
						// client (approvalRound), and other approvals are
						// decided on the console.
						continue
					}
					asked[a.ID] = true
					res, err := ss.Elicit(ctx, approvalRequest(a))
					if err != nil {
						s.cfg.Logger.Warn("an MCP client could not be asked for an approval", "approval", a.ID, "error", err.Error())
						continue
					}
					if res.Action == "cancel" {
						continue
					}
					approve := res.Action == "accept" && res.Content["approve"] == true
					if err := s.decideApproval(ctx, who, a.ID, approve); err != nil {
						s.cfg.Logger.Warn("an approval decided in an MCP client could not be stored", "approval", a.ID, "error", failureOf(err).msg)
					}
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
