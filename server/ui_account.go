package server

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/httptools/httptools/synth"
)

// The console's connections and secrets pages, and the flash that carries
// an action's outcome to the page it returns to.

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
