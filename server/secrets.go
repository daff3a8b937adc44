package server

import (
	"errors"
	"net/http"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/synth"
)

// The secrets routes: set, list (names only), delete.

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
	if req.Value == nil || *req.Value == "" {
		writeError(w, http.StatusBadRequest, "bad-request", "", `the body must be {"value": "…"} with a non-empty value`)
		return
	}
	if err := s.cfg.Store.PutSecret(r.Context(), tenantOf(r.Context()), secretRef(r), *req.Value); err != nil {
		s.storeUnavailable(w, "storing the secret", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	refs, err := s.cfg.Store.SecretRefs(r.Context(), tenantOf(r.Context()))
	if err != nil {
		s.storeUnavailable(w, "listing secrets", err)
		return
	}
	if refs == nil {
		refs = []synth.SecretRef{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": refs})
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	s.removed(w, s.cfg.Store.DeleteSecret(r.Context(), tenantOf(r.Context()), secretRef(r)), "secret")
}

// removed answers a DELETE: 204, or 404 when the tenant has no such thing,
// or 503 when the store failed.
func (s *Server) removed(w http.ResponseWriter, err error, what string) {
	switch {
	case errors.Is(err, connections.ErrNotFound):
		writeError(w, http.StatusNotFound, "not-found", "", "no such "+what)
	case err != nil:
		s.storeUnavailable(w, "removing the "+what, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
