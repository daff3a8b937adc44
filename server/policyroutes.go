package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/policy"
)

// The policy routes: GET, PUT and DELETE /v1/policy, an admin's, for its
// tenant; and the service's operations they (and the console) call.

// policyView is what GET /v1/policy answers: the tenant's document, the
// one all tenants are under (null for none), and the bound within which a
// change reaches every replica.
type policyView struct {
	Policy     json.RawMessage `json:"policy"`
	AllTenants json.RawMessage `json:"allTenants"`
	TTLSeconds float64         `json:"ttlSeconds"`
}

// policies returns the tenant's policy documents, for an admin key.
func (s *Server) policyDocs(ctx context.Context, k *auth.APIKey) (policyView, error) {
	v := policyView{Policy: json.RawMessage("null"), AllTenants: json.RawMessage("null"), TTLSeconds: s.policyTTL().Seconds()}
	if k.Role != auth.RoleAdmin {
		return v, forbiddenErr("the tool policy is managed with an admin key")
	}
	if s.cfg.Policies == nil {
		return v, nil
	}
	for _, d := range []struct {
		tenant string
		into   *json.RawMessage
	}{{k.Tenant, &v.Policy}, {AllTenants, &v.AllTenants}} {
		doc, err := s.cfg.Policies.Policy(ctx, d.tenant)
		switch {
		case errors.Is(err, connections.ErrNotFound):
		case err != nil:
			return v, s.storeRefusal("reading the tool policy", err)
		default:
			*d.into = doc
		}
	}
	return v, nil
}

// setPolicy checks doc (every problem named with its path) and makes it
// the tenant's policy, nil removing it; this replica applies it at once,
// the others within the TTL.
func (s *Server) setPolicy(ctx context.Context, k *auth.APIKey, doc []byte) error {
	if k.Role != auth.RoleAdmin {
		return forbiddenErr("the tool policy is managed with an admin key")
	}
	if s.cfg.Policies == nil {
		return notFound("this service keeps no tool policies")
	}
	if doc != nil {
		// Exactly as spelled: encoding/json would read "Rules" as rules
		// too, and a second spelling would be a second value.
		if err := strictMembers(doc, reflect.TypeFor[policy.Policy](), "invalid-policy"); err != nil {
			return err
		}
		if _, err := policy.Parse(doc); err != nil {
			return &refusal{status: http.StatusBadRequest, code: "bad-request", reason: "invalid-policy", msg: err.Error()}
		}
	}
	if err := s.cfg.Policies.PutPolicy(ctx, k.Tenant, doc); err != nil {
		return s.storeRefusal("storing the tool policy", err)
	}
	s.policies.forget(k.Tenant)
	s.viewsChanged()
	return nil
}

func (s *Server) policyTTL() time.Duration {
	if s.cfg.PolicyTTL > 0 {
		return s.cfg.PolicyTTL
	}
	return DefaultPolicyTTL
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) {
	v, err := s.policyDocs(r.Context(), identity(r.Context()))
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readCheckedBody(w, r)
	if !ok {
		return
	}
	if err := s.setPolicy(r.Context(), identity(r.Context()), body); err != nil {
		writeFailure(w, err)
		return
	}
	s.getPolicy(w, r)
}

func (s *Server) deletePolicy(w http.ResponseWriter, r *http.Request) {
	if !s.noBody(w, r) {
		return
	}
	noContent(w, s.setPolicy(r.Context(), identity(r.Context()), nil))
}
