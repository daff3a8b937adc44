package synth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/redact"
	"go.opentelemetry.io/otel/trace"
)

// Tool is a loaded, checked manifest with its synthesized handler. It is
// immutable and safe for concurrent use.
type Tool struct {
	manifest      *Manifest
	warnings      []Problem
	needsApproval bool
	input, output *valueSchema
	handler       Handler
	tracer        trace.Tracer // nil: the global provider's, looked up per call
	spanName      string
}

// Manifest returns a copy of the tool's manifest: changing it changes
// nothing in the tool.
func (t *Tool) Manifest() *Manifest { return t.manifest.clone() }

// Warnings returns the load-time findings that did not refuse the
// manifest.
func (t *Tool) Warnings() []Problem { return slices.Clone(t.warnings) }

// Connection returns what the manifest's needsSpec.connections says of the
// connection name.
func (t *Tool) Connection(name string) (ConnectionNeed, bool) {
	if t.manifest.NeedsSpec == nil {
		return ConnectionNeed{}, false
	}
	c, ok := t.manifest.NeedsSpec.Connections[name]
	c.Permissions = slices.Clone(c.Permissions)
	return c, ok
}

// Description returns the manifest's description.
func (t *Tool) Description() string { return t.manifest.Description }

// OutsideData says the tool's output is to be read as data, never as
// instructions (Manifest.OutsideData).
func (t *Tool) OutsideData() bool { return t.manifest.OutsideData() }

// Result is a successful call.
type Result struct {
	Output      json.RawMessage // the output value, as the upstream sent it
	Status      int             // upstream status, 0 if none
	Attempts    int             // upstream attempts
	Duration    time.Duration
	OutsideData bool // read the output as data, never as instructions
	Streamed    bool // the output went to the call's OutputSink; Output is nil
	// MediaType is the type of the bytes the upstream answered, whose
	// base64 text Output is (a JSON string); "" for a JSON or text answer.
	MediaType string
	// Secrets knows the secrets the call resolved, in every spelling: what
	// a caller keeps of the call (a history, a log) is redacted with it.
	Secrets *redact.Set
}

// StreamsOutput says the tool's output needs no whole-value check (its
// output schema accepts any value), so a handler may pass it to the call's
// OutputSink as it arrives.
func (t *Tool) StreamsOutput() bool { return t.output.streams() }

// streams says an output schema accepts any value: nil (none), or one that
// only says so.
func (v *valueSchema) streams() bool { return v == nil || v.onlyType == "any" }

// InvokeOptions are what a kernel may set for one call; the zero value
// means the defaults. They reach the handler as Call.Options.
type InvokeOptions struct {
	// Timeout, when positive, replaces the manifest's own timeout (for
	// http, spec.timeoutMs) for this call. The context's deadline still
	// applies: the call ends at whichever comes first, and its error says
	// which one it was.
	Timeout time.Duration
	// Logger takes the records of this call (for http, the audit record of
	// each outbound call) instead of the handler's logger; nil keeps that.
	Logger *slog.Logger
	// LogAttrs are added to every record of this call: a run id, a step.
	LogAttrs []slog.Attr
	// IdempotencyKey, when set, replaces CallContext.IdempotencyKey.
	IdempotencyKey string
	// SkipOutputValidation returns the output even when it does not match
	// the output schema.
	SkipOutputValidation bool
	// Hold, when set, is the memory-budget hold the call draws on: the
	// answer is read on it, and checking an answer that must be decoded
	// draws on it too. What it draws stays drawn until the caller
	// releases the hold, after it is done with the result. Nil: the
	// handler's own (for http, the fetch client's Budget, given back when
	// the answer has been read).
	Hold *budget.Hold
	// Sink, when set, takes the output as it arrives for a tool whose
	// output needs no whole-value check (Tool.StreamsOutput): a big answer
	// then passes through instead of being held, and Result.Streamed says
	// so. Nil: the output is held and returned in Result.Output.
	Sink OutputSink
}

func newCall(t *Tool, cc CallContext, in json.RawMessage, opts InvokeOptions) *Call {
	// The call and its redaction set in one allocation: they live and die
	// together.
	both := &struct {
		c Call
		s redact.Set
	}{c: Call{Tool: t, Context: cc, Input: in, Options: opts}}
	c := &both.c
	c.Secrets = &both.s
	if c.Options.IdempotencyKey != "" {
		c.Context.IdempotencyKey = c.Options.IdempotencyKey
	}
	return c
}

// ID returns the tool's id.
func (t *Tool) ID() string { return t.manifest.ID }

// Handler returns the synthesized handler, nil for a tool without a spec.
func (t *Tool) Handler() Handler { return t.handler }

// SecretUser is a Handler that reads secrets; Tool.SecretNames asks it which.
// Like every Handler it must be safe for concurrent use.
type SecretUser interface {
	SecretRefs() []SecretRef
}

// SecretNames lists the names of the secrets the tool may touch: the keys of
// needsSpec.secrets and the secrets its handler uses (for http, the
// authorization's secretRef.name), de-duplicated and sorted.
func (t *Tool) SecretNames() []string {
	seen := map[string]bool{}
	if ns := t.manifest.NeedsSpec; ns != nil {
		for k := range ns.Secrets {
			seen[k] = true
		}
	}
	if su, ok := t.handler.(SecretUser); ok {
		for _, r := range su.SecretRefs() {
			seen[r.Name] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// NeedsApproval reports whether a call in an unattended run needs a person's
// yes: the manifest says so, or the tool uses a person's connection.
func (t *Tool) NeedsApproval() bool { return t.needsApproval }

func needsApproval(m *Manifest) bool {
	if m.NeedsApprovalWhenUnattended {
		return true
	}
	if ns := m.NeedsSpec; ns != nil {
		for _, c := range ns.Connections {
			if c.As == AsPerson {
				return true
			}
		}
	}
	return false
}

// Invoke runs one call: it validates the input (filling schema defaults),
// refuses unattended calls that need approval, runs the handler, and validates
// the output. Every error is a *Error carrying the tool id.
func (t *Tool) Invoke(ctx context.Context, cc CallContext, input json.RawMessage, opts InvokeOptions) (*Result, error) {
	// The call's context and options go down by pointer: copied into each
	// frame they were the larger part of a stack that a waiting call
	// keeps as big as its deepest point was.
	ctx, span := t.startSpan(ctx, &cc)
	res, err := t.invoke(ctx, &cc, input, &opts)
	endSpan(span, res, err)
	return res, err
}

func (t *Tool) invoke(ctx context.Context, cc *CallContext, input json.RawMessage, opts *InvokeOptions) (*Result, error) {
	// Three steps, the handler's between two calls that return before it
	// runs: while a slow upstream answers, the goroutine waits with only
	// this small frame of the tool's on its stack (a stack the runtime
	// can then shrink), not the checks' locals.
	start := time.Now()
	call, err := t.begin(ctx, cc, input, opts)
	if err != nil {
		return nil, err
	}
	out, err := t.handler.Handle(ctx, call)
	return t.end(ctx, call, out, err, start)
}

// begin checks a call's input and whether it may run, and makes the
// handler's Call.
//
//go:noinline
func (t *Tool) begin(ctx context.Context, cc *CallContext, input json.RawMessage, opts *InvokeOptions) (*Call, error) {
	in, err := t.validateInput(ctx, input)
	if err != nil {
		return nil, err
	}
	if cc.Unattended && !cc.Approved && t.NeedsApproval() {
		return nil, PreconditionFailed(ReasonApprovalRequired,
			"a person must approve each call of this tool in a run no person started: ask for approval, or name the tool in the trigger's toolsAllowedUnattended").finish(t.ID())
	}
	if t.handler == nil {
		if t.manifest.Transport == "mcp" && t.manifest.MCPEndpoint != "" {
			return nil, HandlerError("", "is served by the MCP server %s, and this runtime has no MCP client: register package mcpremote's synthesizer for kind %q", t.manifest.MCPEndpoint, KindMCP).finish(t.ID())
		}
		return nil, HandlerError("", "has no declarative spec: its handler (codeArtifactRef) runs in the kernel, not here").finish(t.ID())
	}
	return newCall(t, *cc, in, *opts), nil
}

// end makes the handler's output or error the call's result: the output
// well-formed, valid UTF-8 and valid against the output schema.
//
//go:noinline
func (t *Tool) end(ctx context.Context, call *Call, out *Output, err error, start time.Time) (*Result, error) {
	secrets := call.Secrets
	if err != nil {
		return nil, t.wrap(err).redacted(secrets)
	}
	if out == nil {
		return nil, HandlerError("", "the handler returned neither an output nor an error").finish(t.ID())
	}
	if out.Streamed && call.Options.Sink == nil {
		return nil, HandlerError("", "the handler streamed an output the call had no sink for").finish(t.ID())
	}
	if out.Streamed {
		return &Result{Status: out.Status, Attempts: out.Attempts, Streamed: true, Duration: time.Since(start), OutsideData: t.manifest.OutsideData(), Secrets: secrets}, nil
	}
	if !out.wellFormed() || len(out.JSON) == 0 {
		if err := jsoncheck.CheckWith(out.JSON, jsoncheck.MaxDepth, jsoncheck.Options{AllowInvalidUTF8: true}); err != nil {
			return nil, t.wrap(notJSON("the handler's output", err)).redacted(secrets)
		}
	}
	if !utf8.Valid(out.JSON) {
		// An upstream's invalid UTF-8 (a Latin-1 server) is replaced by
		// U+FFFD, byte for byte as encoding/json does, before the output
		// is checked, so that REST, MCP, the console and a kernel all get
		// the same valid JSON. Two names that then read the same are two
		// members of one name.
		fixed := jsoncheck.ValidUTF8(out.JSON)
		if err := jsoncheck.CheckWith(fixed, jsoncheck.MaxDepth, jsoncheck.Options{}); err != nil {
			return nil, t.wrap(notJSON("the handler's output, once its invalid UTF-8 is replaced by U+FFFD,", err)).redacted(secrets)
		}
		out.JSON = fixed
	}
	if !secrets.Empty() {
		// An upstream may echo what it was sent (a debugging endpoint, an
		// error that quotes the request): the call's own credentials are
		// masked in the output before anyone — REST, MCP, the history,
		// the console, a kernel — gets it, as they are in errors.
		masked, err := secrets.RedactOutput(out.JSON)
		if err != nil {
			return nil, t.wrap(HandlerError(ReasonResponseNotJSON, "%s", EchoedNames)).redacted(secrets)
		}
		out.JSON = masked
	}
	if !call.Options.SkipOutputValidation && t.output != nil {
		// Checking against a schema that needs the whole value decodes it:
		// several times the answer's bytes, drawn on the call's memory
		// budget first.
		if len(out.JSON) > 64<<10 && t.output.decodes(out.JSON) {
			if err := call.Options.Hold.Take(ctx, DecodeCost*int64(len(out.JSON))); err != nil {
				return nil, t.wrap(HandlerError(ReasonOverloaded, "the service is at its memory budget and could not check this answer in time: try again shortly (%v)", err)).redacted(secrets)
			}
		}
		if vs := t.output.validate(ctx, out.JSON, jsoncheck.Options{AllowInvalidUTF8: true}); vs != nil {
			// The violations quote the output, which may echo the
			// credential: redacted like every message. They are the
			// upstream's words (its names and values), so the message
			// leaves them to Outside.
			return nil, (&Error{
				Code:       CodeOutputValidationFailed,
				Status:     out.Status,
				Violations: vs,
				Message:    fmt.Sprintf("Tool %q output failed validation", t.ID()),
				Outside:    summarize(vs),
			}).finish(t.ID()).redacted(secrets)
		}
	}
	return &Result{
		Output:      out.JSON,
		Status:      out.Status,
		Attempts:    out.Attempts,
		Duration:    time.Since(start),
		OutsideData: t.manifest.OutsideData(),
		MediaType:   out.MediaType,
		Secrets:     secrets,
	}, nil
}

// ValidateInput checks that input is a JSON object valid against the input
// schema and returns it with schema defaults filled in. Input that is not one
// well-formed JSON object, that names a member twice anywhere, or that nests
// deeper than jsoncheck.MaxDepth (128) is refused before the schema is
// consulted, so that the validator and every reader after it (URL, headers,
// body) see the same document.
func (t *Tool) ValidateInput(input json.RawMessage) (json.RawMessage, error) {
	return t.validateInput(context.Background(), input)
}

func (t *Tool) validateInput(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	if err := jsoncheck.Check(input, jsoncheck.MaxDepth); err != nil {
		return nil, t.structureError(err)
	}
	if jsonType(input) != "object" {
		vs := []Violation{{Pointer: "", Message: "must be a JSON object; got " + article(jsonType(input))}}
		return nil, t.inputError(vs)
	}
	if t.input == nil {
		return input, nil
	}
	in := json.RawMessage(t.input.defaults.apply(input))
	if vs := t.input.validate(ctx, in, jsoncheck.Options{}); vs != nil {
		return nil, t.inputError(vs)
	}
	return in, nil
}

// structureError refuses input that jsoncheck refused.
func (t *Tool) structureError(err error) error {
	v := Violation{Message: err.Error()}
	var je *jsoncheck.Error
	if errors.As(err, &je) {
		v.Pointer = je.Pointer
		switch je.Kind {
		case jsoncheck.Duplicate:
			v.Pointer = je.At()
			v.Message = fmt.Sprintf("is given twice in one object: send %q once (readers disagree on which copy wins)", je.Name)
		case jsoncheck.TooDeep:
			v.Message = fmt.Sprintf("nests deeper than %d levels: send a flatter value", je.Limit)
		}
		if je.Kind == jsoncheck.Syntax {
			v.Pointer, v.Message = "", "must be a JSON object; got something that "+err.Error()
		}
	}
	e := t.inputError([]Violation{v}).(*Error)
	e.Reason = ReasonInputInvalid
	return e
}

func (t *Tool) inputError(vs []Violation) error {
	return (&Error{
		Code:       CodeInputValidationFailed,
		Violations: vs,
		Message:    fmt.Sprintf("Tool %q input failed validation: %s", t.ID(), summarize(vs)),
	}).finish(t.ID())
}

func summarize(vs []Violation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		p := v.Pointer
		if p == "" {
			p = "/"
		}
		parts[i] = p + ": " + v.Message
	}
	return strings.Join(parts, "; ")
}

// wrap makes any handler error a *Error of this tool: a copy, never the
// error the handler returned, which may be shared (a connection source hands
// one error to every waiter of a refresh). The words of an error of another
// type are nobody's the service knows: Outside.
func (t *Tool) wrap(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e.finish(t.ID())
	}
	return (&Error{Code: CodeHandlerError, Message: "its handler failed", Outside: err.Error(), Err: err}).finish(t.ID())
}

// EchoedNames is the message of an output whose member names echo the
// call's credentials so that, masked, two names of one object read the
// same: it cannot be handed out masked, nor whole.
const EchoedNames = "the answer echoes the call's credentials in its member names, and masked they make two names of one object the same: it cannot be handed out"

// notJSON is the response-not-json error of an output jsoncheck refused:
// what is wrong in the service's words, where (the output's own names, or
// the parser's words) as Outside.
func notJSON(what string, err error) *Error {
	var je *jsoncheck.Error
	if !errors.As(err, &je) {
		return HandlerError(ReasonResponseNotJSON, "%s %v", what, err)
	}
	return &Error{Code: CodeHandlerError, Reason: ReasonResponseNotJSON, Message: what + " " + je.What(), Outside: je.Where()}
}

// DryRun validates input and asks the handler to describe the request it
// would send, sending nothing. Handlers that cannot describe a call give a
// handler-error.
func (t *Tool) DryRun(ctx context.Context, cc CallContext, input json.RawMessage, opts InvokeOptions) (json.RawMessage, error) {
	in, err := t.ValidateInput(input)
	if err != nil {
		return nil, err
	}
	dr, ok := t.handler.(DryRunner)
	if !ok {
		return nil, HandlerError("", "this tool's handler cannot describe a call without making it").finish(t.ID())
	}
	call := newCall(t, cc, in, opts)
	secrets := call.Secrets
	out, err := dr.DryRun(ctx, call)
	if err != nil {
		return nil, t.wrap(err).redacted(secrets)
	}
	return secrets.Long().RedactJSON(out), nil
}
