package synth

import (
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Spelling suggestions: an unknown field close to a known one at the same
// place ("urlTempate") is most likely a slip, and saying the name it
// probably meant saves reading the whole schema.

// Closest returns the name of known nearest to name: one that differs in
// case only, else one within a third of name's length in edits (at most
// two, at least one); "" when none is that close. Ties go to the first
// in sorted order, so the suggestion is stable.
func Closest(name string, known []string) string {
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	limit := min(2, max(1, len(name)/3))
	best, bestD := "", limit+1
	for _, k := range sorted {
		if k == name {
			continue
		}
		if strings.EqualFold(k, name) {
			return k
		}
		if d := EditDistance(strings.ToLower(k), strings.ToLower(name)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance of a and b, in bytes; names
// longer than 64 bytes are too far apart to be a slip (64). Every spelling
// suggestion of the project measures with it.
func EditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// fieldNamesCache holds, per compiled root schema, the declared property
// names of each of its closed objects by schema location.
var fieldNamesCache sync.Map // *jsonschema.Schema → map[string][]string

// fieldNames returns the property names of every schema reachable from
// root, by location: what an additionalProperties error's SchemaURL
// names. Computed once per root.
func fieldNames(root *jsonschema.Schema) map[string][]string {
	if root == nil {
		return nil
	}
	if v, ok := fieldNamesCache.Load(root); ok {
		return v.(map[string][]string)
	}
	names := map[string][]string{}
	seen := map[*jsonschema.Schema]bool{}
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		for k, p := range s.Properties {
			names[s.Location] = append(names[s.Location], k)
			walk(p)
		}
		for _, p := range s.PatternProperties {
			walk(p)
		}
		for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
			for _, p := range list {
				walk(p)
			}
		}
		for _, p := range []*jsonschema.Schema{s.Ref, s.Not, s.If, s.Then, s.Else, s.Items2020, s.Contains, s.UnevaluatedProperties} {
			walk(p)
		}
		if p, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			walk(p)
		}
		if p, ok := s.Items.(*jsonschema.Schema); ok {
			walk(p)
		}
		for _, p := range s.DependentSchemas {
			walk(p)
		}
	}
	walk(root)
	fieldNamesCache.Store(root, names)
	return names
}

// didYouMean is `: did you mean "x"?` for an unknown field of the object
// the schema at location declares, or "".
func didYouMean(root *jsonschema.Schema, location, field string) string {
	if best := Closest(field, fieldNames(root)[location]); best != "" {
		return `; did you mean "` + best + `"?`
	}
	return ""
}
