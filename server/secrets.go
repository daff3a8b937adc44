package server

import (
	"net/http"

	"github.com/httptools/httptools/synth"
)

// The secrets routes: set, list (names only), delete (the service's
// operations are account.go's).

func secretRef(r *http.Request) synth.SecretRef {
	return synth.SecretRef{EnvName: r.PathValue("envName"), Name: r.PathValue("name")}
}

func (s *Server) putSecret(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Value *string `json:"value"`
	}
	if !s.readJSON(w, r, &req) {
		return
	}
	value := ""
	if req.Value != nil {
		value = *req.Value
	}
	noContent(w, s.setSecret(r.Context(), identity(r.Context()), secretRef(r), value))
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	refs, err := s.secretsOf(r.Context(), identity(r.Context()))
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": refs})
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	if !s.noBody(w, r) {
		return
	}
	noContent(w, s.deleteSecretOf(r.Context(), identity(r.Context()), secretRef(r)))
}

// noContent answers a change: 204, or the service's refusal.
func noContent(w http.ResponseWriter, err error) {
	if err != nil {
		writeFailure(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
