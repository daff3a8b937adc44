package mcpremote

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// openError words a session that could not be opened.
func (h *Handler) openError(err error, call *synth.Call) error {
	var e *synth.Error
	if errors.As(err, &e) {
		return e
	}
	var de *fetch.DeniedError
	if errors.As(err, &de) {
		return &synth.Error{Code: synth.CodeHandlerError, Reason: httpspec.ReasonEgressDenied, Err: err,
			Message: fmt.Sprintf("the outbound guard refused a request to the MCP server %s, so nothing was sent", h.where()), Outside: call.Secrets.Redact(de.Error())}
	}
	var late *lateError
	if errors.As(err, &late) {
		return &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonTimeout, Err: err,
			Message: fmt.Sprintf("the MCP server %s did not finish the handshake (initialize) within the call's time", h.where())}
	}
	var u *unauthorizedError
	if errors.As(err, &u) {
		return synth.HandlerError(ReasonRemoteUnauthorized, "the MCP server %s refused the tool's credential (401): %s", h.where(), h.credHint())
	}
	var le *listError
	if errors.As(err, &le) {
		return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonRemoteUnreachable, Err: err,
			Message: fmt.Sprintf("the MCP server %s did not list its tools, against which every call is checked first; nothing was sent", h.where()), Outside: describe(le.err, call)}
	}
	return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonRemoteUnreachable, Err: err,
		Message: fmt.Sprintf("could not open a session with the MCP server %s", h.where()), Outside: describe(err, call)}
}

// describe words a failure of the SDK or the transport, redacted and cut.
func describe(err error, call *synth.Call) string {
	var de *fetch.DeniedError
	if errors.As(err, &de) {
		return call.Secrets.Redact(de.Error())
	}
	return clip(call.Secrets.Redact(err.Error()))
}

// clip cuts a remote text to what a message should hold.
func clip(s string) string {
	const n = 2000
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// output turns the remote result into the tool's output.
func (h *Handler) output(res *mcp.CallToolResult, call *synth.Call) (*synth.Output, error) {
	if res.IsError {
		text := call.Secrets.Redact(clip(resultText(res)))
		if text == "" {
			text = "(no text)"
		}
		toolErr := synth.HandlerError(ReasonRemoteToolError, "the remote tool %q answered with an error", h.remote)
		toolErr.Outside = text
		return nil, toolErr
	}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, synth.HandlerError(synth.ReasonResponseNotJSON, "the remote tool's structuredContent: %v", err)
		}
		return &synth.Output{JSON: raw}, nil
	}
	onlyText := len(res.Content) > 0
	for _, c := range res.Content {
		if _, ok := c.(*mcp.TextContent); !ok {
			onlyText = false
		}
	}
	if onlyText {
		text := resultText(res)
		if json.Valid([]byte(text)) {
			return &synth.Output{JSON: json.RawMessage(strings.TrimSpace(text))}, nil
		}
		raw, _ := json.Marshal(text)
		return &synth.Output{JSON: raw}, nil
	}
	raw, err := json.Marshal(res.Content)
	if err != nil {
		return nil, synth.HandlerError(synth.ReasonResponseNotJSON, "the remote tool's content: %v", err)
	}
	return &synth.Output{JSON: raw}, nil
}

// resultText joins the text blocks of a result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
