package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/synth"
)

// The console's catalogue and tool pages: search, the form made from an
// input schema, dry run and run.

// toolRow is a tool as the catalogue lists it.
type toolRow struct {
	ID, Description, Method, Host, Auth string
	Mutating                            bool
	Search                              string
	// Summary is the description's first paragraph, Details the others:
	// an imported tool's description is its operation's summary, a blank
	// line and its description, which one paragraph would run together.
	Summary string
	Details []string
}

// paragraphs splits a description at its blank lines.
func paragraphs(d string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(d, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func rowOf(id string, raw []byte) toolRow {
	m := gjson.ParseBytes(raw)
	row := toolRow{ID: id, Description: m.Get("description").String(), Method: m.Get("spec.method").String(),
		Mutating: m.Get("mutating").Bool(), Auth: m.Get("spec.authorization.kind").String()}
	if ps := paragraphs(row.Description); len(ps) > 0 {
		row.Summary, row.Details = ps[0], ps[1:]
	}
	if row.Auth == "" {
		row.Auth = "none"
	}
	if row.Method == "" {
		row.Method = m.Get("spec.kind").String()
	}
	u := m.Get("spec.urlTemplate").String()
	if _, rest, ok := strings.Cut(u, "://"); ok {
		row.Host, _, _ = strings.Cut(rest, "/")
		row.Host, _, _ = strings.Cut(row.Host, "?")
	}
	words := []string{row.ID, row.Description, row.Method, row.Host, row.Auth, map[bool]string{true: "mutating"}[row.Mutating]}
	// Its parameters' names too, as a model's search_tools finds a tool
	// (search.go): in a catalogue of hundreds, "invoiceNumber" is often
	// the one word a person remembers.
	m.Get("input.properties").ForEach(func(k, _ gjson.Result) bool {
		words = append(words, k.String())
		return true
	})
	row.Search = strings.ToLower(strings.Join(words, " "))
	return row
}

func (s *Server) uiCatalogue(w http.ResponseWriter, r *http.Request) {
	ts := s.Tools()
	k := identity(r.Context())
	g, err := s.gateFor(r.Context(), k.Tenant, k, "")
	if err != nil {
		f := failureOf(err)
		s.uiRender(w, r, f.status, "error", uiPage{Title: "Tools", Nav: "tools", Error: f.msg})
		return
	}
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	rows := make([]toolRow, 0, len(ts.ids))
	visible := 0
	for _, id := range ts.ids {
		if !g.decide(ts.tools[id]).Allow {
			continue // denied: not in the catalogue, its count or a search
		}
		visible++
		row := rowOf(id, ts.raw[id])
		if q != "" && !matchesAll(row.Search, q) {
			continue
		}
		rows = append(rows, row)
	}
	s.uiRender(w, r, http.StatusOK, "catalogue", uiPage{Title: "Tools", Nav: "tools", Data: map[string]any{"Rows": rows, "Q": r.URL.Query().Get("q"), "Total": visible}})
}

// matchesAll: every word of q is in text.
func matchesAll(text, q string) bool {
	for _, w := range strings.Fields(q) {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// field is one input of a tool's form, from a top-level property of its
// input schema.
type field struct {
	Name, Label, Type, Description, Value string
	Required                              bool
	Enum                                  []string
	// Item is the type of a list's items: string, integer or number.
	Item string
}

// fieldsOf reads the form's fields from the input schema: strings, numbers,
// integers and booleans as inputs, enums as a choice, anything else as
// JSON.
func fieldsOf(input gjson.Result) []field {
	req := map[string]bool{}
	for _, r := range input.Get("required").Array() {
		req[r.String()] = true
	}
	var out []field
	input.Get("properties").ForEach(func(k, v gjson.Result) bool {
		f := field{Name: k.String(), Label: k.String(), Required: req[k.String()], Description: v.Get("description").String()}
		if d := v.Get("default"); d.Exists() {
			f.Value = d.String()
			if d.Type == gjson.JSON {
				f.Value = d.Raw
			}
		}
		typ := v.Get("type").String()
		item := v.Get("items.type").String()
		switch {
		case typ == "array" && (item == "string" || item == "integer" || item == "number") && !v.Get("items.enum").Exists():
			// A list of words or numbers: one a line, not JSON to write.
			f.Type, f.Item = "list", item
			if d := v.Get("default"); d.IsArray() {
				var lines []string
				for _, e := range d.Array() {
					lines = append(lines, e.String())
				}
				f.Value = strings.Join(lines, "\n")
			}
		case v.Get("enum").Exists():
			f.Type = "enum"
			for _, e := range v.Get("enum").Array() {
				f.Enum = append(f.Enum, e.String())
			}
		case typ == "string":
			f.Type = "string"
		case typ == "integer" || typ == "number":
			f.Type = typ
		case typ == "boolean":
			f.Type = "boolean"
		default:
			f.Type = "json"
		}
		out = append(out, f)
		return true
	})
	// Required fields first, each group in the schema's order: a form
	// whose one required field comes after ten optional ones hides it.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Required && !out[j].Required })
	return out
}

// inputOf builds the tool input from a submitted form: empty fields are
// left out; "_json", when given, is the whole input instead.
func inputOf(form url.Values, fields []field) (json.RawMessage, error) {
	if raw := strings.TrimSpace(form.Get("_json")); raw != "" {
		if !json.Valid([]byte(raw)) {
			return nil, errors.New("the input JSON is not valid JSON")
		}
		return json.RawMessage(raw), nil
	}
	in := map[string]any{}
	for _, f := range fields {
		v := form.Get("in." + f.Name)
		if v == "" {
			continue
		}
		switch f.Type {
		case "integer", "number":
			var x any
			if json.Unmarshal([]byte(strings.TrimSpace(v)), &x) != nil {
				return nil, fmt.Errorf("%s: %q is not a number", f.Name, v)
			}
			if _, ok := x.(float64); !ok {
				return nil, fmt.Errorf("%s: %q is not a number", f.Name, v)
			}
			in[f.Name] = json.Number(strings.TrimSpace(v)) // its text kept: 9007199254740993 stays exact
		case "boolean":
			in[f.Name] = v == "true"
		case "list":
			items := []any{}
			for _, line := range strings.Split(v, "\n") {
				if line = strings.TrimSpace(line); line == "" {
					continue
				}
				if f.Item == "string" {
					items = append(items, line)
					continue
				}
				var x any
				if json.Unmarshal([]byte(line), &x) != nil {
					return nil, fmt.Errorf("%s: %q is not a number", f.Name, line)
				}
				if _, ok := x.(float64); !ok {
					return nil, fmt.Errorf("%s: %q is not a number", f.Name, line)
				}
				items = append(items, json.Number(line))
			}
			if len(items) > 0 {
				in[f.Name] = items
			}
		case "json":
			var x any
			if err := json.Unmarshal([]byte(v), &x); err != nil {
				return nil, fmt.Errorf("%s: not valid JSON", f.Name)
			}
			in[f.Name] = x
		case "enum":
			// An enum of numbers or booleans is sent as one.
			var x any
			if json.Unmarshal([]byte(v), &x) == nil {
				if _, isStr := x.(string); !isStr {
					in[f.Name] = x
					continue
				}
			}
			in[f.Name] = v
		default:
			in[f.Name] = v
		}
	}
	b, err := json.Marshal(in)
	return b, err
}

// toolView is what the tool page shows.
type toolView struct {
	toolRow
	URLTemplate string
	Fields      []field
	InputSchema string
	Connection  string
	AsPerson    bool // the key is not a person's: the form asks whose call it is
	Person      string
	JSON        string
	Result      *runResult
}

// runResult is a dry run's or a run's outcome, as shown.
type runResult struct {
	DryRun                       bool
	HTTPStatus                   int
	Status, Attempts, DurationMs int64
	OutsideData                  bool
	Output                       string
	Code, Reason, Message        string
	Curl                         string
	Request                      string
	// An answer of bytes (an image, a PDF): shown, if an image, and
	// offered for download, from a data: URL of its own bytes.
	MediaType, MediaName string
	MediaBytes           int
	MediaURL             template.URL
	Image                bool
	// Model is what a model calling the tool over MCP would read, when
	// the answer is over its result budget (ui_budget.go).
	Model *modelView
}

// setMedia shows the bytes of an answer of media type mt (output: their
// base64 as a JSON string) as an image when they are one, and as a
// download. The type is the upstream's, so it is checked to be a plain
// media type before it goes into a URL.
func (res *runResult) setMedia(mt string, output []byte) {
	m, _, err := mime.ParseMediaType(mt)
	if err != nil || strings.ContainsAny(m, ",;\"") {
		m = "application/octet-stream"
	}
	data := decodedMedia(output)
	res.MediaType, res.MediaBytes = m, len(data)
	res.Image = strings.HasPrefix(m, "image/")
	res.MediaName = "output"
	if exts, _ := mime.ExtensionsByType(m); len(exts) > 0 {
		res.MediaName += exts[0]
	}
	res.MediaURL = template.URL("data:" + m + ";base64," + base64.StdEncoding.EncodeToString(data))
}

// toolView is the page of tool id, false when there is none for the
// signed-in key (none at all, or one the policies deny it).
func (s *Server) toolView(r *http.Request, id string) (*toolView, bool) {
	ts := s.Tools()
	raw, ok := ts.raw[id]
	if !ok {
		return nil, false
	}
	k := identity(r.Context())
	if g, err := s.gateFor(r.Context(), k.Tenant, k, ""); err != nil || !g.allows(r.Context(), ts.tools[id]) {
		return nil, false
	}
	m := gjson.ParseBytes(raw)
	v := &toolView{toolRow: rowOf(id, raw), URLTemplate: m.Get("spec.urlTemplate").String(), Fields: fieldsOf(m.Get("input")),
		Connection: m.Get("spec.authorization.connection").String()}
	var pretty bytes.Buffer
	if json.Indent(&pretty, []byte(m.Get("input").Raw), "", "  ") == nil {
		v.InputSchema = pretty.String()
	}
	v.AsPerson = identity(r.Context()).Role != auth.RolePerson
	return v, true
}

func (s *Server) uiTool(w http.ResponseWriter, r *http.Request) {
	v, ok := s.toolView(r, r.PathValue("id"))
	if !ok {
		s.uiRender(w, r, http.StatusNotFound, "error", uiPage{Title: "No such tool", Nav: "tools", Error: fmt.Sprintf("There is no tool %q.", r.PathValue("id"))})
		return
	}
	// From the history's "dry-run this again": the input, as kept.
	v.JSON = r.URL.Query().Get("json")
	s.uiRender(w, r, http.StatusOK, "tool", uiPage{Title: v.ID, Nav: "tools", Data: v})
}

func (s *Server) uiToolRun(w http.ResponseWriter, r *http.Request) {
	v, ok := s.toolView(r, r.PathValue("id"))
	tool, found := s.Tools().Tool(r.PathValue("id"))
	if !ok || !found {
		s.uiRender(w, r, http.StatusNotFound, "error", uiPage{Title: "No such tool", Nav: "tools", Error: fmt.Sprintf("There is no tool %q.", r.PathValue("id"))})
		return
	}
	if err := r.ParseForm(); err != nil {
		s.uiRender(w, r, http.StatusBadRequest, "tool", uiPage{Title: v.ID, Nav: "tools", Data: v, Error: "The form could not be read."})
		return
	}
	for i := range v.Fields {
		v.Fields[i].Value = r.PostForm.Get("in." + v.Fields[i].Name)
	}
	v.Person, v.JSON = r.PostForm.Get("person"), r.PostForm.Get("_json")
	input, err := inputOf(r.PostForm, v.Fields)
	if err != nil {
		s.uiRender(w, r, http.StatusBadRequest, "tool", uiPage{Title: v.ID, Nav: "tools", Data: v, Error: err.Error()})
		return
	}
	dry := r.PostForm.Get("action") == "dry-run"
	res := s.runForConsole(r.Context(), tool, input, v.Person, dry)
	// An upstream may echo the credential back (in its output or its
	// error): the console shows it redacted.
	if red := s.toolSecrets(r.Context(), v.ID); !red.Empty() {
		res.Output, res.Message, res.Curl, res.Request = red.Redact(res.Output), red.Redact(res.Message), red.Redact(res.Curl), red.Redact(res.Request)
		if res.Model != nil {
			res.Model.Text = red.Redact(res.Model.Text)
		}
	}
	v.Result = res
	s.uiRender(w, r, http.StatusOK, "tool", uiPage{Title: v.ID, Nav: "tools", Data: v})
}

// runForConsole runs (or, dry, describes) a call of tool for the
// signed-in key through the service's one call, as REST and MCP do, with a
// hold of its own on the memory budget, and says what happened as the
// console shows it.
func (s *Server) runForConsole(ctx context.Context, tool *synth.Tool, input json.RawMessage, person string, dry bool) *runResult {
	res := &runResult{DryRun: dry, HTTPStatus: http.StatusOK}
	c := toolCall{caller: identity(ctx), tool: tool, context: CallContext{Person: person}, input: input}
	var err error
	if dry {
		var req json.RawMessage
		if req, err = s.dryRun(ctx, c); err == nil {
			res.Curl = gjson.GetBytes(req, "curl").String()
			var b bytes.Buffer
			json.Indent(&b, req, "", "  ")
			res.Request = b.String()
		}
	} else {
		hold := s.cfg.Budget.HoldFor(s.shareOf(identity(ctx).Tenant))
		defer hold.Release()
		c.opts.Hold = hold
		var out *synth.Result
		if out, err = s.call(ctx, &c); err == nil {
			res.Status, res.Attempts, res.DurationMs = int64(out.Status), int64(out.Attempts), out.Duration.Milliseconds()
			res.OutsideData = out.OutsideData
			res.Model = s.modelViewOf(ctx, tool.ID(), out)
			if out.MediaType != "" {
				res.setMedia(out.MediaType, out.Output)
			}
			var b bytes.Buffer
			if json.Indent(&b, out.Output, "", "  ") == nil {
				res.Output = b.String()
			} else {
				res.Output = string(out.Output)
			}
		}
	}
	if err != nil {
		f := failureOf(err)
		res.HTTPStatus, res.Code, res.Reason, res.Message = f.status, f.code, f.reason, f.msg
	}
	return res
}

// toolSecrets is the set of the secret values a tool's call may use, for
// the signed-in tenant.
func (s *Server) toolSecrets(ctx context.Context, id string) *redact.Set {
	red := &redact.Set{}
	tool, ok := s.Tools().Tool(id)
	if !ok {
		return red
	}
	cc := s.callContext(tenantOf(ctx), CallContext{})
	su, ok := tool.Handler().(synth.SecretUser)
	if !ok {
		return red
	}
	for _, ref := range su.SecretRefs() {
		if v, err := cc.Secrets.ResolveSecret(ctx, ref); err == nil && v != "" {
			red.Add(v)
		}
	}
	return red
}
