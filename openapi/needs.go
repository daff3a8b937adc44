package openapi

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Need is a secret or a connection that imported tools need before their
// first call: what a newcomer must store, and how many tools wait for it.
type Need struct {
	// Kind is "secret" or "connection".
	Kind string
	// Secret is ENV/NAME (production/API_TOKEN), for a secret.
	Secret string
	// Connection, App and Scopes name a connection: the one the tools
	// use, the app of apps.json it is made with, the scopes they ask.
	Connection, App string
	Scopes          []string
	// Tools counts the tools that need it.
	Tools int
}

// Needs lists the secrets and connections the imported tools need,
// secrets first, each once with the number of tools that use it.
func (r *Result) Needs() []Need {
	byKey := map[string]*Need{}
	for _, m := range r.Manifests {
		for _, u := range m.needs {
			key := u.Kind + " " + u.Secret + u.Connection
			n := byKey[key]
			if n == nil {
				n = &Need{Kind: u.Kind, Secret: u.Secret, Connection: u.Connection, App: u.App}
				byKey[key] = n
			}
			for _, s := range u.Scopes {
				if !slices.Contains(n.Scopes, s) {
					n.Scopes = append(n.Scopes, s)
				}
			}
			n.Tools++
		}
	}
	out := make([]Need, 0, len(byKey))
	for _, k := range sortedKeys(byKey) {
		sort.Strings(byKey[k].Scopes)
		out = append(out, *byKey[k])
	}
	// "connection …" sorts before "secret …": secrets first reads better.
	slices.SortStableFunc(out, func(a, b Need) int { return strings.Compare(b.Kind, a.Kind) })
	return out
}

// String is the need in words: "secret production/API_TOKEN (8 tools)".
func (n Need) String() string {
	if n.Kind == "secret" {
		return fmt.Sprintf("secret %s (%d tools)", n.Secret, n.Tools)
	}
	s := fmt.Sprintf("connection %s of app %s (%d tools", n.Connection, n.App, n.Tools)
	if len(n.Scopes) > 0 {
		s += "; scopes " + strings.Join(n.Scopes, " ")
	}
	return s + ")"
}

// needsOf is what one tool needs, as written: its secret, its connections.
func needsOf(t *tool) []Need {
	var out []Need
	if a := t.Spec.Authorization; a != nil && a.SecretRef != nil {
		out = append(out, Need{Kind: "secret", Secret: a.SecretRef.String(), Tools: 1})
	}
	if t.NeedsSpec != nil {
		for _, conn := range sortedKeys(t.NeedsSpec.Connections) {
			c := t.NeedsSpec.Connections[conn]
			out = append(out, Need{Kind: "connection", Connection: conn, App: c.App, Scopes: c.Permissions, Tools: 1})
		}
	}
	return out
}
