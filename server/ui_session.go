package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/httptools/httptools/connections"
)

// The console's sign-in and sign-out.

func (s *Server) uiLoginPage(w http.ResponseWriter, r *http.Request) {
	p := uiPage{Title: "Sign in"}
	if r.URL.Query().Get("why") == "revoked" {
		p.Error = "That API key is unknown or was revoked: sign in with another." // a fixed text: the URL chooses which, never what
	}
	s.uiRender(w, r, http.StatusOK, "login", p)
}

func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimSpace(r.PostFormValue("key"))
	if _, verified := s.cachedKey(key); !verified && s.failures.wait(clientOf(r)) > 0 {
		s.uiRender(w, r, http.StatusTooManyRequests, "login", uiPage{Title: "Sign in", Error: "Too many failed sign-ins from this address: wait a few seconds and try again."})
		return
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
