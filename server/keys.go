package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
)

// keyCacheTTL bounds how long a key is trusted without asking the store: a
// key revoked on another replica stops working there within it (at once on
// the replica that revoked it).
const keyCacheTTL = time.Minute

type keyEntry struct {
	key     *auth.APIKey
	expires time.Time
}

// keyOf returns what an API key is: from memory when it was checked within
// keyCacheTTL; else from the store, within ctx. A key checked before whose
// check is due again is stale while refreshing (reread.go): the store's
// answer when it comes in time (a revoked key is refused at once), else,
// the store being slow, down or cut off, the key as last checked, which a
// call then need not wait on the store for.
func (s *Server) keyOf(ctx context.Context, key string) (*auth.APIKey, error) {
	e, ok := s.keys.Load(key)
	if !ok {
		return s.storedKey(ctx, key)
	}
	last := e.(keyEntry)
	if time.Now().Before(last.expires) {
		return last.key, nil
	}
	k, err, finished := s.keyReads.get(ctx, key, func(ctx context.Context) (*auth.APIKey, error) {
		return s.storedKey(ctx, key)
	})
	switch {
	case finished && err == nil:
		return k, nil
	case finished && errors.Is(err, connections.ErrNotFound):
		return nil, err // revoked
	}
	return last.key, nil
}

// cachedKey returns a key this replica checked in the store within
// keyCacheTTL: one it may trust without asking, and never throttles.
func (s *Server) cachedKey(key string) (*auth.APIKey, bool) {
	if e, ok := s.keys.Load(key); ok && time.Now().Before(e.(keyEntry).expires) {
		return e.(keyEntry).key, true
	}
	return nil, false
}

// storedKey asks the store what key is, and caches the answer (a revoked
// key leaves the cache). An answer read before a revocation on this
// replica (keyGen moved meanwhile) is not cached: it may be the revoked
// key's.
func (s *Server) storedKey(ctx context.Context, key string) (*auth.APIKey, error) {
	gen := s.keyGen.Load()
	k, err := s.cfg.Keys.KeyOf(ctx, key)
	if errors.Is(err, connections.ErrNotFound) {
		s.keys.Delete(key)
	}
	if err != nil {
		return nil, err
	}
	if s.keyGen.Load() == gen {
		s.keys.Store(key, keyEntry{k, time.Now().Add(keyCacheTTL)})
	}
	return k, nil
}

type identityKey struct{}

// keyOf is the API key a request came with, nil for none (a caller the
// process trusts: MCP over stdio).
func keyOf(ctx context.Context) *auth.APIKey {
	if k := identity(ctx); k.ID != "" || k.Tenant != "" {
		return k
	}
	return nil
}

// identity is who a request is: the API key it came with (an empty one
// for none).
func identity(ctx context.Context) *auth.APIKey {
	if a := accessOf(ctx); a != nil && a.key != nil {
		return a.key
	}
	k, _ := ctx.Value(identityKey{}).(*auth.APIKey)
	if k == nil {
		return &auth.APIKey{}
	}
	return k
}

func tenantOf(ctx context.Context) string { return identity(ctx).Tenant }

// authed requires a valid API key and puts what it is in the context; roles
// lists the roles the route admits (none: every role).
func (s *Server) authed(h http.HandlerFunc, roles ...string) http.Handler {
	return s.checkKey(h, false, roles)
}

// sensitive is authed for the routes that make or revoke keys, set
// secrets, start or revoke connections, or change policy: the key is checked against the store on every request, never
// from the replica's cache, so that a key revoked on another replica does
// nothing lasting there in the minute its cache would trust it.
func (s *Server) sensitive(h http.HandlerFunc, roles ...string) http.Handler {
	return s.checkKey(h, true, roles)
}

func (s *Server) checkKey(h http.HandlerFunc, fresh bool, roles []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The check is a call that returns before the route runs: the
		// route's calls wait on their upstream with a small frame here.
		if k := s.authenticate(w, r, fresh, roles); k != nil {
			h(w, withIdentity(r, k))
		}
	})
}

// authenticate checks the request's key or token: its key, or nil when it
// answered the request with the refusal.
//
//go:noinline
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, fresh bool, roles []string) *auth.APIKey {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" {
		s.challenge(w, "", "")
		writeError(w, http.StatusUnauthorized, "unauthorized", "", "send Authorization: Bearer <api key> (httptools keys create --tenant T)")
		return nil
	}
	// One look in the cache: a key checked lately is never throttled,
	// and off the sensitive routes it is trusted as it is.
	k, verified := s.cachedKey(key)
	if !verified && s.throttled(w, r) {
		return nil
	}
	var err error
	if s.cfg.OIDC != nil && !strings.HasPrefix(key, auth.APIKeyPrefix) {
		k, err = s.verifyToken(r.Context(), key)
		var bad *errBadToken
		switch {
		case errors.As(err, &bad):
			s.failedAuth(r)
			s.challenge(w, "invalid_token", bad.why)
			writeError(w, http.StatusUnauthorized, "unauthorized", "invalid-token", bad.why)
			return nil
		case err != nil:
			s.cfg.Logger.Error("access token check failed", "error", err.Error())
			w.Header().Set("Retry-After", retryAfter)
			writeError(w, http.StatusServiceUnavailable, "unavailable", "issuer-unavailable", "the token's issuer cannot be reached to check it: try again shortly")
			return nil
		}
	} else if !verified || fresh {
		if k, err = s.checkStored(r, key, fresh); err != nil {
			if errors.Is(err, connections.ErrNotFound) {
				s.failedAuth(r)
				s.challenge(w, "invalid_token", "unknown or revoked API key")
				writeError(w, http.StatusUnauthorized, "unauthorized", "", "unknown or revoked API key")
			} else {
				writeFailure(w, s.storeRefusal("checking the API key", err))
			}
			return nil
		}
	}
	if len(roles) > 0 && !slices.Contains(roles, k.Role) {
		forbidden(w, "a "+k.Role+" key cannot "+r.Method+" "+r.URL.Path+": it takes a key of role "+strings.Join(roles, " or "))
		return nil
	}
	return k
}

// checkStored checks a key the cache does not vouch for: on a sensitive
// route always against the store; on any other as keyOf does, stale while
// refreshing, and within the deadline of the call the request makes
// (beforeCall).
func (s *Server) checkStored(r *http.Request, key string, fresh bool) (*auth.APIKey, error) {
	if fresh {
		return s.storedKey(r.Context(), key)
	}
	ctx, cancel := s.beforeCall(r.Context())
	defer cancel()
	return s.keyOf(ctx, key)
}

func forbidden(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusForbidden, "forbidden", "role", msg)
}

// actAs is the person and unattended flag of a call: a person key's own
// person (a call naming another, or unattended, is refused); admin and
// service keys name them.
func actAs(k *auth.APIKey, person string, unattended bool) (string, bool, string) {
	if k.Role != auth.RolePerson {
		return person, unattended, ""
	}
	switch {
	case person != "" && person != k.Person:
		return "", false, "a person key acts for its own person only, not " + person
	case unattended:
		return "", false, "a person key's calls are that person's own, never unattended"
	}
	return k.Person, false, ""
}

// keyView is a key as the API shows it.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := s.cfg.Keys.APIKeys(r.Context(), tenantOf(r.Context()))
	if err != nil {
		writeFailure(w, s.storeRefusal("listing API keys", err))
		return
	}
	if keys == nil {
		keys = []*auth.APIKey{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// keyRequest is the body of POST /v1/keys.
type keyRequest struct {
	Role    string `json:"role"`
	Person  string `json:"person"`
	Toolset string `json:"toolset"`
	// UnattendedTools are a service key's toolsAllowedUnattended (tool id
	// globs), as keys create --unattended-tools sets them.
	UnattendedTools []string `json:"unattendedTools"`
}

// check says what is wrong with req, "" for nothing: everything is
// checked before a key is made.
func (req *keyRequest) check(keys KeyStore) string {
	if err := auth.CheckRole(req.Role, req.Person); err != nil {
		return err.Error() + `: the body is {"role":"admin|service|person","person":"…","toolset":"…","unattendedTools":["…"]}`
	}
	if _, ok := keys.(ToolsetBinder); req.Toolset != "" && !ok {
		return "this service's key store cannot bind a key to a toolset"
	}
	if len(req.UnattendedTools) > 0 {
		if req.Role != auth.RoleService {
			return "unattendedTools is a service key's (a kernel's runs): make it with \"role\": \"service\""
		}
		if _, ok := keys.(UnattendedSetter); !ok {
			return "this service's key store cannot keep a key's unattended tools"
		}
		for i, g := range req.UnattendedTools {
			if _, err := path.Match(g, ""); err != nil || g == "" || strings.Contains(g, ",") {
				return fmt.Sprintf("unattendedTools[%d]: %q is not a tool id glob (acme.*)", i, g)
			}
		}
	}
	return ""
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req keyRequest
	if !s.readJSON(w, r, &req) {
		return
	}
	if why := req.check(s.cfg.Keys); why != "" {
		writeError(w, http.StatusBadRequest, "bad-request", "", why)
		return
	}
	ctx := r.Context()
	key, k, err := s.cfg.Keys.CreateAPIKey(ctx, tenantOf(ctx), req.Role, req.Person)
	if err != nil {
		writeFailure(w, s.storeRefusal("storing the API key", err))
		return
	}
	// A key is made with all it was asked for or not at all: one left
	// unbound, or without its list, would do more than was asked.
	undo := func(what string, err error) {
		if rerr := s.cfg.Keys.RevokeAPIKey(ctx, k.Tenant, k.ID); rerr != nil {
			s.cfg.Logger.Error("a key made without its "+what+" could not be revoked", "key", k.ID, "tenant", k.Tenant, "error", rerr.Error())
		}
		writeFailure(w, s.storeRefusal("making the API key's "+what, err))
	}
	if req.Toolset != "" {
		if err := s.cfg.Keys.(ToolsetBinder).BindToolset(ctx, k.Tenant, k.ID, req.Toolset); err != nil {
			undo("toolset", err)
			return
		}
		k.Toolset = req.Toolset
	}
	if len(req.UnattendedTools) > 0 {
		if err := s.cfg.Keys.(UnattendedSetter).SetUnattendedTools(ctx, k.Tenant, k.ID, req.UnattendedTools); err != nil {
			undo("unattended tools", err)
			return
		}
		k.UnattendedTools = req.UnattendedTools
	}
	writeJSON(w, http.StatusCreated, map[string]any{"key": key, "info": k})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	if !s.noBody(w, r) {
		return
	}
	err := s.cfg.Keys.RevokeAPIKey(r.Context(), tenantOf(r.Context()), r.PathValue("id"))
	if err == nil {
		// Forget it here at once (and any read of it in flight);
		// other replicas within keyCacheTTL.
		s.keyGen.Add(1)
		s.keys.Range(func(k, v any) bool {
			if v.(keyEntry).key.ID == r.PathValue("id") {
				s.keys.Delete(k)
			}
			return true
		})
	}
	noContent(w, s.removal(err, "API key"))
}
