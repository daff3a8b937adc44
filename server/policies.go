package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/mcpremote"
	"github.com/httptools/httptools/policy"
	"github.com/httptools/httptools/synth"
	"github.com/tidwall/gjson"
)

// Tool policies (package policy has the rules). A tenant's policy and the
// policy of all tenants decide, together, which tools each caller sees and
// runs, on every door: REST's list, get, invoke and dry run, MCP's
// tools/list and tools/call (both paths), the console's catalogue, search
// and tool pages. To a caller a denied tool does not exist: it gets what an
// unknown id gets. The access log and /metrics name the rule that denied.

// PolicyStore keeps the tool policies: a document per tenant and one
// under AllTenants (sqlstore.SQLStore is one). It must be safe for
// concurrent use.
type PolicyStore interface {
	// Policy returns tenant's document, or connections.ErrNotFound.
	Policy(ctx context.Context, tenant string) ([]byte, error)
	// PutPolicy sets tenant's document; nil removes it.
	PutPolicy(ctx context.Context, tenant string, doc []byte) error
}

// AllTenants is the tenant name of the policy every tenant is under.
const AllTenants = "*"

// DefaultPolicyTTL is how long a replica uses a policy it read before it
// reads it again: a change reaches every replica within it.
const DefaultPolicyTTL = 2 * time.Second

// policyCache holds the policies read lately, per tenant.
type policyCache struct {
	mu sync.Mutex
	m  map[string]policyEntry
	// gen moves when this replica changes a policy: a read begun before
	// is not cached, as it may be the old document.
	gen uint64
}

type policyEntry struct {
	p   *policy.Policy // nil: none
	doc []byte         // as stored; nil: none
	at  time.Time
}

// policyOf returns tenant's policy (nil for none), read again once it is
// older than the TTL, within ctx. A policy due to be read again is stale
// while refreshing (reread.go): the store's answer when it comes in time,
// else — and when the store fails — the last one read. With none read
// yet, a store that fails is the caller's error (store-unavailable).
func (s *Server) policyOf(ctx context.Context, tenant string) (*policy.Policy, error) {
	if s.cfg.Policies == nil {
		return nil, nil
	}
	c := &s.policies
	c.mu.Lock()
	e, ok := c.m[tenant]
	c.mu.Unlock()
	switch {
	case ok && time.Since(e.at) < s.policyTTL():
		return e.p, nil
	case !ok:
		p, err := s.readPolicy(ctx, tenant)
		if err != nil {
			return nil, s.storeRefusal("reading the tool policy", err)
		}
		return p, nil
	}
	p, err, finished := s.policyReads.get(ctx, tenant, func(ctx context.Context) (*policy.Policy, error) {
		return s.readPolicy(ctx, tenant)
	})
	if !finished || err != nil {
		return e.p, nil // the store is slow or down: the last policy read holds
	}
	return p, nil
}

// readPolicy reads tenant's policy from the store and caches it.
func (s *Server) readPolicy(ctx context.Context, tenant string) (*policy.Policy, error) {
	c := &s.policies
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	doc, err := s.cfg.Policies.Policy(ctx, tenant)
	var p *policy.Policy
	switch {
	case errors.Is(err, connections.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		if p, err = policy.Parse(doc); err != nil {
			// Stored only after it was checked; a document that no
			// longer parses denies everything rather than nothing.
			s.cfg.Logger.Error("a stored tool policy does not parse: every tool is denied to the tenant until it is set again", "tenant", tenant, "error", err.Error())
			p = &policy.Policy{Default: "deny"}
		}
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]policyEntry{}
	}
	prev, had := c.m[tenant]
	if c.gen == gen {
		c.m[tenant] = policyEntry{p: p, doc: doc, at: time.Now()}
	}
	c.mu.Unlock()
	if had && !bytes.Equal(prev.doc, doc) {
		// Changed since last read (on another replica): MCP clients
		// whose view it changes are told (mcplisten.go).
		s.viewsChanged()
	}
	return p, nil
}

// forget drops tenant's cached policy: this replica applies its own
// change at once.
func (c *policyCache) forget(tenant string) {
	c.mu.Lock()
	c.gen++
	delete(c.m, tenant)
	c.mu.Unlock()
}

// gate decides tools for one caller of one tenant: the two policies read
// once, and the toolset the caller asked for or its key is bound to.
type gate struct {
	s   *Server
	who policy.Subject
	// policies are all tenants' and the tenant's, in the gate itself:
	// one allocation a call, not two (BenchmarkRESTStepAlone/policy).
	policies [2]*policy.Policy
	toolset  string
	set      *policy.Tools // toolset's selector; nil for none
}

type toolsetKey struct{}

// withToolset is ctx of a request for the toolset name (/mcp/NAME,
// ?toolset=NAME, httptools mcp --toolset): the SDK hands a tool handler
// nothing else of the request.
func withToolset(ctx context.Context, name string) context.Context {
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, toolsetKey{}, name)
}

func toolsetOf(ctx context.Context) string {
	name, _ := ctx.Value(toolsetKey{}).(string)
	return name
}

// noToolset is the refusal of a toolset that is not defined (or not the
// one the caller's key is bound to).
func noToolset(name string) *refusal {
	return &refusal{status: http.StatusNotFound, code: "not-found", reason: "no-toolset", msg: fmt.Sprintf("no toolset %q: the tool policy defines them (GET /v1/policy)", name)}
}

// gateFor is the gate of a caller: key (nil for a caller the process
// trusts, MCP over stdio, which counts as its tenant's admin) acting for
// person.
func (s *Server) gateFor(ctx context.Context, tenant string, key *auth.APIKey, person string) (*gate, error) {
	all, err := s.policyOf(ctx, AllTenants)
	if err != nil {
		return nil, err
	}
	own, err := s.policyOf(ctx, tenant)
	if err != nil {
		return nil, err
	}
	who := policy.Subject{Role: auth.RoleAdmin, Person: person}
	if key != nil {
		who.Role, who.Key = key.Role, key.ID
		if key.Role == auth.RolePerson {
			who.Person = key.Person
		}
	}
	g := &gate{s: s, who: who, policies: [2]*policy.Policy{all, own}}
	name := toolsetOf(ctx)
	if key != nil && key.Toolset != "" {
		if name != "" && name != key.Toolset {
			return nil, noToolset(name) // a key bound to a toolset knows no other
		}
		name = key.Toolset
	}
	if name != "" {
		sel, ok := policy.Toolset(name, all, own)
		if !ok {
			return nil, noToolset(name)
		}
		g.toolset, g.set = name, &sel
	}
	return g, nil
}

// decide is the decision for tool (a listing's: nothing is counted).
func (g *gate) decide(tool *synth.Tool) policy.Decision {
	if g.policies[0] == nil && g.policies[1] == nil {
		return policy.Decision{Allow: true, Rule: "default"}
	}
	facts := g.s.Tools().factsOf(tool)
	if g.set != nil && !g.set.Selects(facts) {
		return policy.Decision{Allow: false, Rule: "toolset:" + g.toolset}
	}
	return policy.Decide(facts, g.who, g.policies[:]...)
}

// allows says whether the caller may run or look up tool; a denial is
// counted under its rule and noted on the request's access record.
func (g *gate) allows(ctx context.Context, tool *synth.Tool) bool {
	d := g.decide(tool)
	if !d.Allow {
		g.s.cfg.Metrics.policyDenials.WithLabelValues(d.Rule).Inc()
		notePolicy(ctx, d.Rule)
	}
	return d.Allow
}

// ToolFacts is what a policy may select tool by: its id, metadata.tags,
// effects, whether it mutates, its auth kind ("none" without one) and its
// upstream host.
func ToolFacts(t *synth.Tool) policy.Tool { return factsOf(t) }

func factsOf(t *synth.Tool) policy.Tool {
	m := t.Manifest()
	f := policy.Tool{ID: t.ID(), Mutating: m.IsMutating(), Auth: "none"}
	for _, tag := range gjson.GetBytes(m.Metadata, "tags").Array() {
		if tag.Type == gjson.String {
			f.Tags = append(f.Tags, tag.Str)
		}
	}
	for _, e := range m.Effects {
		f.Effects = append(f.Effects, policy.Effect{Kind: e.Kind, Resource: e.Resource})
	}
	// The http handler knows its host and authorization already, in the
	// one form its allowlist and its calls use.
	switch h := t.Handler().(type) {
	case *httpspec.Handler:
		if a := h.Spec().Authorization; a != nil {
			f.Auth = a.Kind
		}
		f.Hosts = []string{h.Host()}
	case *mcpremote.Handler:
		if a := h.Authorization(); a != nil {
			f.Auth = a.Kind
		}
		if host := h.Host(); host != "" {
			f.Hosts = []string{host}
		}
	}
	return f
}

// toolNotFoundRefusal is what a denied tool gets: what an unknown id gets.
func toolNotFoundRefusal(id string) *refusal {
	return &refusal{status: http.StatusNotFound, code: string(synth.CodeToolNotFound), msg: fmt.Sprintf("no tool %q: GET /v1/tools lists them", id)}
}

// CheckToolset says whether toolset is defined for tenant, returning how
// many of the current tools it shows its tenant's admin.
func (s *Server) CheckToolset(ctx context.Context, tenant, toolset string) (int, error) {
	g, err := s.gateFor(withToolset(ctx, toolset), tenant, nil, "")
	if err != nil {
		return 0, err
	}
	n := 0
	ts := s.Tools()
	for _, id := range ts.ids {
		if g.decide(ts.tools[id]).Allow {
			n++
		}
	}
	return n, nil
}
