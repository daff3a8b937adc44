package server

import (
	"errors"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/synth"
)

// The connection routes: start a connect flow, the provider's callback,
// list and revoke (the service's operations are account.go's).

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Manager == nil {
		writeFailure(w, notFound("no apps are configured: start serve with --apps apps.json"))
		return
	}
	var req struct {
		As     string `json:"as"`
		Person string `json:"person"`
	}
	if !s.readJSON(w, r, &req) {
		return
	}
	url, err := s.startConnect(r.Context(), identity(r.Context()), r.PathValue("app"), req.As, req.Person)
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"url": url})
}

var connectedPage = template.Must(template.New("ok").Parse(`<!doctype html>
<html lang="en"><head>
<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{if .OK}}Connected{{else}}Not connected{{end}} · httptools</title>
<link rel="stylesheet" href="/ui/static/console.css">
</head><body><main id="main">
<h1>{{if .OK}}Connected{{else}}Not connected{{end}}</h1>
<p id="outcome" {{if not .OK}}class="error"{{end}}>{{if .OK}}Connected: the {{.App}} account of {{.Whose}} is ready to use. You can close this window.{{else}}Not connected: {{.Message}}{{end}}</p>
{{if .UI}}<p><a id="back" href="/ui/connections">Back to the connections</a></p>{{end}}
</main></body></html>
`))

func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	wantJSON := strings.Contains(r.Header.Get("Accept"), "application/json")
	fail := func(status int, msg string) {
		if wantJSON {
			writeError(w, status, "connect-failed", "", msg)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		connectedPage.Execute(w, map[string]any{"OK": false, "Message": msg, "UI": s.cfg.UI})
	}
	if s.cfg.Manager == nil {
		fail(http.StatusNotFound, "no apps are configured")
		return
	}
	if e := q.Get("error"); e != "" {
		fail(http.StatusBadRequest, "the provider said "+e)
		return
	}
	rec, err := s.cfg.Manager.CallbackIss(r.Context(), q.Get("state"), q.Get("code"), q.Get("iss")) // iss: RFC 9207, for a discovered app
	if err != nil {
		status := http.StatusBadGateway
		switch {
		case errors.Is(err, connections.ErrBadState):
			status = http.StatusBadRequest
		case errors.Is(err, connections.ErrUnavailable):
			s.storeFailed("completing the connect flow", err)
			w.Header().Set("Retry-After", retryAfter)
			fail(http.StatusServiceUnavailable, "the store is unavailable for now: start the connection again shortly")
			return
		}
		fail(status, err.Error())
		return
	}
	view := connectionView(rec)
	if wantJSON {
		writeJSON(w, http.StatusOK, map[string]any{"connection": view})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	whose := "the company"
	if view.Person != "" {
		whose = "person " + view.Person
	}
	connectedPage.Execute(w, map[string]any{"OK": true, "App": rec.App, "Whose": whose, "UI": s.cfg.UI})
}

// ConnectionView is a connection as the API shows it: never a token.
type ConnectionView struct {
	ID          string    `json:"id"`
	App         string    `json:"app"`
	As          string    `json:"as"`
	Person      string    `json:"person,omitempty"`
	Permissions []string  `json:"permissions"`
	Scopes      []string  `json:"scopes"`
	Status      string    `json:"status"`
	Expiry      time.Time `json:"expiry,omitzero"`
	LastRefresh time.Time `json:"lastRefresh,omitzero"`
	LastError   string    `json:"lastError,omitempty"`
	Version     int64     `json:"version"`
}

func connectionView(r *connections.Record) ConnectionView {
	v := ConnectionView{ID: r.ID, App: r.App, As: synth.AsCompany, Permissions: r.Permissions, Scopes: r.Scopes,
		Status: r.Status, Expiry: r.Expiry, LastRefresh: r.LastRefresh, LastError: r.LastError, Version: r.Version}
	if p, ok := strings.CutPrefix(r.Owner, "person:"); ok {
		v.As, v.Person = synth.AsPerson, p
	}
	return v
}

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request) {
	out, err := s.connectionsOf(r.Context(), identity(r.Context()))
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connections": out})
}

func (s *Server) revokeConnection(w http.ResponseWriter, r *http.Request) {
	if !s.noBody(w, r) {
		return
	}
	noContent(w, s.revokeConnectionOf(r.Context(), identity(r.Context()), r.PathValue("id")))
}

// mayManage says why a key may not start or revoke the connection of owner,
// or "": admin keys manage every connection, service keys people's, person
// keys their own.
func mayManage(k *auth.APIKey, owner string) string {
	switch {
	case k.Role == auth.RoleAdmin:
		return ""
	case owner == connections.OwnerCompany:
		return "company connections are managed with an admin key"
	case k.Role == auth.RolePerson && owner != connections.OwnerPerson(k.Person):
		return "a person key manages its own connections only"
	}
	return ""
}
