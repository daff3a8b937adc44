package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/httptools/httptools/synth"
)

// The console's "as the model reads it" view of a run. A person sees a
// tool's whole answer, as a REST caller does unless it asks for a budget;
// a model calling the same tool over MCP is handed the answer cut to its
// result budget (resultbudget.go). When a run's answer is over that
// budget, the tool page shows beside the whole what the model would read:
// the cut text, the notice, and a link to the kept whole.

// modelView is a run's answer as an MCP call of it gives a model, when it
// is over the call's result budget.
type modelView struct {
	Budget int
	// Text is the part of the answer that fits, inside its boundary when
	// it is outside data; "" for a media answer, which the model gets as
	// the link alone.
	Text   string
	Notice string
	// LeftOut counts the items of the arrays and objects the notice names
	// as cut (the first trim.MaxCuts of them).
	LeftOut int
	// WholeURL opens the kept whole in the console ("" when it was not
	// kept); WholeBytes is its size, Expires when it goes.
	WholeURL   string
	WholeBytes int
	Expires    string
}

// modelViewOf is what a model would read of out, tool's answer to the
// signed-in key of ctx, or nil when it is within the budget. It cuts the
// answer as an MCP result does (fitResult) and so keeps the whole for the
// key, on the memory budget, for the same time.
func (s *Server) modelViewOf(ctx context.Context, tool string, out *synth.Result) *modelView {
	r := mcpResult{output: out.Output, outside: out.OutsideData, tool: tool, media: out.MediaType}
	if r.outside {
		r.marker = newMarker()
	}
	fit := s.fitResult(ctx, r, identity(ctx).Tenant)
	if fit.isError {
		return &modelView{Budget: s.cfg.ResultBudgets.of(identity(ctx).Tenant, tool), Notice: fit.errText}
	}
	c := fit.cut
	if c == nil {
		return nil
	}
	v := &modelView{Budget: c.Budget, Notice: c.notice(tool), Expires: c.Expires}
	if fit.media == "" {
		v.Text = fit.text()
	}
	for _, k := range c.Cuts {
		if k.Kind != "string" {
			v.LeftOut += k.Total - k.Kept
		}
	}
	if id, ok := strings.CutPrefix(c.Path, "/v1/results/"); ok {
		v.WholeURL = "/ui/tools/" + tool + "/results/" + id
		v.WholeBytes = len(out.Output)
		if out.MediaType != "" {
			v.WholeBytes = len(decodedMedia(out.Output))
		}
	}
	return v
}

// uiResult answers GET /ui/tools/{id}/results/{rid}: the kept whole of a
// cut answer of tool id, for the signed-in key that made the call, as
// GET /v1/results/{rid} gives it, with the secrets of tool id redacted as
// the console shows every answer. The kept answer does not name its tool:
// the link the console makes names the right one, and a URL naming another
// tool redacts that tool's secrets instead (the same key reads the answer
// whole at /v1/results anyway). A media answer is a download: bytes of the
// upstream's type are never rendered as a page of the console's origin.
func (s *Server) uiResult(w http.ResponseWriter, r *http.Request) {
	k := identity(r.Context())
	e, ok := s.keptResult(r.Context(), owner(k.Tenant, keyOf(r.Context())), r.PathValue("rid"))
	if !ok {
		s.uiRender(w, r, http.StatusNotFound, "error", uiPage{Title: "No such answer", Nav: "tools",
			Error: "This answer is no longer kept (it expired, or it is another key's): run the tool again."})
		return
	}
	body, ct := e.body, "application/json"
	if e.media != "" {
		body, ct = decodedMedia(e.body), e.media
		w.Header().Set("Content-Disposition", `attachment; filename="output"`)
	} else if red := s.toolSecrets(r.Context(), r.PathValue("id")); !red.Empty() {
		body = []byte(red.Redact(string(body)))
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}
