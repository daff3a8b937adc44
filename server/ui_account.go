package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"github.com/httptools/httptools/connections"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/history"
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
	v := connectionsView{Configured: s.cfg.Manager != nil, IsPerson: k.Role == auth.RolePerson, Person: k.Person}
	for id := range s.cfg.Apps {
		v.Apps = append(v.Apps, id)
	}
	v.Apps = append(v.Apps, s.discoveredApps()...)
	sort.Strings(v.Apps)
	var err error
	if v.Connections, err = s.connectionsOf(r.Context(), k); err != nil {
		f := failureOf(err)
		s.uiRender(w, r, f.status, "connections", uiPage{Title: "Connections", Nav: "connections", Data: v, Error: f.msg})
		return
	}
	s.uiRender(w, r, http.StatusOK, "connections", uiPage{Title: "Connections", Nav: "connections", Data: v})
}

func (s *Server) uiConnect(w http.ResponseWriter, r *http.Request) {
	url, err := s.startConnect(r.Context(), identity(r.Context()), r.PostFormValue("app"), r.PostFormValue("as"), r.PostFormValue("person"))
	if err != nil {
		s.uiBack(w, r, "/ui/connections", "", failureOf(err).msg)
		return
	}
	// To the provider; its redirect comes back to /v1/oauth/callback,
	// whose page links back here.
	http.Redirect(w, r, url, http.StatusSeeOther)
}

func (s *Server) uiRevoke(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.revokeConnectionOf(r.Context(), identity(r.Context()), id); err != nil {
		s.uiBack(w, r, "/ui/connections", "", failureOf(err).msg)
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
	v := secretsView{Admin: identity(r.Context()).Role == auth.RoleAdmin}
	p := uiPage{Title: "Secrets", Nav: "secrets", Data: &v}
	if v.Admin {
		var err error
		if v.Refs, err = s.secretsOf(r.Context(), identity(r.Context())); err != nil {
			p.Error = failureOf(err).msg
		}
	}
	s.uiRender(w, r, http.StatusOK, "secrets", p)
}

func (s *Server) uiSecretSet(w http.ResponseWriter, r *http.Request) {
	if identity(r.Context()).Role != auth.RoleAdmin {
		s.uiBack(w, r, "/ui/secrets", "", "Secrets are managed with an admin key.")
		return
	}
	env, name := strings.TrimSpace(r.PostFormValue("envName")), strings.TrimSpace(r.PostFormValue("name"))
	if env == "" || name == "" || strings.ContainsAny(env+name, "/ ") {
		s.uiBack(w, r, "/ui/secrets", "", "Give the secret an environment and a name (no spaces or slashes), as a manifest's secretRef names it.")
		return
	}
	if err := s.setSecret(r.Context(), identity(r.Context()), synth.SecretRef{EnvName: env, Name: name}, r.PostFormValue("value")); err != nil {
		s.uiBack(w, r, "/ui/secrets", "", failureOf(err).msg)
		return
	}
	s.uiBack(w, r, "/ui/secrets", "Secret "+env+"/"+name+" set.", "")
}

func (s *Server) uiSecretDelete(w http.ResponseWriter, r *http.Request) {
	if identity(r.Context()).Role != auth.RoleAdmin {
		s.uiBack(w, r, "/ui/secrets", "", "Secrets are managed with an admin key.")
		return
	}
	env, name := r.PathValue("envName"), r.PathValue("name")
	if err := s.deleteSecretOf(r.Context(), identity(r.Context()), synth.SecretRef{EnvName: env, Name: name}); err != nil {
		s.uiBack(w, r, "/ui/secrets", "", failureOf(err).msg)
		return
	}
	s.uiBack(w, r, "/ui/secrets", "Secret "+env+"/"+name+" deleted.", "")
}

// policyPage is what the policy page shows: the tenant's document, the
// one all tenants are under, and the bound of a change.
type policyPage struct {
	Admin    bool
	Doc, All string
	TTL      float64
}

func (s *Server) uiPolicy(w http.ResponseWriter, r *http.Request) {
	k := identity(r.Context())
	v := policyPage{Admin: k.Role == auth.RoleAdmin}
	p := uiPage{Title: "Policy", Nav: "policy", Data: &v}
	if v.Admin {
		docs, err := s.policyDocs(r.Context(), k)
		if err != nil {
			p.Error = failureOf(err).msg
		}
		v.TTL = docs.TTLSeconds
		if string(docs.Policy) != "null" {
			v.Doc = indentJSON(docs.Policy)
		}
		if string(docs.AllTenants) != "null" {
			v.All = indentJSON(docs.AllTenants)
		}
	}
	s.uiRender(w, r, http.StatusOK, "policy", p)
}

func (s *Server) uiPolicySet(w http.ResponseWriter, r *http.Request) {
	doc := []byte(strings.TrimSpace(r.PostFormValue("policy")))
	if len(doc) == 0 {
		doc = nil
	}
	if err := s.setPolicy(r.Context(), identity(r.Context()), doc); err != nil {
		s.uiBack(w, r, "/ui/policy", "", failureOf(err).msg)
		return
	}
	s.uiBack(w, r, "/ui/policy", "The policy is saved: every replica applies it within seconds.", "")
}

func indentJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

func (s *Server) uiApprovals(w http.ResponseWriter, r *http.Request) {
	k := identity(r.Context())
	list, err := s.approvalsOf(r.Context(), k, "")
	p := uiPage{Title: "Approvals", Nav: "approvals", Data: map[string]any{"Approvals": list, "IsPerson": k.Role == auth.RolePerson}}
	if err != nil {
		p.Error = failureOf(err).msg
	}
	s.uiRender(w, r, http.StatusOK, "approvals", p)
}

func (s *Server) uiDecide(w http.ResponseWriter, r *http.Request) {
	id, d := r.PathValue("id"), r.PathValue("decision")
	if d != "approve" && d != "deny" {
		s.uiBack(w, r, "/ui/approvals", "", "Approve or deny.")
		return
	}
	if err := s.decideApproval(r.Context(), identity(r.Context()), id, d == "approve"); err != nil {
		s.uiBack(w, r, "/ui/approvals", "", failureOf(err).msg)
		return
	}
	done := map[string]string{"approve": "approved: the call runs once, with its input, when it is made again", "deny": "denied"}[d]
	s.uiBack(w, r, "/ui/approvals", "Approval "+id+" "+done+".", "")
}

func (s *Server) uiCalls(w http.ResponseWriter, r *http.Request) {
	k := identity(r.Context())
	calls, err := s.callsOf(r.Context(), k, history.Filter{Limit: 100})
	p := uiPage{Title: "Calls", Nav: "calls", Data: map[string]any{"Calls": calls, "IsPerson": k.Role == auth.RolePerson}}
	if err != nil {
		p.Error = failureOf(err).msg
	}
	s.uiRender(w, r, http.StatusOK, "calls", p)
}

// discoveredApps are the remote MCP servers' authorizations the tools
// connect to (connections.IsDiscovered), when the manager discovers them.
func (s *Server) discoveredApps() []string {
	if s.cfg.Manager == nil || s.cfg.Manager.Discover == nil {
		return nil
	}
	var out []string
	for _, t := range s.Tools().Manifests() {
		if m := t.Manifest(); m.NeedsSpec != nil {
			for _, need := range m.NeedsSpec.Connections {
				if connections.IsDiscovered(need.App) && !slices.Contains(out, need.App) {
					out = append(out, need.App)
				}
			}
		}
	}
	return out
}
