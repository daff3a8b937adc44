package openapi

// A path item decoded by kin-openapi with its schemas decoded by
// schemaRefOf (kinschema.go): the schemas of its parameters, and of its
// operations' parameters, request body and responses, are most of a big
// description's path items, and kin-openapi decodes each of them over and
// over (once per level above it, twice per level below). Those schemas
// are set aside, the rest of the path item is decoded by kin-openapi with
// an empty schema in their place, and each schema is put back where that
// empty one was decoded. A schema schemaRefOf does not read stays in place
// for kin-openapi; a path item whose keys are not what this reads (a key
// on the way that encoding/json would match in another case, a reference),
// or that does not decode to the places expected, is decoded whole by
// kin-openapi. TestDecodeDocumentIsKinsDecode holds the result to
// kin-openapi's.

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// graft is a schema set aside, and where it goes in the decoded path item.
type graft struct {
	ref   *openapi3.SchemaRef
	place func(*openapi3.PathItem) **openapi3.SchemaRef // nil if the place is not there
}

// pathMethods are the JSON names of openapi3.PathItem's operation fields,
// read off its struct tags.
var pathMethods = slices.Sorted(maps.Keys(jsonNames(reflect.TypeFor[openapi3.PathItem](), reflect.TypeFor[*openapi3.Operation]())))

// decodePathItem decodes v, a path item, into pi.
func decodePathItem(v any, pi *openapi3.PathItem) error {
	if m, ok := v.(map[string]any); ok {
		var grafts []graft
		if bare, ok := setAside(m, &grafts); ok && len(grafts) > 0 {
			data, err := json.Marshal(bare)
			if err == nil && pi.UnmarshalJSON(data) == nil && putBack(pi, grafts) {
				return nil
			}
			*pi = openapi3.PathItem{}
		}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return pi.UnmarshalJSON(data)
}

// putBack puts each schema set aside where kin-openapi decoded its
// stand-in; false if a place is not there or holds something else.
func putBack(pi *openapi3.PathItem, grafts []graft) bool {
	for _, g := range grafts {
		p := g.place(pi)
		if p == nil || *p == nil || !isStandIn(*p) {
			return false
		}
	}
	for _, g := range grafts {
		*g.place(pi) = g.ref
	}
	return true
}

// isStandIn says r is what kin-openapi decodes an empty object to.
func isStandIn(r *openapi3.SchemaRef) bool {
	return reflect.DeepEqual(r, &openapi3.SchemaRef{Value: &openapi3.Schema{}})
}

// setAside returns m with the schemas it reads replaced by stand-ins,
// copying only the objects on the way to them, and appends each to grafts.
func setAside(m map[string]any, grafts *[]graft) (map[string]any, bool) {
	if !plainKeys(m, append([]string{"parameters", "$ref"}, pathMethods...)) || m["$ref"] != nil {
		return nil, false
	}
	out := maps.Clone(m)
	ok := true
	if l, there := m["parameters"].([]any); there {
		out["parameters"], ok = asideParams(l, grafts, func(pi *openapi3.PathItem) openapi3.Parameters { return pi.Parameters })
	}
	for _, method := range pathMethods {
		op, there := m[method].(map[string]any)
		if !there || !ok {
			continue
		}
		upper := strings.ToUpper(method)
		opOf := func(pi *openapi3.PathItem) *openapi3.Operation { return pi.GetOperation(upper) }
		out[method], ok = asideOperation(op, grafts, opOf)
	}
	return out, ok
}

func asideOperation(op map[string]any, grafts *[]graft, opOf func(*openapi3.PathItem) *openapi3.Operation) (map[string]any, bool) {
	if !plainKeys(op, []string{"parameters", "requestBody", "responses"}) {
		return nil, false
	}
	out := maps.Clone(op)
	ok := true
	if l, there := op["parameters"].([]any); there {
		out["parameters"], ok = asideParams(l, grafts, func(pi *openapi3.PathItem) openapi3.Parameters {
			if o := opOf(pi); o != nil {
				return o.Parameters
			}
			return nil
		})
	}
	if rb, there := op["requestBody"].(map[string]any); there && ok {
		out["requestBody"], ok = asideContent(rb, grafts, func(pi *openapi3.PathItem) openapi3.Content {
			if o := opOf(pi); o != nil && o.RequestBody != nil && o.RequestBody.Value != nil {
				return o.RequestBody.Value.Content
			}
			return nil
		})
	}
	if rs, there := op["responses"].(map[string]any); there && ok {
		res := maps.Clone(rs)
		for code, r := range rs {
			rm, isObj := r.(map[string]any)
			if !isObj || strings.HasPrefix(code, "x-") {
				continue
			}
			res[code], ok = asideContent(rm, grafts, func(pi *openapi3.PathItem) openapi3.Content {
				if o := opOf(pi); o != nil && o.Responses != nil {
					if rr := o.Responses.Value(code); rr != nil && rr.Value != nil {
						return rr.Value.Content
					}
				}
				return nil
			})
			if !ok {
				break
			}
		}
		out["responses"] = res
	}
	return out, ok
}

// asideParams sets aside the schemas of a list of parameters (not the
// references among them), params finding the decoded list.
func asideParams(l []any, grafts *[]graft, params func(*openapi3.PathItem) openapi3.Parameters) ([]any, bool) {
	out := make([]any, len(l)) // [] stays [], not null
	copy(out, l)
	for i, p := range l {
		pm, isObj := p.(map[string]any)
		if !isObj {
			continue
		}
		if !plainKeys(pm, []string{"schema", "$ref"}) {
			return nil, false
		}
		if _, isRef := pm["$ref"]; isRef {
			continue
		}
		out[i] = asideSchema(pm, grafts, func(pi *openapi3.PathItem) **openapi3.SchemaRef {
			ps := params(pi)
			if i >= len(ps) || ps[i] == nil || ps[i].Value == nil {
				return nil
			}
			return &ps[i].Value.Schema
		})
	}
	return out, true
}

// asideSchema returns obj with its schema replaced by a stand-in, and
// appends the schema to grafts, to go where place finds; obj itself if
// schemaRefOf does not read its schema (kin-openapi then decodes it).
func asideSchema(obj map[string]any, grafts *[]graft, place func(*openapi3.PathItem) **openapi3.SchemaRef) map[string]any {
	ref, ok := schemaRefOf(obj["schema"])
	if !ok {
		return obj
	}
	q := maps.Clone(obj)
	q["schema"] = map[string]any{}
	*grafts = append(*grafts, graft{ref, place})
	return q
}

// asideContent sets aside the schemas of an object's content (a request
// body's, a response's), content finding the decoded content.
func asideContent(m map[string]any, grafts *[]graft, content func(*openapi3.PathItem) openapi3.Content) (map[string]any, bool) {
	if !plainKeys(m, []string{"content", "$ref"}) {
		return nil, false
	}
	c, there := m["content"].(map[string]any)
	if _, isRef := m["$ref"]; isRef || !there {
		return m, true
	}
	outC := maps.Clone(c)
	for mt, v := range c {
		media, isObj := v.(map[string]any)
		if !isObj {
			continue
		}
		if !plainKeys(media, []string{"schema"}) {
			return nil, false
		}
		outC[mt] = asideSchema(media, grafts, func(pi *openapi3.PathItem) **openapi3.SchemaRef {
			if media := content(pi)[mt]; media != nil {
				return &media.Schema
			}
			return nil
		})
	}
	out := maps.Clone(m)
	out["content"] = outC
	return out, true
}

// plainKeys says no key of m is one of names in another case, which
// encoding/json would decode as that name.
func plainKeys(m map[string]any, names []string) bool {
	for k := range m {
		for _, n := range names {
			if k != n && strings.EqualFold(k, n) {
				return false
			}
		}
	}
	return true
}
