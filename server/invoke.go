package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/synth"
)

// The call routes: invoke and dry run over REST, their bodies, their
// answers and errors. The call itself is the service's (calls.go).

func (s *Server) invokeRoute(w http.ResponseWriter, r *http.Request) {
	// The steps before and after the call are calls of their own, which
	// return before it runs: while a slow upstream answers, this frame is
	// small on the goroutine's stack.
	c, adm, hold := s.invokeCall(w, r)
	if c == nil {
		return
	}
	defer adm.release()
	defer hold.Release()
	// The call draws on the hold. An output that needs no whole-value
	// check streams to the client as it arrives (synth.OutputSink): a big
	// answer is not held.
	sink := &restSink{w: w}
	limit := 0
	if r.URL.RawQuery != "" {
		// ?budget= (resultbudget.go); without a query there is none to
		// read, and no map of it is made.
		var ok bool
		if limit, ok = s.restBudget(w, r, c.tenant, c.tool.ID()); !ok {
			return
		}
	}
	if limit == 0 {
		c.opts.Sink = sink
	}
	res, err := s.call(r.Context(), c)
	var cut *resultCut
	if limit > 0 && err == nil {
		out := *res
		out.Output, cut, err = s.cutAnswer(r.Context(), c.tenant, res.Output, res.MediaType, limit, 0, false)
		res = &out
	}
	writeInvoke(w, sink, c, res, cut, err, s.cfg.Logger)
}

// invokeCall admits an invoke and reads its body: the call, its place
// under the tenant's limit and its hold on the memory budget (the caller
// releases both), or nil when it answered the request with an error.
//
//go:noinline
func (s *Server) invokeCall(w http.ResponseWriter, r *http.Request) (*toolCall, admission, *budget.Hold) {
	tool, ok := s.Tools().Tool(r.PathValue("id"))
	if !ok {
		toolNotFound(w, r.PathValue("id"))
		return nil, admission{}, nil
	}
	// The tenant's limit first (a 429 costs nothing), then the body's bytes
	// on the memory budget, held with everything the call reads until its
	// answer is written.
	adm, err := s.admit(tenantOf(r.Context()))
	if err != nil {
		err.(*refusal).write(w)
		return nil, admission{}, nil
	}
	hold := s.cfg.Budget.HoldFor(s.shareOf(tenantOf(r.Context())))
	fail := func() (*toolCall, admission, *budget.Hold) {
		hold.Release()
		adm.release()
		return nil, admission{}, nil
	}
	if err := s.draw(r, hold, s.bodyDraw(r), s.cfg.BudgetWait); err != nil {
		err.(*refusal).write(w)
		return fail()
	}
	req, ok := s.readCall(w, r, "an invoke body")
	if !ok {
		return fail()
	}
	return &toolCall{caller: identity(r.Context()), tool: tool, context: req.Context, input: req.Input,
		opts: synth.InvokeOptions{Hold: hold}, admitted: true}, adm, hold
}

// writeInvoke answers an invoke with the call's result or error.
//
//go:noinline
func writeInvoke(w http.ResponseWriter, sink *restSink, c *toolCall, res *synth.Result, cut *resultCut, err error, log *slog.Logger) {
	if sink.started {
		if err != nil {
			// The 200 and part of the output are out: cut the response
			// off, so that no client takes a broken value for an answer.
			log.Warn("a streamed answer broke off; the response was cut", "tool", c.tool.ID(), "tenant", c.tenant, "error", err.Error())
			panic(http.ErrAbortHandler)
		}
		w.Write(metaJSON(res, nil))
		return
	}
	if err != nil {
		writeFailure(w, err)
		return
	}
	// Written by hand: the output is already valid JSON, and re-encoding it
	// would re-scan it (and cost the hot path a reflection walk).
	// The output goes out as it is, in its own write: a big answer is not
	// copied again to be sent.
	tail := metaJSON(res, cut)
	h := w.Header()
	h["Content-Type"] = jsonType
	h.Set("Content-Length", strconv.Itoa(len(outputHead)+len(res.Output)+len(tail)))
	w.WriteHeader(http.StatusOK)
	w.Write(outputHeadBytes)
	w.Write(res.Output)
	w.Write(tail)
}

// callRequest is the body of an invoke or a dry run.
type callRequest struct {
	Input   json.RawMessage `json:"input"`
	Context CallContext     `json:"context"`
}

// readCall reads a call's body (what names it in the hint); false when it
// answered the request with an error. An
// absent input is {}; the tool's input sent bare, not under "input", is
// refused with the way to wrap it.
func (s *Server) readCall(w http.ResponseWriter, r *http.Request, what string) (callRequest, bool) {
	body, ok := s.readCheckedBody(w, r)
	if !ok {
		return callRequest{}, false
	}
	var bare callRequest // on the stack: only the slow read below needs req on the heap
	if bareInput(body, &bare) {
		return bare, true
	}
	var req callRequest
	// The tool's input sent bare: said so before the strict decoding
	// would name its first member.
	if stray, input := strayMembers(body); !input && len(stray) > 0 {
		writeError(w, http.StatusBadRequest, "bad-request", synth.ReasonInputInvalid, fmt.Sprintf(
			`the body has no "input" member but has %s, which %s does not take: wrap the tool's input, {"input": {%q: …}} (%s is {"input": {…}, "context": {…}})`,
			quoteList(stray), what, stray[0], what))
		return req, false
	}
	if !decodeBody(w, body, &req) {
		return req, false
	}
	if req.Input == nil {
		req.Input = json.RawMessage(`{}`)
	}
	return req, true
}

func toolNotFound(w http.ResponseWriter, id string) { writeFailure(w, toolNotFoundRefusal(id)) }

// toolError is a call's error as the API words it: a *synth.Error, or a
// handler error carrying its message.
func toolError(err error) *synth.Error {
	var e *synth.Error
	if !errors.As(err, &e) {
		e = &synth.Error{Code: synth.CodeHandlerError, Message: err.Error()}
	}
	return e
}

// strayMembers lists the members of an invoke body other than input and
// context, sorted, and says whether it has an input.
func strayMembers(body []byte) ([]string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil, false
	}
	var out []string
	for k := range m {
		if k != "input" && k != "context" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	_, input := m["input"]
	return out, input
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

// dryRunRoute describes the request an invoke would send, sending
// nothing: {"request": {"method","url","headers","body","curl"}}.
func (s *Server) dryRunRoute(w http.ResponseWriter, r *http.Request) {
	tool, ok := s.Tools().Tool(r.PathValue("id"))
	if !ok {
		toolNotFound(w, r.PathValue("id"))
		return
	}
	req, ok := s.readCall(w, r, "a dry-run body")
	if !ok {
		return
	}
	out, err := s.dryRun(r.Context(), toolCall{caller: identity(r.Context()), tool: tool, context: req.Context, input: req.Input})
	if err != nil {
		writeFailure(w, err)
		return
	}
	// The description comes indented (for a terminal): the API's answer
	// is compact JSON throughout, as every other route's.
	var b bytes.Buffer
	b.WriteString(`{"request":`)
	if json.Compact(&b, out) != nil {
		b.Truncate(len(`{"request":`))
		b.Write(out)
	}
	b.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json")
	w.Write(b.Bytes())
}

// outputHead opens a successful invoke's body; the output follows, then
// metaJSON.
const outputHead = `{"output":`

// outputHeadBytes is outputHead as written: no conversion per call.
var outputHeadBytes = []byte(outputHead)

// metaJSON is the end of a successful invoke's body: the meta member and
// the closing brace.
func metaJSON(res *synth.Result, cut *resultCut) []byte {
	b := make([]byte, 0, 96)
	b = append(b, `,"meta":{"status":`...)
	b = strconv.AppendInt(b, int64(res.Status), 10)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(res.Attempts), 10)
	b = append(b, `,"durationMs":`...)
	b = strconv.AppendInt(b, res.Duration.Milliseconds(), 10)
	b = append(b, `,"outsideData":`...)
	b = strconv.AppendBool(b, res.OutsideData)
	if res.MediaType != "" {
		// The output is the base64 text of bytes of this type.
		b = append(b, `,"mediaType":`...)
		b, _ = jsontext.AppendQuote(b, res.MediaType)
	}
	if cut != nil {
		// Asked for with ?budget=: what was left out, and where the whole is.
		b = append(b, `,"truncated":`...)
		b = append(b, cut.metaJSON()...)
	}
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
	s.w.Write(outputHeadBytes)
	return s.w
}
