package server

import (
	"context"
	"slices"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/history"
)

// What a caller sees of the records about tools: the call history
// (GET /v1/calls, the console's Calls page) and approvals (GET
// /v1/approvals, deciding one, the console's Approvals page, the MCP
// client's elicitation). A record of a tool the caller's gate refuses is
// not there, exactly as a record of a tool that never existed; an
// approval of such a tool is an unknown approval.

// scopeOf is the part of tenant's records about tools that key (nil: the
// process's own caller, as gateFor takes it) may see: per person the
// policies name, and for every other person, the ids of the loaded tools
// its gate allows for that person (the toolset in ctx or the key's
// included). A caller no policy and no toolset limits gets nil, every
// record, those of tools no longer loaded included; any other sees no
// record of a tool no longer loaded, since what a rule would decide of it
// is no longer known.
func (s *Server) scopeOf(ctx context.Context, tenant string, key *auth.APIKey) (*history.Scope, error) {
	g, err := s.gateFor(ctx, tenant, key, "")
	if err != nil {
		return nil, err
	}
	if g.set == nil && g.policies[0] == nil && g.policies[1] == nil {
		return nil, nil
	}
	ts := s.Tools()
	visible := func(person string) []string {
		g.who.Person = person
		ids := []string{}
		for _, id := range ts.ids {
			if g.decide(ts.tools[id]).Allow {
				ids = append(ids, id)
			}
		}
		return ids
	}
	if key != nil && key.Role == auth.RolePerson {
		// A person key sees its own person's records only, and its gate
		// is that person's.
		return &history.Scope{Persons: map[string][]string{key.Person: visible(key.Person)}}, nil
	}
	named := g.persons()
	sc := &history.Scope{Persons: make(map[string][]string, len(named))}
	for _, p := range named {
		sc.Persons[p] = visible(p)
	}
	other := "\x00other"
	for slices.Contains(named, other) {
		other += "\x00"
	}
	sc.Others = visible(other) // a person no rule names: each rule decides as for any such
	return sc, nil
}

// persons lists the persons g's policies name in a rule's subjects,
// sorted, each once.
func (g *gate) persons() []string {
	var out []string
	for _, p := range g.policies {
		if p == nil {
			continue
		}
		for _, r := range p.Rules {
			out = append(out, r.Subjects.Persons...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
