// Package policy decides which tools a caller may see and run.
//
// A Policy is a list of rules and a default. A rule selects tools (by id
// glob, metadata tag, effect kind and resource glob, mutating, auth kind,
// upstream host glob) and subjects (by key role, key id, person); it
// allows or denies what it selects. Rules combine so that deny wins: a
// tool a matching rule denies is denied whatever another allows; one no
// deny matches is allowed when an allow matches it, else the default
// decides (allow, unless the policy says "default": "deny"). A tenant's
// policy and the default policy for all tenants both apply, deny winning
// across them too, and a tenant's "default": "deny" closes what neither
// allows.
//
// The package is the rules only: what a tool is (Tool) and who asks
// (Subject) are its caller's to say.
package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Policy is one document: {"default": "allow"|"deny", "rules": [...],
// "toolsets": {...}}.
type Policy struct {
	// Default decides a tool no rule matches: "allow" (or "") or "deny".
	Default string `json:"default,omitempty"`
	Rules   []Rule `json:"rules"`
	// Toolsets are named subsets of the tools, with the selectors of a
	// rule: a caller that asks for one (or whose key is bound to one)
	// sees and runs the tools it selects that the rules allow, and no
	// other.
	Toolsets map[string]Tools `json:"toolsets,omitempty"`
}

// Rule allows or denies the tools it selects to the subjects it selects.
// An empty selector selects everything; a selector with several values
// selects any of them; every selector of a rule must select.
type Rule struct {
	// Name says which rule decided, in the access log and /metrics;
	// "" is "rules[N]".
	Name   string `json:"name,omitempty"`
	Effect string `json:"effect"` // "allow" or "deny"

	Tools    Tools    `json:"tools,omitzero"`
	Subjects Subjects `json:"subjects,omitzero"`
}

// Tools selects tools.
type Tools struct {
	IDs      []string       `json:"ids,omitempty"`  // globs: "github.*"
	Tags     []string       `json:"tags,omitempty"` // metadata.tags
	Effects  []EffectFilter `json:"effects,omitempty"`
	Mutating *bool          `json:"mutating,omitempty"`
	Auth     []string       `json:"auth,omitempty"`  // "none", "bearer", "header", "connection"
	Hosts    []string       `json:"hosts,omitempty"` // globs of the upstream host
}

// EffectFilter selects tools that declare an effect of Kind (any, when
// empty) whose resource matches Resource (a glob; any, when empty).
type EffectFilter struct {
	Kind     string `json:"kind,omitempty"`
	Resource string `json:"resource,omitempty"`
}

// Subjects selects callers.
type Subjects struct {
	Roles   []string `json:"roles,omitempty"` // "admin", "service", "person"
	Keys    []string `json:"keys,omitempty"`  // key ids
	Persons []string `json:"persons,omitempty"`
}

// Tool is what a rule may select a tool by.
type Tool struct {
	ID       string
	Tags     []string
	Effects  []Effect
	Mutating bool
	Auth     string // "none", "bearer", "header" or "connection"
	Hosts    []string
}

// Effect is a declared effect of a tool.
type Effect struct{ Kind, Resource string }

// Subject is who asks: the role and id of the key, and the person the call
// is for ("" for none).
type Subject struct {
	Role, Key, Person string
}

// Decision is a policy's answer for one tool and one subject.
type Decision struct {
	Allow bool
	// Rule names what decided: a rule's name, or "default" (the policy's
	// default, or allow when there is no policy).
	Rule string
}

// Problem is one mistake in a policy document, with its field path.
type Problem struct{ Path, Message string }

func (p Problem) String() string { return p.Path + ": " + p.Message }

// Error lists every problem of a document that does not parse or check.
type Error struct{ Problems []Problem }

func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "policy: " + strings.Join(parts, "; ")
}

// Known values.
var (
	effects = []string{"allow", "deny"}
	roles   = []string{"admin", "service", "person"}
	auths   = []string{"none", "bearer", "header", "connection"}
	kinds   = []string{"reads", "writes", "deletes", "network", "spawns-run", "emits-event", "external-side-effect", "sensitive-data-egress"}
)

// Parse reads a policy document strictly (unknown members, a wrong type, an
// unknown effect, role, auth or effect kind, a malformed glob are errors,
// each with its field path) and returns it checked.
func Parse(src []byte) (*Policy, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, &Error{[]Problem{{Path: "", Message: "is not a policy document: " + err.Error()}}}
	}
	if dec.More() {
		return nil, &Error{[]Problem{{Path: "", Message: "holds more than one JSON value"}}}
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Check reports every problem of p at once, or nil.
func (p *Policy) Check() error {
	var ps []Problem
	add := func(path, format string, args ...any) {
		ps = append(ps, Problem{path, fmt.Sprintf(format, args...)})
	}
	if p.Default != "" && !slices.Contains(effects, p.Default) {
		add("default", "%q: want \"allow\" or \"deny\"", p.Default)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Toolsets)) {
		if !toolsetName.MatchString(name) {
			add("toolsets."+name, "is not a toolset name: lowercase letters, digits, '.', '_' and '-', at most 64, as it is a URL path segment (/mcp/NAME)")
		}
		checkTools(p.Toolsets[name], "toolsets."+name, add)
	}
	names := map[string]int{}
	for i, r := range p.Rules {
		at := fmt.Sprintf("rules[%d]", i)
		if !slices.Contains(effects, r.Effect) {
			add(at+".effect", "%q: want \"allow\" or \"deny\"", r.Effect)
		}
		if r.Name != "" {
			if j, dup := names[r.Name]; dup {
				add(at+".name", "%q is also rules[%d]'s: give each rule its own name", r.Name, j)
			}
			names[r.Name] = i
		}
		checkTools(r.Tools, at+".tools", add)
		for k, role := range r.Subjects.Roles {
			if !slices.Contains(roles, role) {
				add(fmt.Sprintf("%s.subjects.roles[%d]", at, k), "%q: want one of %s", role, strings.Join(roles, ", "))
			}
		}
	}
	if len(ps) > 0 {
		return &Error{ps}
	}
	return nil
}

// toolsetName is what a toolset may be called.
var toolsetName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// checkTools reports the problems of a tools selector at path at.
func checkTools(t Tools, at string, add func(path, format string, args ...any)) {
	globs := func(field string, vs []string) {
		for k, g := range vs {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				add(fmt.Sprintf("%s.%s[%d]", at, field, k), "%q is not a glob (* and ? match, [..] a class)", g)
			}
		}
	}
	globs("ids", t.IDs)
	globs("hosts", t.Hosts)
	for k, a := range t.Auth {
		if !slices.Contains(auths, a) {
			add(fmt.Sprintf("%s.auth[%d]", at, k), "%q: want one of %s", a, strings.Join(auths, ", "))
		}
	}
	for k, e := range t.Effects {
		if e.Kind != "" && !slices.Contains(kinds, e.Kind) {
			add(fmt.Sprintf("%s.effects[%d].kind", at, k), "%q: want one of %s", e.Kind, strings.Join(kinds, ", "))
		}
		if _, err := path.Match(e.Resource, ""); err != nil {
			add(fmt.Sprintf("%s.effects[%d].resource", at, k), "%q is not a glob (* and ? match, [..] a class)", e.Resource)
		}
	}
}

// Toolset returns the selector of the toolset name: the last of the
// policies that defines it (a tenant's own, given after the one all
// tenants are under, redefines a name).
func Toolset(name string, policies ...*Policy) (Tools, bool) {
	var sel Tools
	found := false
	for _, p := range policies {
		if p == nil {
			continue
		}
		if t, ok := p.Toolsets[name]; ok {
			sel, found = t, true
		}
	}
	return sel, found
}

// Selects says whether the selector selects tool.
func (t Tools) Selects(tool Tool) bool { return t.selects(tool) }

// Decide is the decision of the policies, applied together, for tool and
// subject: deny wins across them; a tool no rule denies is allowed when a
// rule allows it, else the first default that says deny denies it. No
// policy at all allows everything.
func Decide(tool Tool, who Subject, policies ...*Policy) Decision {
	allowedBy := ""
	for _, p := range policies {
		if p == nil {
			continue
		}
		for i, r := range p.Rules {
			if !r.Tools.selects(tool) || !r.Subjects.selects(who) {
				continue
			}
			name := r.Name
			if name == "" {
				name = fmt.Sprintf("rules[%d]", i)
			}
			if r.Effect == "deny" {
				return Decision{Allow: false, Rule: name}
			}
			if allowedBy == "" {
				allowedBy = name
			}
		}
	}
	if allowedBy != "" {
		return Decision{Allow: true, Rule: allowedBy}
	}
	for _, p := range policies {
		if p != nil && p.Default == "deny" {
			return Decision{Allow: false, Rule: "default"}
		}
	}
	return Decision{Allow: true, Rule: "default"}
}

func (t Tools) selects(tool Tool) bool {
	if len(t.IDs) > 0 && !anyGlob(t.IDs, tool.ID) {
		return false
	}
	if len(t.Tags) > 0 && !slices.ContainsFunc(t.Tags, func(tag string) bool { return slices.Contains(tool.Tags, tag) }) {
		return false
	}
	if t.Mutating != nil && *t.Mutating != tool.Mutating {
		return false
	}
	if len(t.Auth) > 0 && !slices.Contains(t.Auth, tool.Auth) {
		return false
	}
	if len(t.Hosts) > 0 && !slices.ContainsFunc(tool.Hosts, func(h string) bool { return anyGlob(t.Hosts, h) }) {
		return false
	}
	if len(t.Effects) > 0 && !slices.ContainsFunc(t.Effects, func(f EffectFilter) bool {
		return slices.ContainsFunc(tool.Effects, func(e Effect) bool {
			return (f.Kind == "" || f.Kind == e.Kind) && (f.Resource == "" || glob(f.Resource, e.Resource))
		})
	}) {
		return false
	}
	return true
}

func (s Subjects) selects(who Subject) bool {
	if len(s.Roles) > 0 && !slices.Contains(s.Roles, who.Role) {
		return false
	}
	if len(s.Keys) > 0 && !slices.Contains(s.Keys, who.Key) {
		return false
	}
	if len(s.Persons) > 0 && !slices.Contains(s.Persons, who.Person) {
		return false
	}
	return true
}

func anyGlob(globs []string, s string) bool {
	return slices.ContainsFunc(globs, func(g string) bool { return glob(g, s) })
}

// glob matches s against g, case-sensitively, "*" crossing dots and
// slashes (a tool id and a resource are one word, not a path).
func glob(g, s string) bool {
	ok, err := path.Match(strings.ReplaceAll(g, "/", "\x00"), strings.ReplaceAll(s, "/", "\x00"))
	return err == nil && ok
}
