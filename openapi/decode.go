package openapi

import (
	"encoding/json"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/getkin/kin-openapi/openapi3"
)

// decodeDocument is kin-openapi's T.UnmarshalJSON of a document already
// decoded as generic JSON, with its bulk — the path items and the component
// schemas, nearly all of a big description — decoded on every core, each
// once. (T.UnmarshalJSON decodes the whole document twice, once for its
// extensions, and Paths once more through a generic map: two thirds of a
// big import's decoding.) Each part goes through the same kin-openapi
// decoder as before (PathItem.UnmarshalJSON, SchemaRef.UnmarshalJSON,
// Components.UnmarshalJSON, T.UnmarshalJSON for the rest), so the result is
// the one the whole-document decoder gives. A document of another shape
// (paths or components not objects, a null path item or schema), or one
// with a part that does not decode, is decoded whole, as before, so that
// what fails fails in kin-openapi's own words.
func decodeDocument(g map[string]any) (*openapi3.T, error) {
	doc, ok := decodeParts(g)
	if ok {
		return doc, nil
	}
	data, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	doc = &openapi3.T{}
	if err := doc.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return doc, nil
}

// decodeParts decodes g part by part; false when g is not of the shape it
// reads, or a part does not decode.
func decodeParts(g map[string]any) (*openapi3.T, bool) {
	paths, comps, ok := bulk(g)
	if !ok {
		return nil, false
	}
	schemas, _ := comps["schemas"].(map[string]any)
	var jobs []part
	for _, name := range sortedKeys(schemas) {
		jobs = append(jobs, part{name: name, value: schemas[name], into: &openapi3.SchemaRef{}})
	}
	for _, p := range sortedKeys(paths) {
		if !strings.HasPrefix(p, "x-") {
			jobs = append(jobs, part{name: p, value: paths[p], into: &openapi3.PathItem{}})
		}
	}
	if !decodeAll(jobs) {
		return nil, false
	}

	doc := &openapi3.T{}
	if !decodeWithout(g, doc, "paths", "components") {
		return nil, false
	}
	if comps != nil {
		c := &openapi3.Components{}
		if !decodeWithout(comps, c, "schemas") {
			return nil, false
		}
		doc.Components = c
	}
	if paths != nil {
		doc.Paths = openapi3.NewPaths()
		doc.Paths.Extensions = map[string]any{}
		for k, v := range paths {
			if strings.HasPrefix(k, "x-") {
				doc.Paths.Extensions[k] = v
			}
		}
	}
	for _, j := range jobs {
		switch into := j.into.(type) {
		case *openapi3.SchemaRef:
			if doc.Components.Schemas == nil {
				doc.Components.Schemas = openapi3.Schemas{}
			}
			doc.Components.Schemas[j.name] = into
		case *openapi3.PathItem:
			doc.Paths.Set(j.name, into)
		}
	}
	return doc, true
}

// bulk is g's paths and components, when both are objects (or absent)
// and neither holds a null path item or schema (which the whole-document
// decoder treats its own way).
func bulk(g map[string]any) (paths, comps map[string]any, ok bool) {
	if v, there := g["paths"]; there {
		if paths, ok = v.(map[string]any); !ok {
			return nil, nil, false
		}
	}
	if v, there := g["components"]; there {
		if comps, ok = v.(map[string]any); !ok {
			return nil, nil, false
		}
		if v, there := comps["schemas"]; there {
			s, ok := v.(map[string]any)
			if !ok || hasNull(s) {
				return nil, nil, false
			}
		}
	}
	return paths, comps, !hasNull(paths)
}

func hasNull(m map[string]any) bool {
	for _, v := range m {
		if v == nil {
			return true
		}
	}
	return false
}

// part is one path item or component schema to decode.
type part struct {
	name  string
	value any
	into  json.Unmarshaler
}

// decodeAll decodes every part, on every core; false if one does not
// decode.
func decodeAll(jobs []part) bool {
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(jobs) && !failed.Load(); i = int(next.Add(1) - 1) {
				if decodePart(jobs[i]) != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return !failed.Load()
}

// decodePart decodes a part as kin-openapi does: a schema by schemaRefOf
// where it reads it, a path item by decodePathItem, else by its decoder.
func decodePart(j part) error {
	switch into := j.into.(type) {
	case *openapi3.SchemaRef:
		if fast, ok := schemaRefOf(j.value); ok {
			*into = *fast
			return nil
		}
	case *openapi3.PathItem:
		// kin-openapi decodes a document's paths through a generic map
		// first (Paths.UnmarshalJSON): a YAML integer is a float64 by the
		// time its path item is decoded.
		return decodePathItem(floatNumbers(j.value), into)
	}
	data, err := json.Marshal(j.value)
	if err != nil {
		return err
	}
	return j.into.UnmarshalJSON(data)
}

// decodeWithout decodes m, but for the members named, into v.
func decodeWithout(m map[string]any, v json.Unmarshaler, without ...string) bool {
	rest := make(map[string]any, len(m))
	for k, x := range m {
		rest[k] = x
	}
	for _, k := range without {
		delete(rest, k)
	}
	data, err := json.Marshal(rest)
	return err == nil && v.UnmarshalJSON(data) == nil
}

// floatNumbers is v with its integers (as YAML decodes them) the float64
// encoding/json would decode them to; v itself if it holds none.
func floatNumbers(v any) any {
	f, _ := floatNumbersIn(v)
	return f
}

// floatNumbersIn is floatNumbers, and whether it changed anything.
func floatNumbersIn(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if f, changed := floatNumbersIn(e); changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = f
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range x {
			if f, changed := floatNumbersIn(e); changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = f
			}
		}
		if out != nil {
			return out, true
		}
	case int, int64, uint64:
		f, _ := number(x)
		return f, true
	}
	return v, false
}
