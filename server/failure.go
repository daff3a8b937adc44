package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// How the service words an error: one failure (status, code, reason,
// message, Retry-After, details) for every door, REST's JSON of it,
// {"error":{"code","reason","message","details"}}, and the operator's log
// line of a store failure.

// retryAfter is the Retry-After of a 503 for store trouble, in seconds.
const retryAfter = "2"

// storeFailed logs a store failure for the operator, with the driver's
// words (which never reach a response).
func (s *Server) storeFailed(what string, err error) {
	s.cfg.Logger.Error("store failure", "during", what, "error", err.Error(), "cause", storeCause(err))
}

func storeCause(err error) string {
	var se *connections.StoreError
	if errors.As(err, &se) && se.Err != nil {
		return se.Err.Error()
	}
	return ""
}

// errorBody is every error response: {"error":{"code","reason","message","details"}}.
type errorBody struct {
	Code    string         `json:"code"`
	Reason  string         `json:"reason,omitempty"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, reason, msg string) {
	writeJSON(w, status, map[string]errorBody{"error": {Code: code, Reason: reason, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// statusOf maps a tool error to its HTTP status (docs/design.md §7).
func statusOf(e *synth.Error) int {
	switch e.Code {
	case synth.CodeInputValidationFailed:
		return http.StatusBadRequest
	case synth.CodeToolNotFound:
		return http.StatusNotFound
	case synth.CodePreconditionFailed:
		switch e.Reason {
		case synth.ReasonApprovalRequired, httpspec.ReasonEgressDenied:
			return http.StatusForbidden
		case synth.ReasonStoreUnavailable, synth.ReasonConnectionRefreshing, synth.ReasonProviderUnavailable:
			return http.StatusServiceUnavailable
		}
		return http.StatusConflict
	case synth.CodeHandlerError:
		switch e.Reason {
		case synth.ReasonTimeout:
			return http.StatusGatewayTimeout
		case synth.ReasonOverloaded:
			return http.StatusServiceUnavailable
		}
		return http.StatusBadGateway
	case synth.CodeOutputValidationFailed:
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// failure is how every front door words an error of the service: its HTTP
// status, the API's code and reason, the message, and a Retry-After when
// trying again later helps.
type failure struct {
	status            int
	code, reason, msg string
	retryAfter        string
	details           map[string]any
}

// failureOf words err, a *refusal or a *synth.Error (anything else is a
// handler error carrying its text).
func failureOf(err error) failure {
	var r *refusal
	if errors.As(err, &r) {
		return failure{status: r.status, code: r.code, reason: r.reason, msg: r.msg, retryAfter: r.retryAfter, details: r.details}
	}
	e := toolError(err)
	// The message is whole (the service's words, then what a third party
	// said, as Error joins them); details.outside has the third party's
	// part alone.
	f := failure{status: statusOf(e), code: string(e.Code), reason: e.Reason, msg: e.Error(), details: e.Details()}
	switch e.Reason {
	case synth.ReasonStoreUnavailable:
		// One outage, one code on every route (a key check, a secrets
		// route, readiness, a call): a client branches on it once.
		f.code, f.retryAfter = synth.ReasonStoreUnavailable, retryAfter
	case synth.ReasonOverloaded, synth.ReasonConnectionRefreshing, synth.ReasonProviderUnavailable:
		f.retryAfter = retryAfter
	}
	return f
}

// writeFailure answers a REST request with err, as failureOf words it.
func writeFailure(w http.ResponseWriter, err error) {
	f := failureOf(err)
	if f.retryAfter != "" {
		w.Header().Set("Retry-After", f.retryAfter)
	}
	writeJSON(w, f.status, map[string]errorBody{"error": {Code: f.code, Reason: f.reason, Message: f.msg, Details: f.details}})
}
