package server

import (
	"bytes"
	"context"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/synth"
)

// The web console at /ui: the tool catalogue, a page per tool with a form
// from its input schema (dry run and run), connections (connect, status,
// revoke) and secrets (names, set, delete). Server-side templates and a
// little JavaScript (the catalogue's live search). It acts through the
// same handlers as REST, with the identity of the API key the person
// signed in with; the cookie (HttpOnly, SameSite=Strict) holds a session
// of that key (sessions.go), never the key.
// No secret value, token or key is ever rendered.

//go:embed ui
var uiFiles embed.FS

var uiPages = template.Must(template.New("").Funcs(template.FuncMap{
	"join": strings.Join,
}).ParseFS(uiFiles, "ui/*.html"))

const uiCookie = "httptools_session"

// uiSessionTTL is how long a console sign-in lasts.
const uiSessionTTL = 12 * time.Hour

// uiHandler serves /ui/…; cross-origin POSTs are refused
// (http.CrossOriginProtection), and the cookie is SameSite=Strict.
func (s *Server) uiHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/login", s.uiLoginPage)
	mux.HandleFunc("POST /ui/login", s.uiLogin)
	mux.HandleFunc("POST /ui/logout", s.uiLogout)
	static, _ := fs.Sub(uiFiles, "ui")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/", http.FileServerFS(static)))
	mux.Handle("GET /ui/{$}", s.uiAuthed(s.uiCatalogue))
	mux.Handle("GET /ui/tools/{id}", s.uiAuthed(s.uiTool))
	mux.Handle("POST /ui/tools/{id}", s.uiAuthed(s.uiToolRun))
	mux.Handle("GET /ui/connections", s.uiAuthed(s.uiConnections))
	mux.Handle("POST /ui/connections/connect", s.uiAuthed(s.uiConnect))
	mux.Handle("POST /ui/connections/{id}/revoke", s.uiAuthed(s.uiRevoke))
	mux.Handle("GET /ui/secrets", s.uiAuthed(s.uiSecrets))
	mux.Handle("POST /ui/secrets", s.uiAuthed(s.uiSecretSet))
	mux.Handle("POST /ui/secrets/{envName}/{name}/delete", s.uiAuthed(s.uiSecretDelete))
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusFound) })
	capped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A form is at most the API's body cap (plus its encoding's room).
		r.Body = http.MaxBytesReader(w, r.Body, 2*s.cfg.MaxInputBytes)
		mux.ServeHTTP(w, r)
	})
	return http.NewCrossOriginProtection().Handler(securityHeaders(capped))
}

// securityHeaders: no framing, no sniffing, scripts and styles from /ui
// only.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self' *; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// uiAuthed is authed for the console: the key from the cookie; without
// one, the sign-in page.
func (s *Server) uiAuthed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(uiCookie)
		ss, sessions := s.cfg.Keys.(SessionStore)
		if err != nil || c.Value == "" || !sessions {
			http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
			return
		}
		k, err := ss.SessionKey(r.Context(), c.Value)
		if err != nil {
			if errors.Is(err, connections.ErrNotFound) {
				clearCookie(w, r)
				http.Redirect(w, r, "/ui/login?why=revoked", http.StatusSeeOther)
				return
			}
			s.uiRender(w, r, http.StatusServiceUnavailable, "error", uiPage{Title: "Unavailable", Error: "The store does not answer: try again shortly."})
			return
		}
		h(w, withIdentity(r, k))
	})
}

func setCookie(w http.ResponseWriter, r *http.Request, session string) {
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: session, Path: "/ui", HttpOnly: true,
		Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https", SameSite: http.SameSiteStrictMode, MaxAge: int(uiSessionTTL / time.Second)})
}

func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: "", Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// uiPage is what every page template gets.
type uiPage struct {
	Title  string
	Nav    string // the section: tools, connections, secrets
	Who    *APIKey
	Notice string
	Error  string
	Data   any
}

func (s *Server) uiRender(w http.ResponseWriter, r *http.Request, status int, name string, p uiPage) {
	if p.Who == nil {
		if k := identity(r.Context()); k.Tenant != "" {
			p.Who = k
		}
	}
	// The outcome of the action that redirected here, from its flash
	// cookie (never from the URL, which anyone can write a message into).
	if c, err := r.Cookie(uiFlash); err == nil {
		var f flash
		if b, err := base64.RawURLEncoding.DecodeString(c.Value); err == nil && json.Unmarshal(b, &f) == nil {
			if p.Notice == "" {
				p.Notice = f.Notice
			}
			if p.Error == "" {
				p.Error = f.Error
			}
		}
		http.SetCookie(w, &http.Cookie{Name: uiFlash, Path: "/ui", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	var b bytes.Buffer
	if err := uiPages.ExecuteTemplate(&b, name+".html", p); err != nil {
		s.cfg.Logger.Error("console page failed", "page", name, "error", err.Error())
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

func (s *Server) uiLoginPage(w http.ResponseWriter, r *http.Request) {
	p := uiPage{Title: "Sign in"}
	if r.URL.Query().Get("why") == "revoked" {
		p.Error = "That API key is unknown or was revoked: sign in with another." // a fixed text: the URL chooses which, never what
	}
	s.uiRender(w, r, http.StatusOK, "login", p)
}

func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimSpace(r.PostFormValue("key"))
	if d := s.failures.wait(clientOf(r)); d > 0 {
		if _, ok := s.keys.Load(key); !ok {
			s.uiRender(w, r, http.StatusTooManyRequests, "login", uiPage{Title: "Sign in", Error: "Too many failed sign-ins from this address: wait a few seconds and try again."})
			return
		}
	}
	k, err := s.keyOf(r.Context(), key)
	if errors.Is(err, connections.ErrNotFound) || key == "" {
		s.failedAuth(r)
	}
	if key == "" || err != nil {
		msg := "Unknown or revoked API key. Create one with: httptools keys create --tenant T"
		if err != nil && !errors.Is(err, connections.ErrNotFound) {
			msg = "The store does not answer: try again shortly."
		}
		s.uiRender(w, r, http.StatusUnauthorized, "login", uiPage{Title: "Sign in", Error: msg})
		return
	}
	noteIdentity(r.Context(), k)
	ss, ok := s.cfg.Keys.(SessionStore)
	if !ok {
		s.uiRender(w, r, http.StatusServiceUnavailable, "login", uiPage{Title: "Sign in", Error: "This service's key store keeps no console sessions."})
		return
	}
	session, err := ss.CreateSession(r.Context(), key, uiSessionTTL)
	if err != nil {
		s.uiRender(w, r, http.StatusServiceUnavailable, "login", uiPage{Title: "Sign in", Error: "The store does not answer: try again shortly."})
		return
	}
	setCookie(w, r, session)
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (s *Server) uiLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(uiCookie); err == nil && c.Value != "" {
		if ss, ok := s.cfg.Keys.(SessionStore); ok {
			ss.EndSession(r.Context(), c.Value) // best effort: the cookie goes anyway
		}
	}
	clearCookie(w, r)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// toolRow is a tool as the catalogue lists it.
type toolRow struct {
	ID, Description, Method, Host, Auth string
	Mutating                            bool
	Search                              string
}

func rowOf(id string, raw []byte) toolRow {
	m := gjson.ParseBytes(raw)
	row := toolRow{ID: id, Description: m.Get("description").String(), Method: m.Get("spec.method").String(),
		Mutating: m.Get("mutating").Bool(), Auth: m.Get("spec.authorization.kind").String()}
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
	row.Search = strings.ToLower(strings.Join([]string{row.ID, row.Description, row.Method, row.Host, row.Auth, map[bool]string{true: "mutating"}[row.Mutating]}, " "))
	return row
}

func (s *Server) uiCatalogue(w http.ResponseWriter, r *http.Request) {
	ts := s.Tools()
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	rows := make([]toolRow, 0, len(ts.ids))
	for _, id := range ts.ids {
		row := rowOf(id, ts.raw[id])
		if q != "" && !matchesAll(row.Search, q) {
			continue
		}
		rows = append(rows, row)
	}
	s.uiRender(w, r, http.StatusOK, "catalogue", uiPage{Title: "Tools", Nav: "tools", Data: map[string]any{"Rows": rows, "Q": r.URL.Query().Get("q"), "Total": len(ts.ids)}})
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
		switch {
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
	Output                       string
	Code, Reason, Message        string
	Curl                         string
	Request                      string
}

func (s *Server) toolView(r *http.Request, id string) (*toolView, bool) {
	raw, ok := s.Tools().raw[id]
	if !ok {
		return nil, false
	}
	m := gjson.ParseBytes(raw)
	v := &toolView{toolRow: rowOf(id, raw), URLTemplate: m.Get("spec.urlTemplate").String(), Fields: fieldsOf(m.Get("input")),
		Connection: m.Get("spec.authorization.connection").String()}
	var pretty bytes.Buffer
	if json.Indent(&pretty, []byte(m.Get("input").Raw), "", "  ") == nil {
		v.InputSchema = pretty.String()
	}
	v.AsPerson = identity(r.Context()).Role != RolePerson
	return v, true
}

func (s *Server) uiTool(w http.ResponseWriter, r *http.Request) {
	v, ok := s.toolView(r, r.PathValue("id"))
	if !ok {
		s.uiRender(w, r, http.StatusNotFound, "error", uiPage{Title: "No such tool", Nav: "tools", Error: fmt.Sprintf("There is no tool %q.", r.PathValue("id"))})
		return
	}
	s.uiRender(w, r, http.StatusOK, "tool", uiPage{Title: v.ID, Nav: "tools", Data: v})
}

func (s *Server) uiToolRun(w http.ResponseWriter, r *http.Request) {
	v, ok := s.toolView(r, r.PathValue("id"))
	if !ok {
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
	body, _ := json.Marshal(map[string]any{"input": input, "context": CallContext{Person: v.Person}})
	dry := r.PostForm.Get("action") == "dry-run"
	handler, path := s.invoke, "/v1/tools/"+v.ID+"/invoke"
	if dry {
		handler, path = s.dryRun, "/v1/tools/"+v.ID+"/dry-run"
	}
	status, out := s.inner(r, handler, "POST "+path, map[string]string{"id": v.ID}, body)
	res := &runResult{DryRun: dry, HTTPStatus: status}
	ans := gjson.ParseBytes(out)
	if e := ans.Get("error"); e.Exists() {
		res.Code, res.Reason, res.Message = e.Get("code").String(), e.Get("reason").String(), e.Get("message").String()
	} else if dry {
		res.Curl = ans.Get("request.curl").String()
		var b bytes.Buffer
		json.Indent(&b, []byte(ans.Get("request").Raw), "", "  ")
		res.Request = b.String()
	} else {
		res.Status, res.Attempts, res.DurationMs = ans.Get("meta.status").Int(), ans.Get("meta.attempts").Int(), ans.Get("meta.durationMs").Int()
		var b bytes.Buffer
		if json.Indent(&b, []byte(ans.Get("output").Raw), "", "  ") == nil {
			res.Output = b.String()
		} else {
			res.Output = ans.Get("output").Raw
		}
	}
	// An upstream may echo the credential back (in its output or its
	// error): the console shows it redacted.
	if red := s.toolSecrets(r.Context(), v.ID); !red.Empty() {
		res.Output, res.Message, res.Curl, res.Request = red.Redact(res.Output), red.Redact(res.Message), red.Redact(res.Curl), red.Redact(res.Request)
	}
	v.Result = res
	s.uiRender(w, r, http.StatusOK, "tool", uiPage{Title: v.ID, Nav: "tools", Data: v})
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

// inner runs a REST handler for the signed-in key (its identity is in r's
// context) and returns its status and body: the console acts through the
// same code, limits and checks as the API. route is "METHOD /path".
func (s *Server) inner(r *http.Request, h http.HandlerFunc, route string, values map[string]string, body []byte) (status int, out []byte) {
	method, path, _ := strings.Cut(route, " ")
	req, err := http.NewRequestWithContext(r.Context(), method, "/", bytes.NewReader(body))
	if err != nil {
		return http.StatusInternalServerError, nil
	}
	req.URL.Path = path // as is: the handlers read the values below, never the path
	req.Header.Set("Content-Type", "application/json")
	for k, v := range values {
		req.SetPathValue(k, v)
	}
	rec := &recorder{header: http.Header{}}
	func() {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					panic(p)
				}
				rec.status, rec.body = http.StatusBadGateway, *bytes.NewBufferString(`{"error":{"code":"handler-error","message":"the answer broke off"}}`)
			}
		}()
		h(rec, req)
	}()
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.status, rec.body.Bytes()
}

// recorder is the ResponseWriter of an inner call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// connectionsView is what the connections page shows.
type connectionsView struct {
	Apps        []string
	Connections []ConnectionView
	Configured  bool
	IsPerson    bool
	Person      string
}

func (s *Server) uiConnections(w http.ResponseWriter, r *http.Request) {
	k := identity(r.Context())
	v := connectionsView{Configured: s.cfg.Manager != nil, IsPerson: k.Role == RolePerson, Person: k.Person}
	for id := range s.cfg.Apps {
		v.Apps = append(v.Apps, id)
	}
	sort.Strings(v.Apps)
	status, out := s.inner(r, s.listConnections, "GET /v1/connections", nil, nil)
	if status != http.StatusOK {
		s.uiRender(w, r, status, "connections", uiPage{Title: "Connections", Nav: "connections", Data: v, Error: gjson.GetBytes(out, "error.message").String()})
		return
	}
	json.Unmarshal([]byte(gjson.GetBytes(out, "connections").Raw), &v.Connections)
	s.uiRender(w, r, http.StatusOK, "connections", uiPage{Title: "Connections", Nav: "connections", Data: v})
}

func (s *Server) uiConnect(w http.ResponseWriter, r *http.Request) {
	app := r.PostFormValue("app")
	body, _ := json.Marshal(map[string]string{"as": r.PostFormValue("as"), "person": r.PostFormValue("person")})
	status, out := s.inner(r, s.authorize, "POST /v1/connections/"+app+"/authorize", map[string]string{"app": app}, body)
	if status != http.StatusOK {
		s.uiBack(w, r, "/ui/connections", "", gjson.GetBytes(out, "error.message").String())
		return
	}
	// To the provider; its redirect comes back to /v1/oauth/callback,
	// whose page links back here.
	http.Redirect(w, r, gjson.GetBytes(out, "url").String(), http.StatusSeeOther)
}

func (s *Server) uiRevoke(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	status, out := s.inner(r, s.revokeConnection, "DELETE /v1/connections/"+id, map[string]string{"id": id}, nil)
	if status >= 300 {
		s.uiBack(w, r, "/ui/connections", "", gjson.GetBytes(out, "error.message").String())
		return
	}
	s.uiBack(w, r, "/ui/connections", "Connection "+id+" revoked.", "")
}

// uiBack redirects to a page with a notice, or renders the error on it.
func (s *Server) uiBack(w http.ResponseWriter, r *http.Request, page, notice, errMsg string) {
	b, _ := json.Marshal(flash{Notice: notice, Error: errMsg})
	http.SetCookie(w, &http.Cookie{Name: uiFlash, Value: base64.RawURLEncoding.EncodeToString(b), Path: "/ui", MaxAge: 60,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"})
	http.Redirect(w, r, page, http.StatusSeeOther)
}

// uiFlash is the cookie that carries an action's outcome to the page it
// redirects to, once.
const uiFlash = "httptools_flash"

type flash struct {
	Notice string `json:"n,omitempty"`
	Error  string `json:"e,omitempty"`
}

// secretsView is what the secrets page shows: names, never values.
type secretsView struct {
	Admin bool
	Refs  []synth.SecretRef
}

func (s *Server) uiSecrets(w http.ResponseWriter, r *http.Request) {
	v := secretsView{Admin: identity(r.Context()).Role == RoleAdmin}
	p := uiPage{Title: "Secrets", Nav: "secrets", Data: &v}
	if v.Admin {
		status, out := s.inner(r, s.listSecrets, "GET /v1/secrets", nil, nil)
		if status != http.StatusOK {
			p.Error = gjson.GetBytes(out, "error.message").String()
		}
		json.Unmarshal([]byte(gjson.GetBytes(out, "secrets").Raw), &v.Refs)
	}
	s.uiRender(w, r, http.StatusOK, "secrets", p)
}

func (s *Server) uiSecretSet(w http.ResponseWriter, r *http.Request) {
	if identity(r.Context()).Role != RoleAdmin {
		s.uiBack(w, r, "/ui/secrets", "", "Secrets are managed with an admin key.")
		return
	}
	env, name := strings.TrimSpace(r.PostFormValue("envName")), strings.TrimSpace(r.PostFormValue("name"))
	if env == "" || name == "" || strings.ContainsAny(env+name, "/ ") {
		s.uiBack(w, r, "/ui/secrets", "", "Give the secret an environment and a name (no spaces or slashes), as a manifest's secretRef names it.")
		return
	}
	body, _ := json.Marshal(map[string]string{"value": r.PostFormValue("value")})
	status, out := s.inner(r, s.putSecret, "PUT /v1/secrets/"+env+"/"+name, map[string]string{"envName": env, "name": name}, body)
	if status >= 300 {
		s.uiBack(w, r, "/ui/secrets", "", gjson.GetBytes(out, "error.message").String())
		return
	}
	s.uiBack(w, r, "/ui/secrets", "Secret "+env+"/"+name+" set.", "")
}

func (s *Server) uiSecretDelete(w http.ResponseWriter, r *http.Request) {
	if identity(r.Context()).Role != RoleAdmin {
		s.uiBack(w, r, "/ui/secrets", "", "Secrets are managed with an admin key.")
		return
	}
	env, name := r.PathValue("envName"), r.PathValue("name")
	status, out := s.inner(r, s.deleteSecret, "DELETE /v1/secrets/"+env+"/"+name, map[string]string{"envName": env, "name": name}, nil)
	if status >= 300 {
		s.uiBack(w, r, "/ui/secrets", "", gjson.GetBytes(out, "error.message").String())
		return
	}
	s.uiBack(w, r, "/ui/secrets", "Secret "+env+"/"+name+" deleted.", "")
}
