package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/httptools/httptools/httpspec"
	"html/template"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/synth"
	"github.com/tidwall/gjson"
)

// readJSON decodes a capped request body: 413 over the cap, 400 with the
// byte offset on malformed JSON, and 400 for a member named twice or nesting
// over the document limit (jsoncheck), so that no field is read two ways.
// In an invoke body, such a fault under "input" is the input's:
// input-validation-failed with the pointer into the input.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := s.readCheckedBody(w, r)
	return ok && decodeBody(w, body, v)
}

// bareInput reads the usual invoke body, {"input": {…}} and nothing else,
// without reflection: true when body is that and req is filled (its input a
// view of body). Any other body — a context, another member, an input that
// is not an object, a name spelled with escapes — is left to decodeBody,
// which reads it as it always has.
func bareInput(body []byte, req *callRequest) bool {
	view := unsafe.String(unsafe.SliceData(body), len(body)) // read here only; nothing keeps it
	root := gjson.Parse(view)
	if !root.IsObject() {
		return false
	}
	var in gjson.Result
	ok := true
	root.ForEach(func(k, v gjson.Result) bool {
		if k.Raw != `"input"` || !v.IsObject() {
			ok = false
		}
		in = v
		return ok
	})
	if !ok || in.Raw == "" {
		return false
	}
	if in.Index > 0 && in.Index+len(in.Raw) <= len(body) && string(body[in.Index:in.Index+len(in.Raw)]) == in.Raw {
		req.Input = json.RawMessage(body[in.Index : in.Index+len(in.Raw) : in.Index+len(in.Raw)])
	} else {
		req.Input = json.RawMessage(in.Raw) // copied off the view
	}
	return true
}

// readCheckedBody reads a JSON body under the input cap and checks it
// (jsoncheck), answering the request itself when it is refused.
func (s *Server) readCheckedBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxInputBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "request-too-large", "", fmt.Sprintf("the body is over the %d-byte limit", s.cfg.MaxInputBytes))
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "bad-request", "", "cannot read the body")
		return nil, false
	}
	if err := jsoncheck.Check(body, jsoncheck.MaxDocumentDepth); err != nil {
		var je *jsoncheck.Error
		errors.As(err, &je)
		if je.Kind == jsoncheck.Syntax {
			writeError(w, http.StatusBadRequest, "bad-request", "malformed-json", fmt.Sprintf("malformed JSON at byte %d: %s", je.Offset, je.Detail()))
			return nil, false
		}
		if in, ok := strings.CutPrefix(je.At(), "/input"); ok && (in == "" || in[0] == '/') && r.PathValue("id") != "" {
			where := in
			if where == "" {
				where = "/"
			}
			msg := fmt.Sprintf("input failed validation: %s: %v", where, err)
			writeJSON(w, http.StatusBadRequest, map[string]errorBody{"error": {
				Code: string(synth.CodeInputValidationFailed), Reason: synth.ReasonInputInvalid, Message: msg,
				Details: map[string]any{"violations": []synth.Violation{{Pointer: in, Message: err.Error()}}},
			}})
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "bad-request", synth.ReasonInputInvalid, "the body "+err.Error())
		return nil, false
	}
	return body, true
}

// decodeBody decodes a checked body into v, answering the request itself
// when it does not fit.
func decodeBody(w http.ResponseWriter, body []byte, v any) bool {
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			writeError(w, http.StatusBadRequest, "bad-request", "malformed-json", fmt.Sprintf("at byte %d: %s must be %s", te.Offset, te.Field, te.Type))
		default:
			writeError(w, http.StatusBadRequest, "bad-request", "malformed-json", err.Error())
		}
		return false
	}
	return true
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	ts := s.Tools()
	out := make([]json.RawMessage, 0, len(ts.ids))
	for _, id := range ts.ids {
		out = append(out, ts.raw[id])
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out})
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if raw, ok := s.Tools().raw[id]; ok {
		w.Header().Set("Content-Type", "application/json")
		w.Write(raw)
		return
	}
	toolNotFound(w, id)
}

// CallContext is the "context" of an invoke request.
type CallContext struct {
	Person         string `json:"person"`
	Run            string `json:"run"`
	Unattended     bool   `json:"unattended"`
	Approved       bool   `json:"approved"`
	IdempotencyKey string `json:"idempotencyKey"`
}

// callContext builds the ToolContext of a call by tenant.
func (s *Server) callContext(tenant string, c CallContext) synth.CallContext {
	var secrets synth.SecretResolver = auth.TenantSecrets{Store: s.cfg.Store, Tenant: tenant}
	if s.cfg.EnvSecretsTenant != "" && tenant == s.cfg.EnvSecretsTenant {
		secrets = auth.Chain{secrets, auth.Env{}}
	}
	cc := synth.CallContext{Tenant: tenant, Person: c.Person, Run: c.Run, IdempotencyKey: c.IdempotencyKey,
		Unattended: c.Unattended, Approved: c.Approved, Secrets: secrets}
	if s.cfg.Manager != nil {
		cc.Connections = s.cfg.Manager
	}
	return cc
}

// call invokes a tool with metrics and in-flight tracking.
func (s *Server) call(ctx context.Context, tool *synth.Tool, tenant string, cc CallContext, input json.RawMessage) (*synth.Result, error) {
	tc := s.callContext(tenant, cc)
	s.inflight.Add(1)
	defer s.inflight.Done()
	m := s.cfg.Metrics
	m.inflight.Inc()
	defer m.inflight.Dec()
	start := time.Now()
	res, err := tool.Invoke(ctx, tc, input)
	series := m.tool(tool.ID())
	series.latency.Observe(time.Since(start).Seconds())
	var e *synth.Error
	switch {
	case err == nil:
		series.ok.Inc()
	case errors.As(err, &e):
		m.calls.WithLabelValues(tool.ID(), string(e.Code)).Inc()
		switch e.Reason {
		case httpspec.ReasonEgressDenied:
			m.denials.WithLabelValues(tool.ID()).Inc()
		case synth.ReasonOverloaded:
			s.refused(tenant, ReasonMemoryBudget, e.Message)
		}
	default: // Invoke's errors are *synth.Error; counted as one anyway
		m.calls.WithLabelValues(tool.ID(), string(synth.CodeHandlerError)).Inc()
	}
	if res != nil && res.Attempts > 1 {
		m.retries.WithLabelValues(tool.ID()).Add(float64(res.Attempts - 1))
	}
	return res, err
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	tool, ok := s.Tools().Tool(r.PathValue("id"))
	if !ok {
		toolNotFound(w, r.PathValue("id"))
		return
	}
	// The tenant's limit first (a 429 costs nothing), then the body's bytes
	// on the memory budget, held with everything the call reads until its
	// answer is written.
	adm, err := s.admit(tenantOf(r.Context()))
	if err != nil {
		err.(*refusal).write(w)
		return
	}
	defer adm.release()
	hold := s.cfg.Budget.HoldFor(s.shareOf(tenantOf(r.Context())))
	defer hold.Release()
	if err := s.draw(r, hold, s.bodyDraw(r), s.cfg.BudgetWait); err != nil {
		err.(*refusal).write(w)
		return
	}
	req, ok := s.readCall(w, r, "an invoke body")
	if !ok {
		return
	}
	// The call draws on the hold. An output that needs no whole-value
	// check streams to the client as it arrives (synth.OutputSink): a big
	// answer is not held. (Both in the call's context only: a request
	// copy per call saved.)
	sink := &restSink{w: w}
	ctx := synth.WithOutputSink(budget.NewContext(r.Context(), hold), sink)
	res, err := s.call(ctx, tool, tenantOf(r.Context()), req.Context, req.Input)
	if sink.started {
		if err != nil {
			// The 200 and part of the output are out: cut the response
			// off, so that no client takes a broken value for an answer.
			s.cfg.Logger.Warn("a streamed answer broke off; the response was cut", "tool", tool.ID(), "tenant", tenantOf(r.Context()), "error", err.Error())
			panic(http.ErrAbortHandler)
		}
		w.Write(metaJSON(res))
		return
	}
	if err != nil {
		e := toolError(err)
		switch e.Reason {
		case synth.ReasonStoreUnavailable:
			s.storeFailed("a call of "+tool.ID(), e)
			w.Header().Set("Retry-After", retryAfter)
		case synth.ReasonOverloaded:
			w.Header().Set("Retry-After", retryAfter)
		}
		writeToolError(w, e)
		return
	}
	// Written by hand: the output is already valid JSON, and re-encoding it
	// would re-scan it (and cost the hot path a reflection walk).
	// The output goes out as it is, in its own write: a big answer is not
	// copied again to be sent.
	tail := metaJSON(res)
	h := w.Header()
	h["Content-Type"] = jsonType
	h.Set("Content-Length", strconv.Itoa(len(outputHead)+len(res.Output)+len(tail)))
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, outputHead)
	w.Write(res.Output)
	w.Write(tail)
}

// callRequest is the body of an invoke or a dry run.
type callRequest struct {
	Input   json.RawMessage `json:"input"`
	Context CallContext     `json:"context"`
}

// readCall reads a call's body (what names it in the hint) and settles
// whose call it is; false when it answered the request with an error. An
// absent input is {}; the tool's input sent bare, not under "input", is
// refused with the way to wrap it.
func (s *Server) readCall(w http.ResponseWriter, r *http.Request, what string) (callRequest, bool) {
	var req callRequest
	body, ok := s.readCheckedBody(w, r)
	if !ok {
		return req, false
	}
	if !bareInput(body, &req) && !decodeBody(w, body, &req) {
		return req, false
	}
	if req.Input == nil {
		if stray := strayMembers(body); len(stray) > 0 {
			writeError(w, http.StatusBadRequest, "bad-request", synth.ReasonInputInvalid, fmt.Sprintf(
				`the body has no "input" member but has %s, which %s does not take: wrap the tool's input, {"input": {%q: …}} (%s is {"input": {…}, "context": {…}})`,
				quoteList(stray), what, stray[0], what))
			return req, false
		}
		req.Input = json.RawMessage(`{}`)
	}
	var refused string
	req.Context.Person, req.Context.Unattended, refused = actAs(identity(r.Context()), req.Context.Person, req.Context.Unattended)
	if refused != "" {
		forbidden(w, refused)
		return req, false
	}
	return req, true
}

func toolNotFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, string(synth.CodeToolNotFound), "", fmt.Sprintf("no tool %q: GET /v1/tools lists them", id))
}

// toolError is a call's error as the API words it: a *synth.Error, or a
// handler error carrying its message.
func toolError(err error) *synth.Error {
	var e *synth.Error
	if !errors.As(err, &e) {
		e = &synth.Error{Code: synth.CodeHandlerError, Message: err.Error()}
	}
	return e
}

func writeToolError(w http.ResponseWriter, e *synth.Error) {
	code := string(e.Code)
	if e.Reason == synth.ReasonStoreUnavailable {
		// One outage, one code on every route (a key check, a secrets
		// route, readiness, a call): a client branches on it once.
		code = synth.ReasonStoreUnavailable
	}
	writeJSON(w, statusOf(e), map[string]errorBody{"error": {Code: code, Reason: e.Reason, Message: e.Message, Details: e.Details()}})
}

// strayMembers lists the members of an invoke body other than input and
// context, in their order.
func strayMembers(body []byte) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	var out []string
	for k := range m {
		if k != "input" && k != "context" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// dryRun describes the request an invoke would send, sending nothing:
// {"request": {"method","url","headers","body","curl"}}. Secrets and
// connection tokens are stand-ins, never read: the description shows them
// as [REDACTED] and the curl line as their $HTTPTOOLS_… variables.
func (s *Server) dryRun(w http.ResponseWriter, r *http.Request) {
	tool, ok := s.Tools().Tool(r.PathValue("id"))
	if !ok {
		toolNotFound(w, r.PathValue("id"))
		return
	}
	req, ok := s.readCall(w, r, "a dry-run body")
	if !ok {
		return
	}
	cc := synth.CallContext{Tenant: tenantOf(r.Context()), Person: req.Context.Person, Run: req.Context.Run,
		IdempotencyKey: req.Context.IdempotencyKey, Unattended: req.Context.Unattended, Approved: req.Context.Approved}
	out, err := tool.DryRun(r.Context(), cc, req.Input)
	if err != nil {
		writeToolError(w, toolError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"request":`)
	w.Write(out)
	io.WriteString(w, "}\n")
}

func secretRef(r *http.Request) synth.SecretRef {
	return synth.SecretRef{EnvName: r.PathValue("envName"), Name: r.PathValue("name")}
}

func (s *Server) putSecret(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Value *string `json:"value"`
	}
	if !s.readJSON(w, r, &req) {
		return
	}
	if req.Value == nil || *req.Value == "" {
		writeError(w, http.StatusBadRequest, "bad-request", "", `the body must be {"value": "…"} with a non-empty value`)
		return
	}
	if err := s.cfg.Store.PutSecret(r.Context(), tenantOf(r.Context()), secretRef(r), *req.Value); err != nil {
		s.storeUnavailable(w, "storing the secret", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	refs, err := s.cfg.Store.SecretRefs(r.Context(), tenantOf(r.Context()))
	if err != nil {
		s.storeUnavailable(w, "listing secrets", err)
		return
	}
	if refs == nil {
		refs = []synth.SecretRef{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": refs})
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	s.removed(w, s.cfg.Store.DeleteSecret(r.Context(), tenantOf(r.Context()), secretRef(r)), "secret")
}

// removed answers a DELETE: 204, or 404 when the tenant has no such thing,
// or 503 when the store failed.
func (s *Server) removed(w http.ResponseWriter, err error, what string) {
	switch {
	case errors.Is(err, connections.ErrNotFound):
		writeError(w, http.StatusNotFound, "not-found", "", "no such "+what)
	case err != nil:
		s.storeUnavailable(w, "removing the "+what, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Manager == nil {
		writeError(w, http.StatusNotFound, "not-found", "", "no apps are configured: start serve with --apps apps.json")
		return
	}
	var req struct {
		As     string `json:"as"`
		Person string `json:"person"`
	}
	if !s.readJSON(w, r, &req) {
		return
	}
	k := identity(r.Context())
	if k.Role == RolePerson && req.As == synth.AsPerson && req.Person == "" {
		req.Person = k.Person // a person key connects its own account
	}
	var owner string
	switch {
	case req.As == synth.AsCompany && req.Person == "":
		owner = connections.OwnerCompany
	case req.As == synth.AsPerson && req.Person != "":
		owner = connections.OwnerPerson(req.Person)
	default:
		writeError(w, http.StatusBadRequest, "bad-request", "", `the body must be {"as":"person","person":"…"} or {"as":"company"}`)
		return
	}
	if refused := mayManage(k, owner); refused != "" {
		forbidden(w, refused)
		return
	}
	url, err := s.cfg.Manager.Authorize(r.Context(), tenantOf(r.Context()), r.PathValue("app"), owner)
	switch {
	case errors.Is(err, connections.ErrUnavailable):
		s.storeUnavailable(w, "starting the connect flow", err)
		return
	case err != nil:
		writeError(w, http.StatusNotFound, "not-found", "", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"url": url})
}

var connectedPage = template.Must(template.New("ok").Parse(`<!doctype html>
<meta charset="utf-8"><title>Connected</title>
<p id="outcome">{{if .OK}}Connected: the {{.App}} account of {{.Whose}} is ready to use. You can close this window.{{else}}Not connected: {{.Message}}{{end}}</p>
{{if .UI}}<p><a id="back" href="/ui/connections">Back to the connections</a></p>{{end}}
`))

func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	wantJSON := strings.Contains(r.Header.Get("Accept"), "application/json")
	fail := func(status int, msg string) {
		if wantJSON {
			writeError(w, status, "connect-failed", "", msg)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		connectedPage.Execute(w, map[string]any{"OK": false, "Message": msg, "UI": s.cfg.UI})
	}
	if s.cfg.Manager == nil {
		fail(http.StatusNotFound, "no apps are configured")
		return
	}
	if e := q.Get("error"); e != "" {
		fail(http.StatusBadRequest, "the provider said "+e)
		return
	}
	rec, err := s.cfg.Manager.Callback(r.Context(), q.Get("state"), q.Get("code"))
	if err != nil {
		status := http.StatusBadGateway
		switch {
		case errors.Is(err, connections.ErrBadState):
			status = http.StatusBadRequest
		case errors.Is(err, connections.ErrUnavailable):
			s.storeFailed("completing the connect flow", err)
			w.Header().Set("Retry-After", retryAfter)
			fail(http.StatusServiceUnavailable, "the store is unavailable for now: start the connection again shortly")
			return
		}
		fail(status, err.Error())
		return
	}
	view := connectionView(rec)
	if wantJSON {
		writeJSON(w, http.StatusOK, map[string]any{"connection": view})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	whose := "the company"
	if view.Person != "" {
		whose = "person " + view.Person
	}
	connectedPage.Execute(w, map[string]any{"OK": true, "App": rec.App, "Whose": whose, "UI": s.cfg.UI})
}

// ConnectionView is a connection as the API shows it: never a token.
type ConnectionView struct {
	ID          string    `json:"id"`
	App         string    `json:"app"`
	As          string    `json:"as"`
	Person      string    `json:"person,omitempty"`
	Permissions []string  `json:"permissions"`
	Scopes      []string  `json:"scopes"`
	Status      string    `json:"status"`
	Expiry      time.Time `json:"expiry,omitzero"`
	LastRefresh time.Time `json:"lastRefresh,omitzero"`
	LastError   string    `json:"lastError,omitempty"`
	Version     int64     `json:"version"`
}

func connectionView(r *connections.Record) ConnectionView {
	v := ConnectionView{ID: r.ID, App: r.App, As: synth.AsCompany, Permissions: r.Permissions, Scopes: r.Scopes,
		Status: r.Status, Expiry: r.Expiry, LastRefresh: r.LastRefresh, LastError: r.LastError, Version: r.Version}
	if p, ok := strings.CutPrefix(r.Owner, "person:"); ok {
		v.As, v.Person = synth.AsPerson, p
	}
	return v
}

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request) {
	recs, err := s.cfg.Store.Connections(r.Context(), tenantOf(r.Context()))
	if err != nil {
		s.storeUnavailable(w, "listing connections", err)
		return
	}
	out := make([]ConnectionView, 0, len(recs))
	k := identity(r.Context())
	for _, rec := range recs {
		if k.Role == RolePerson && rec.Owner != connections.OwnerPerson(k.Person) {
			continue // a person sees its own connections only
		}
		out = append(out, connectionView(rec))
	}
	writeJSON(w, http.StatusOK, map[string]any{"connections": out})
}

func (s *Server) revokeConnection(w http.ResponseWriter, r *http.Request) {
	k := identity(r.Context())
	if k.Role != RoleAdmin {
		recs, err := s.cfg.Store.Connections(r.Context(), tenantOf(r.Context()))
		if err != nil {
			s.storeUnavailable(w, "finding the connection", err)
			return
		}
		for _, rec := range recs {
			if rec.ID != r.PathValue("id") {
				continue
			}
			if refused := mayManage(k, rec.Owner); refused != "" {
				if k.Role == RolePerson {
					s.removed(w, connections.ErrNotFound, "connection") // another person's is none of its business
					return
				}
				forbidden(w, refused)
				return
			}
		}
	}
	var err error
	if s.cfg.Manager != nil {
		err = s.cfg.Manager.Revoke(r.Context(), tenantOf(r.Context()), r.PathValue("id"))
	} else {
		err = s.cfg.Store.RevokeConnection(r.Context(), tenantOf(r.Context()), r.PathValue("id"))
	}
	s.removed(w, err, "connection")
}

// mayManage says why a key may not start or revoke the connection of owner,
// or "": admin keys manage every connection, service keys people's, person
// keys their own.
func mayManage(k *APIKey, owner string) string {
	switch {
	case k.Role == RoleAdmin:
		return ""
	case owner == connections.OwnerCompany:
		return "company connections are managed with an admin key"
	case k.Role == RolePerson && owner != connections.OwnerPerson(k.Person):
		return "a person key manages its own connections only"
	}
	return ""
}

// outputHead opens a successful invoke's body; the output follows, then
// metaJSON.
const outputHead = `{"output":`

// metaJSON is the end of a successful invoke's body: the meta member and
// the closing brace.
func metaJSON(res *synth.Result) []byte {
	b := make([]byte, 0, 96)
	b = append(b, `,"meta":{"status":`...)
	b = strconv.AppendInt(b, int64(res.Status), 10)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(res.Attempts), 10)
	b = append(b, `,"durationMs":`...)
	b = strconv.AppendInt(b, res.Duration.Milliseconds(), 10)
	b = append(b, `,"outsideData":`...)
	b = strconv.AppendBool(b, res.OutsideData)
	return append(b, "}}\n"...)
}

// restSink streams an invoke's output: Begin sends the 200 and the head of
// the body; the handler writes the output; invoke writes the meta.
type restSink struct {
	w       http.ResponseWriter
	started bool
}

func (s *restSink) Begin(int) io.Writer {
	s.started = true
	s.w.Header().Set("Content-Type", "application/json")
	s.w.WriteHeader(http.StatusOK)
	io.WriteString(s.w, outputHead)
	return s.w
}
