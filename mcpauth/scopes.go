package mcpauth

import "slices"

// ChooseScopes picks the scopes to ask (MCP 2025-11-25, "Scope Selection
// Strategy"): the challenge's, else the protected resource's
// scopes_supported, else none (the scope parameter is then omitted); always
// with the scopes asked before for the same resource (held), so that a
// step-up loses nothing granted.
func ChooseScopes(ch Challenge, d *Discovery, held []string) []string {
	want := ch.Scopes
	if len(want) == 0 && d != nil && d.ResourceMetadata != nil {
		want = d.ResourceMetadata.ScopesSupported
	}
	return Union(held, want)
}

// Union is a then the scopes of b not in a; nil when both are empty.
func Union(a, b []string) []string {
	var out []string
	for _, s := range slices.Concat(a, b) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
