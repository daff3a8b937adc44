package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/synth"
)

// The call history: every call through the service's one call is handed
// to Config.History, which writes it off the request path (package
// history); GET /v1/calls and the console's Calls page read it back.

// CallStore reads the call history (sqlstore.SQLStore is one). It must be
// safe for concurrent use, and must apply every member of the filter,
// f.Scope included, in its query (before its limit): the service drops a
// record the scope does not allow all the same, but a store that ignores
// Scope returns fewer records than the limit asked for.
type CallStore interface {
	Calls(ctx context.Context, tenant string, f history.Filter) ([]history.Record, error)
}

// recordCall hands one finished call to the history.
func (s *Server) recordCall(c *toolCall, start time.Time, res *synth.Result, err error) {
	h := s.cfg.History
	if h == nil {
		return
	}
	e := history.Entry{Record: history.Record{Tenant: c.tenant, Tool: c.tool.ID(), Person: c.context.Person, At: start,
		Duration: time.Since(start).Milliseconds()}, Input: c.input}
	if c.caller != nil {
		e.Key = c.caller.ID
	}
	switch {
	case err != nil:
		f := failureOf(err)
		e.Code, e.Reason, e.Answer = f.code, f.reason, f.msg // the library's words, redacted already
		e.Status = toolError(err).Status
	case res.Streamed:
		e.Status, e.Attempts, e.Secrets = res.Status, res.Attempts, res.Secrets
		e.Answer = "(streamed to the caller, not kept)"
	default:
		e.Status, e.Attempts, e.Secrets, e.Output = res.Status, res.Attempts, res.Secrets, res.Output
	}
	h.Add(e)
}

// CloseHistory writes the history's queued records and stops it; calls
// made after it are not recorded.
func (s *Server) CloseHistory() { s.cfg.History.Close() }

// callsOf lists the calls key may see: a person key its own person's, and
// of the tools its gate lets it see only (scopeOf), selected in the query.
func (s *Server) callsOf(ctx context.Context, k *auth.APIKey, f history.Filter) ([]history.Record, error) {
	st := s.cfg.Calls
	if st == nil {
		return []history.Record{}, nil
	}
	if k.Role == auth.RolePerson {
		f.Person = k.Person
	}
	scope, err := s.scopeOf(ctx, k.Tenant, k)
	if err != nil {
		return nil, err
	}
	f.Scope = scope
	out, err := st.Calls(ctx, k.Tenant, f)
	if err != nil {
		return nil, s.storeRefusal("reading the call history", err)
	}
	// Whatever the store let through, nothing the key may not see leaves
	// (a store written before Filter.Scope ignores it).
	out = slices.DeleteFunc(out, func(r history.Record) bool {
		return !scope.Allows(r.Tool, r.Person) || k.Role == auth.RolePerson && r.Person != k.Person
	})
	if out == nil {
		out = []history.Record{}
	}
	return out, nil
}

// filterOf reads GET /v1/calls's filters: tool, person, status (ok or
// error), since (RFC 3339, or a duration back from now: 1h), limit.
func filterOf(r *http.Request) (history.Filter, error) {
	q := r.URL.Query()
	f := history.Filter{Tool: q.Get("tool"), Person: q.Get("person"), Status: q.Get("status")}
	if f.Status != "" && f.Status != "ok" && f.Status != "error" {
		return f, &refusal{status: http.StatusBadRequest, code: "bad-request", msg: `status is "ok" or "error"`}
	}
	if v := q.Get("since"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			f.Since = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, v); err == nil {
			f.Since = t
		} else {
			return f, &refusal{status: http.StatusBadRequest, code: "bad-request", msg: "since is a time (RFC 3339) or a duration back from now (1h)"}
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return f, &refusal{status: http.StatusBadRequest, code: "bad-request", msg: "limit is a number of calls, at most 1000"}
		}
		f.Limit = n
	}
	return f, nil
}

func (s *Server) listCalls(w http.ResponseWriter, r *http.Request) {
	f, err := filterOf(r)
	if err != nil {
		writeFailure(w, err)
		return
	}
	out, err := s.callsOf(r.Context(), identity(r.Context()), f)
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"calls": out})
}
