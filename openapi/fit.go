package openapi

// The size budget of a generated manifest, and what is cut, cheapest
// first, to keep under it.

// maxManifestBytes is the size budget of one generated manifest: a model
// reads a tool's schemas whole, and a client lists every tool.
const maxManifestBytes = 64 << 10

// fit brings a manifest's schemas under the size budget, cheapest cut
// first, and says what it cut: descriptions and examples inside the
// shared definitions, then the output's shape (the answer is no longer
// checked beyond its type), then the input's shared definitions (the
// members that use them accept any value; the upstream still checks).
func fit(t *tool, size func() int) []string {
	var cuts []string
	if size() <= maxManifestBytes {
		return nil
	}
	for _, sch := range []map[string]any{t.Input, t.Output} {
		if defs, ok := sch["$defs"].(map[string]any); ok {
			strip(defs)
		}
		if props, ok := sch["properties"].(map[string]any); ok {
			for _, p := range props {
				if pm, ok := p.(map[string]any); ok {
					for k, v := range pm {
						if k != "description" {
							strip(v)
						}
					}
				}
			}
		}
	}
	cuts = append(cuts, "descriptions and examples inside the schemas")
	if size() <= maxManifestBytes {
		return cuts
	}
	typ := t.Output["type"]
	for k := range t.Output {
		delete(t.Output, k)
	}
	if typ != nil {
		t.Output["type"] = typ
	}
	cuts = append(cuts, "the output schema past its type")
	if size() <= maxManifestBytes {
		return cuts
	}
	if defs, ok := t.Input["$defs"].(map[string]any); ok {
		for k := range defs {
			defs[k] = map[string]any{}
		}
		cuts = append(cuts, "the input's shared definitions (their members accept any value)")
	}
	return cuts
}

// strip removes descriptions and examples below v.
func strip(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "description")
		delete(x, "examples")
		for k, c := range x {
			if k == "properties" || k == "$defs" {
				if m, ok := c.(map[string]any); ok {
					for _, p := range m {
						strip(p)
					}
					continue
				}
			}
			strip(c)
		}
	case []any:
		for _, c := range x {
			strip(c)
		}
	}
}
