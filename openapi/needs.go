package openapi

import (
	"encoding/json"
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
		var t struct {
			NeedsSpec *struct {
				Connections map[string]struct {
					App         string   `json:"app"`
					Permissions []string `json:"permissions"`
				} `json:"connections"`
			} `json:"needsSpec"`
			Spec struct {
				Authorization *struct {
					SecretRef *struct{ EnvName, Name string } `json:"secretRef"`
				} `json:"authorization"`
			} `json:"spec"`
		}
		if json.Unmarshal(m.JSON, &t) != nil {
			continue
		}
		if a := t.Spec.Authorization; a != nil && a.SecretRef != nil {
			name := a.SecretRef.EnvName + "/" + a.SecretRef.Name
			n := byKey["secret "+name]
			if n == nil {
				n = &Need{Kind: "secret", Secret: name}
				byKey["secret "+name] = n
			}
			n.Tools++
		}
		if t.NeedsSpec == nil {
			continue
		}
		for conn, c := range t.NeedsSpec.Connections {
			n := byKey["connection "+conn]
			if n == nil {
				n = &Need{Kind: "connection", Connection: conn, App: c.App}
				byKey["connection "+conn] = n
			}
			for _, s := range c.Permissions {
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
