package server

import (
	"bytes"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
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
	mux.Handle("POST /ui/tools/{id}", s.callDoor(s.uiAuthed(s.uiToolRun))) // its session read too, within the call's deadline
	mux.Handle("GET /ui/tools/{id}/results/{rid}", s.uiAuthed(s.uiResult)) // ui_budget.go
	mux.Handle("GET /ui/connections", s.uiAuthed(s.uiConnections))
	mux.Handle("POST /ui/connections/connect", s.uiAuthed(s.uiConnect))
	mux.Handle("POST /ui/connections/{id}/revoke", s.uiAuthed(s.uiRevoke))
	mux.Handle("GET /ui/secrets", s.uiAuthed(s.uiSecrets))
	mux.Handle("POST /ui/secrets", s.uiAuthed(s.uiSecretSet))
	mux.Handle("POST /ui/secrets/{envName}/{name}/delete", s.uiAuthed(s.uiSecretDelete))
	mux.Handle("GET /ui/calls", s.uiAuthed(s.uiCalls))
	mux.Handle("GET /ui/approvals", s.uiAuthed(s.uiApprovals))
	mux.Handle("POST /ui/approvals/{id}/{decision}", s.uiAuthed(s.uiDecide))
	mux.Handle("GET /ui/policy", s.uiAuthed(s.uiPolicy))
	mux.Handle("POST /ui/policy", s.uiAuthed(s.uiPolicySet))
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
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self' *; frame-ancestors 'none'; base-uri 'none'")
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
	Who    *auth.APIKey
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
