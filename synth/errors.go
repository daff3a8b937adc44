package synth

import (
	"fmt"
	"strings"

	"github.com/httptools/httptools/redact"
)

// Code is an error code of the reference runtime.
type Code string

// Error codes.
const (
	CodeInputValidationFailed  Code = "input-validation-failed"
	CodeOutputValidationFailed Code = "output-validation-failed"
	CodeHandlerError           Code = "handler-error"
	CodePreconditionFailed     Code = "precondition-failed"
	CodeToolNotFound           Code = "tool-not-found"
	CodeInvalidToolDefinition  Code = "invalid-tool-definition"
	CodeInvalidSchema          Code = "invalid-schema"
)

// Reasons refine a code. These are the ones any kind may give, and the
// pipeline's own; a kind adds its own (package httpspec's).
const (
	// ReasonInputInvalid refines input-validation-failed when the input is
	// refused for its structure, before its schema: not one JSON object, a
	// member named twice, nesting over the limit, or a value that would
	// climb out of the URL's path (a "." or ".." segment).
	ReasonInputInvalid                = "input-invalid"
	ReasonSecretUnavailable           = "secret-unavailable"
	ReasonConnectionUnavailable       = "connection-unavailable"
	ReasonConnectionNeedsReauth       = "connection-needs-reauth"
	ReasonConnectionPermissionMissing = "connection-permission-missing"
	ReasonApprovalRequired            = "approval-required"
	// ReasonConnectionRefreshing: the connection is sound but its token
	// cannot be had right now (another replica's refresh is under way, or
	// was interrupted and its outcome is not yet known): try again; the
	// person need not connect again.
	ReasonConnectionRefreshing = "connection-refreshing"
	// ReasonProviderUnavailable: the OAuth provider's token endpoint
	// failed for now (unreachable, 5xx, timed out); the connection stays
	// connected: try again.
	ReasonProviderUnavailable = "provider-unavailable"
	// ReasonStoreUnavailable: the store of secrets or connections failed
	// (down, frozen, read-only): nothing is wrong with the call, which may
	// be tried again.
	ReasonStoreUnavailable = "store-unavailable"
	// ReasonOverloaded: the process had no room for the call's bytes (the
	// memory budget) before its deadline; the call may be tried again.
	ReasonOverloaded = "overloaded"
	// ReasonResponseNotJSON: the handler's output is not one well-formed
	// JSON value within the limits.
	ReasonResponseNotJSON = "response-not-json"
	// ReasonTimeout and ReasonCanceled: the call's deadline passed, or its
	// caller cancelled it.
	ReasonTimeout  = "timeout"
	ReasonCanceled = "canceled"
)

// The reasons of the http kind are package httpspec's (ReasonEgressDenied,
// ReasonUpstreamStatus, …).

// Error is every error a tool returns: load-time refusals and call failures.
// Callers branch on Code and Reason with errors.As:
//
//	var e *synth.Error
//	if errors.As(err, &e) && e.Code == synth.CodePreconditionFailed { … }
type Error struct {
	Code   Code
	Reason string // may be empty
	ToolID string
	// Message is the service's own words (what happened, what to do next),
	// with every resolved secret redacted. It never quotes a third party:
	// that is Outside.
	Message string
	// Outside is what a third party said that the error quotes: an
	// upstream's answer (or an HTML page's title), a remote MCP server's
	// or an OAuth provider's message, the network's words for a failed
	// exchange, an output's values that broke its schema. It is data from
	// outside (redacted and cut like Message): a door that shows the
	// error to a model marks it as such (the MCP door puts it inside the
	// outside-data boundary), REST has it in details.outside. Error()
	// joins the two: read Error(), not Message, for the whole text. A
	// handler's error of another type than *Error is nobody's words the
	// service knows: its text is Outside, Message "its handler failed".
	Outside string
	// Status is the upstream HTTP status, when there was one.
	Status int
	// Body is at most 512 bytes of the upstream body, redacted, on
	// upstream-status failures.
	Body string
	// Violations lists schema violations on input- and output-validation
	// failures.
	Violations []Violation
	// Problems lists load-time findings (errors and warnings) on
	// invalid-tool-definition and invalid-schema.
	Problems []Problem
	// Err is the cause, if any. Its text is not part of Message unless the
	// handler put it there (already redacted).
	Err error
}

// Violation is one schema violation of an input or output value.
type Violation struct {
	Pointer string `json:"pointer"` // JSON pointer into the value, "" for the root
	Message string `json:"message"`
}

// Error returns the message, and what the third party said after it
// ("Message: Outside").
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = string(e.Code)
	}
	if e.Outside == "" {
		return msg
	}
	return msg + ": " + e.Outside
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Details returns the error's evidence as a JSON-friendly map (status, body,
// outside, violations, problems), or nil when there is none.
func (e *Error) Details() map[string]any {
	d := map[string]any{}
	if e.Status != 0 {
		d["status"] = e.Status
	}
	if e.Body != "" {
		d["body"] = e.Body
	}
	if e.Outside != "" {
		d["outside"] = e.Outside
	}
	if len(e.Violations) > 0 {
		d["violations"] = e.Violations
	}
	if len(e.Problems) > 0 {
		ps := make([]map[string]string, len(e.Problems))
		for i, p := range e.Problems {
			sev := "error"
			if p.Severity == SeverityWarning {
				sev = "warning"
			}
			ps[i] = map[string]string{"path": p.Path, "message": p.Message, "severity": sev}
		}
		d["problems"] = ps
	}
	if len(d) == 0 {
		return nil
	}
	return d
}

// HandlerError returns a handler-error with a reason. Tool.Invoke prefixes the
// message with `Tool "<id>" failed: ` (the reference runtime's "handler threw" is a JavaScript word).
func HandlerError(reason, format string, args ...any) *Error {
	return &Error{Code: CodeHandlerError, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// PreconditionFailed returns a precondition-failed error with a reason.
// Tool.Invoke turns the message into `Tool "<id>" was not run: <reason>: …`.
func PreconditionFailed(reason, format string, args ...any) *Error {
	return &Error{Code: CodePreconditionFailed, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// finish returns a copy of e with the tool id and the reference runtime's
// message prefix. e itself is never changed: it may be shared.
func (e *Error) finish(toolID string) *Error {
	c := *e
	c.ToolID = toolID
	switch c.Code {
	case CodeHandlerError:
		if !strings.HasPrefix(c.Message, "Tool ") {
			c.Message = fmt.Sprintf("Tool %q failed: %s", toolID, c.Message)
		}
	case CodePreconditionFailed:
		if !strings.HasPrefix(c.Message, "Tool ") {
			c.Message = fmt.Sprintf("Tool %q was not run: %s: %s", toolID, c.Reason, c.Message)
		}
	}
	return &c
}

// redacted returns e with every secret of the call removed from the words
// it carries: message, outside words, body, violations and problems. e must be a copy the
// caller owns (finish makes one).
func (e *Error) redacted(secrets *redact.Set) *Error {
	if secrets.Empty() {
		return e
	}
	e.Message = secrets.Redact(e.Message)
	e.Outside = secrets.Redact(e.Outside)
	e.Body = secrets.Redact(e.Body)
	if len(e.Violations) > 0 {
		vs := make([]Violation, len(e.Violations))
		for i, v := range e.Violations {
			vs[i] = Violation{Pointer: secrets.Redact(v.Pointer), Message: secrets.Redact(v.Message)}
		}
		e.Violations = vs
	}
	if e.Err != nil {
		e.Err = &redactedCause{msg: secrets.Redact(e.Err.Error()), err: e.Err}
	}
	return e
}

// redactedCause keeps a cause for errors.Is and errors.As while its text is
// the redacted one.
type redactedCause struct {
	msg string
	err error
}

func (c *redactedCause) Error() string { return c.msg }
func (c *redactedCause) Unwrap() error { return c.err }
