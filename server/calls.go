package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// The service's one call of a tool. Every front door — REST (invoke.go),
// MCP through the SDK and its fast path (mcp.go, mcpfast.go), the console
// (ui_tools.go) — builds a toolCall and hands it to Server.call (or
// Server.dryRun for a description); each only reads its own wire format
// and words the result or the error in it.

// CallContext is the "context" of an invoke request.
type CallContext struct {
	Person     string `json:"person"`
	Run        string `json:"run"`
	Unattended bool   `json:"unattended"`
	// Approved is read and ignored: a caller's word approves nothing
	// (Approval does).
	Approved bool `json:"approved"`
	// Approval is the id of the approval a person gave this call.
	Approval       string `json:"approval"`
	IdempotencyKey string `json:"idempotencyKey"`
}

// toolCall is one call of a tool through the service, whoever asks.
type toolCall struct {
	// caller is the key the call came with: its tenant is the call's, and
	// a person key acts for its own person only. nil for a caller the
	// process trusts (MCP over stdio), whose tenant is tenant.
	caller  *auth.APIKey
	tenant  string
	tool    *synth.Tool
	context CallContext // for whom, for which run, approved or not
	input   json.RawMessage
	// opts are the call's hold on the memory budget and, where the
	// answer may stream to the caller, its sink.
	opts synth.InvokeOptions
	// round is the approval asked and answered inside an MCP call's
	// answers (approvalRound), nil where the caller is not asked.
	round *approvalRound
	// admitted says the front door took the call's place under the
	// tenant's limit itself (REST does, so that a 429 comes before a
	// body is read); otherwise call does.
	admitted bool
}

// settle fixes whose call it is (the caller's tenant, the person rules of
// its key) and that the policies let the caller run the tool. The error is
// a *refusal: 403 for a person rule, and for a denied tool what an unknown
// id gets.
func (s *Server) settle(ctx context.Context, c *toolCall) error {
	if c.caller != nil {
		c.tenant = c.caller.Tenant
		person, unattended, refused := actAs(c.caller, c.context.Person, c.context.Unattended)
		if refused != "" {
			return &refusal{status: http.StatusForbidden, code: "forbidden", reason: "role", msg: refused}
		}
		c.context.Person, c.context.Unattended = person, unattended
	}
	g, err := s.gateFor(ctx, c.tenant, c.caller, c.context.Person)
	if err != nil {
		return err
	}
	if !g.allows(ctx, c.tool) {
		return toolNotFoundRefusal(c.tool.ID())
	}
	return nil
}

// call is the service's one call of a tool: whose call it is, its place
// under the tenant's limit, the call with its hold and sink, metrics and
// in-flight tracking. The error is a *refusal (the call did not run: a
// person rule, the tenant's limit) or the call's *synth.Error. c is the
// call's own (settle fixes its tenant and person in it).
//
// The steps before and after the tool's Invoke are calls that return
// before it runs: while a slow upstream answers, call's frame on the
// goroutine's stack is small (issue 31: thousands of waiting calls).
func (s *Server) call(ctx context.Context, c *toolCall) (*synth.Result, error) {
	adm, err := s.enter(ctx, c)
	if err != nil {
		return nil, err
	}
	defer s.leave(c, adm)
	start := time.Now()
	res, err := c.tool.Invoke(ctx, s.callContext(c.tenant, c.context), c.input, c.opts)
	s.counted(c, start, res, err)
	return res, err
}

// enter settles the call, its approval and its place under the tenant's
// limit, and counts it in flight.
//
//go:noinline
func (s *Server) enter(ctx context.Context, c *toolCall) (adm admission, err error) {
	if err := s.settle(ctx, c); err != nil {
		return adm, err
	}
	if err := s.approve(ctx, c); err != nil {
		return adm, err
	}
	if !c.admitted {
		if adm, err = s.admit(c.tenant); err != nil {
			return adm, err
		}
	}
	s.inflight.Add(1)
	s.cfg.Metrics.inflight.Inc()
	return adm, nil
}

// leave counts the call out of flight, and out of the tenant's limit when
// enter counted it in.
func (s *Server) leave(c *toolCall, adm admission) {
	s.cfg.Metrics.inflight.Dec()
	s.inflight.Done()
	if !c.admitted {
		adm.release()
	}
}

// counted records a call and counts it in the metrics.
//
//go:noinline
func (s *Server) counted(c *toolCall, start time.Time, res *synth.Result, err error) {
	tool, tenant, m := c.tool, c.tenant, s.cfg.Metrics
	s.recordCall(c, start, res, err)
	series := m.tool(tool.ID())
	series.latency.Observe(time.Since(start).Seconds())
	if err == nil {
		series.ok.Inc()
	} else {
		s.countedError(tool.ID(), tenant, err)
	}
	if res != nil && res.Attempts > 1 {
		m.retries.WithLabelValues(tool.ID()).Add(float64(res.Attempts - 1))
	}
}

// secretResolver is where tenant's calls read their secrets: the store, by
// tenant, and for EnvSecretsTenant HTTPTOOLS_SECRET_* variables after it.
// It holds no call's data and reads everything when asked, so it is made
// once per tenant and shared by the tenant's calls, instead of two
// allocations a call (BenchmarkRESTSteps).
func (s *Server) secretResolver(tenant string) synth.SecretResolver {
	if r, ok := s.secrets.Load(tenant); ok {
		return r.(synth.SecretResolver)
	}
	var r synth.SecretResolver = auth.TenantSecrets{Store: s.cfg.Store, Tenant: tenant}
	if s.cfg.EnvSecretsTenant != "" && tenant == s.cfg.EnvSecretsTenant {
		r = auth.Chain{r, auth.Env{}}
	}
	v, _ := s.secrets.LoadOrStore(tenant, r)
	return v.(synth.SecretResolver)
}

// countedError counts a call's error by its code, and a denial, an
// overload or a store failure where each is counted. Apart from counted,
// so that a successful call does not allocate the *synth.Error that
// errors.As fills (BenchmarkRESTSteps).
func (s *Server) countedError(tool, tenant string, err error) {
	m := s.cfg.Metrics
	var e *synth.Error
	if !errors.As(err, &e) { // Invoke's errors are *synth.Error; counted as one anyway
		m.calls.WithLabelValues(tool, string(synth.CodeHandlerError)).Inc()
		return
	}
	m.calls.WithLabelValues(tool, string(e.Code)).Inc()
	switch e.Reason {
	case httpspec.ReasonEgressDenied:
		m.denials.WithLabelValues(tool).Inc()
	case synth.ReasonOverloaded:
		s.refused(tenant, ReasonMemoryBudget, e.Message)
	case synth.ReasonStoreUnavailable:
		s.storeFailed("a call of "+tool, e)
	}
}

// dryRun describes the request a call would send, sending nothing.
// Secrets and connection tokens are stand-ins, never read: the description
// shows them as [REDACTED] and its curl line as their $HTTPTOOLS_…
// variables. Errors as call's.
func (s *Server) dryRun(ctx context.Context, c toolCall) (json.RawMessage, error) {
	if err := s.settle(ctx, &c); err != nil {
		return nil, err
	}
	cc := synth.CallContext{Tenant: c.tenant, Person: c.context.Person, Run: c.context.Run,
		IdempotencyKey: c.context.IdempotencyKey, Unattended: c.context.Unattended, Approved: c.context.Approved}
	return c.tool.DryRun(ctx, cc, c.input, c.opts)
}

// callContext builds the synth.CallContext of a call by tenant.
//
//go:noinline
func (s *Server) callContext(tenant string, c CallContext) synth.CallContext {
	cc := synth.CallContext{Tenant: tenant, Person: c.Person, Run: c.Run, IdempotencyKey: c.IdempotencyKey,
		Unattended: c.Unattended, Approved: c.Approved, Secrets: s.secretResolver(tenant)}
	if s.cfg.Manager != nil {
		cc.Connections = s.cfg.Manager
	}
	return cc
}
