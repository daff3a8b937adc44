package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Broken documents. A real document often has a part the loader refuses: a
// component that does not decode as what it is, a reference to one that is
// not there or of another kind, prose where the format wants text. Such a
// part costs the operations that use it, not the document. repair finds
// each in the document's own structure, before the loader runs, and
// removes it with everything that uses it; what it cannot see is the
// loader's to refuse, in the loader's words.

// componentDecoders decode one component of each kind as the loader does.
var componentDecoders = map[string]func([]byte) error{
	"schemas":         func(b []byte) error { return json.Unmarshal(b, new(openapi3.SchemaRef)) },
	"parameters":      func(b []byte) error { return json.Unmarshal(b, new(openapi3.ParameterRef)) },
	"responses":       func(b []byte) error { return json.Unmarshal(b, new(openapi3.ResponseRef)) },
	"requestBodies":   func(b []byte) error { return json.Unmarshal(b, new(openapi3.RequestBodyRef)) },
	"headers":         func(b []byte) error { return json.Unmarshal(b, new(openapi3.HeaderRef)) },
	"securitySchemes": func(b []byte) error { return json.Unmarshal(b, new(openapi3.SecuritySchemeRef)) },
	"examples":        func(b []byte) error { return json.Unmarshal(b, new(openapi3.ExampleRef)) },
	"links":           func(b []byte) error { return json.Unmarshal(b, new(openapi3.LinkRef)) },
	"callbacks":       func(b []byte) error { return json.Unmarshal(b, new(openapi3.CallbackRef)) },
}

// prose are the places whose value the format wants as text and nothing a
// tool needs: a value there that is not a string is dropped.
var prose = [][]string{
	{"info", "title"}, {"info", "summary"}, {"info", "description"},
	{"info", "contact", "name"}, {"info", "contact", "url"}, {"info", "contact", "email"},
	{"info", "license", "name"}, {"info", "license", "url"},
	{"externalDocs", "description"},
}

// repair removes from doc what the loader would refuse and repair can
// see, noting every operation it removes in skips. It reports whether it
// changed anything.
func repair(doc map[string]any, skips *[]skip) bool {
	changed := dropProse(doc)
	for range 64 {
		broken := brokenComponents(doc)
		round := false
		for _, b := range broken {
			if b.ops != nil {
				round = dropOperations(doc, b.path, b.ops, b.why, skips) > 0 || round
				continue
			}
			round = dropBroken(doc, b.ptr, b.why, skips) > 0 || round
		}
		if !round {
			// Nothing left it can remove (a reference in a place no
			// operation uses is the loader's to judge).
			return changed
		}
		changed = true
	}
	return changed
}

// dropProse removes the values of prose places that are not text: a tag's
// or the info's description given as a $ref to another file, as
// DigitalOcean's are.
func dropProse(doc map[string]any) bool {
	changed := false
	drop := func(m map[string]any, path []string) {
		for len(path) > 1 {
			m, _ = m[path[0]].(map[string]any)
			path = path[1:]
		}
		if v, ok := m[path[0]]; ok && m != nil {
			if _, text := v.(string); !text {
				delete(m, path[0])
				changed = true
			}
		}
	}
	for _, p := range prose {
		drop(doc, p)
	}
	tags, _ := doc["tags"].([]any)
	for _, t := range tags {
		if tag, ok := t.(map[string]any); ok {
			drop(tag, []string{"description"})
			drop(tag, []string{"externalDocs", "description"})
		}
	}
	return changed
}

// brokenPart is a component that costs what uses it, or (ops set) the
// operations of one path whose own reference is broken, and why.
type brokenPart struct {
	ptr, why string
	path     string   // with ops: the path item
	ops      []string // the methods of the operations that are broken
}

// brokenComponents lists the components that do not decode as their kind,
// and those referred to that are not there or are of another kind than
// their place wants, each once, in the document's order.
func brokenComponents(doc map[string]any) []brokenPart {
	var out []brokenPart
	seen := map[string]bool{}
	add := func(ptr, why string) {
		if !seen[ptr] {
			seen[ptr] = true
			out = append(out, brokenPart{ptr: ptr, why: why})
		}
	}
	comps, _ := doc["components"].(map[string]any)
	for _, kind := range sortedKeys(comps) {
		decode := componentDecoders[kind]
		group, _ := comps[kind].(map[string]any)
		if decode == nil {
			continue
		}
		for _, name := range sortedKeys(group) {
			b, err := json.Marshal(group[name])
			if err == nil {
				err = decode(b)
			}
			if err != nil {
				add("/components/"+kind+"/"+name, fmt.Sprintf("it is not a valid %s object: %s", singular(kind), cut(err.Error(), 160)))
			}
		}
	}
	walkRefs(doc, inDoc, "", owner{}, func(ref, want string, by owner) {
		kind, name, ok := localComponent(ref)
		if !ok {
			return
		}
		group, _ := comps[kind].(map[string]any)
		if _, there := group[name]; !there {
			add("/components/"+kind+"/"+name, "it is referred to and not there")
			return
		}
		if want != "" && want != kind {
			// The reference is what is broken, not the component it names
			// (which its other users may use rightly): it costs the
			// component or the operations it is in.
			why := fmt.Sprintf("it refers to %s/%s, a %s object, where a %s object belongs", kind, name, singular(kind), singular(want))
			switch {
			case by.component != "":
				add(by.component, why)
			case len(by.ops) > 0:
				key := by.path + " " + strings.Join(by.ops, ",") + " " + ref
				if !seen[key] {
					seen[key] = true
					out = append(out, brokenPart{why: fmt.Sprintf("%s/%s (a %s object, referred to where a %s object belongs)", kind, name, singular(kind), singular(want)), path: by.path, ops: by.ops})
				}
			}
		}
	})
	return out
}

// owner is what a reference is in: a component, or the operations of a
// path item (one, or all of them for the path item's own parameters).
type owner struct {
	component string // "/components/KIND/NAME"
	path      string
	ops       []string
}

// localComponent splits "#/components/KIND/NAME".
func localComponent(ref string) (kind, name string, ok bool) {
	rest, ok := strings.CutPrefix(ref, "#/components/")
	if !ok {
		return "", "", false
	}
	kind, name, ok = strings.Cut(rest, "/")
	if !ok || name == "" || componentDecoders[kind] == nil || strings.Contains(name, "/") {
		return "", "", false // a pointer into a component: its component is checked
	}
	name = strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
	return kind, name, true
}

func singular(kind string) string {
	switch kind {
	case "schemas":
		return "schema"
	case "parameters":
		return "parameter"
	case "responses":
		return "response"
	case "requestBodies":
		return "request body"
	case "headers":
		return "header"
	case "securitySchemes":
		return "security scheme"
	case "examples":
		return "example"
	case "links":
		return "link"
	case "callbacks":
		return "callback"
	}
	return kind
}

// place is where in the document's structure a value is.
type place int

const (
	inDoc place = iota
	inPaths
	inPathItem
	inOperation
	inParameters
	inParameter
	inRequestBody
	inResponses
	inResponse
	inHeaders
	inHeader
	inContent
	inMediaType
	inSchema
	inComponents
	inOther
	inData // example values: never references
)

// methods are a path item's operations.
var methods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

// componentPlace is the place of a component of kind, and what a $ref
// standing for one must name.
func componentPlace(kind string) (place, string) {
	switch kind {
	case "schemas":
		return inSchema, "schemas"
	case "parameters":
		return inParameter, "parameters"
	case "responses":
		return inResponse, "responses"
	case "requestBodies":
		return inRequestBody, "requestBodies"
	case "headers":
		return inHeader, "headers"
	}
	return inOther, ""
}

// child is the place of member key (or of an element, for an array) of a
// value at p, and the component kind a $ref there must name ("" for any).
func child(p place, key string) (place, string) {
	if strings.HasPrefix(key, "x-") {
		return inData, ""
	}
	switch p {
	case inDoc:
		switch key {
		case "paths":
			return inPaths, ""
		case "components":
			return inComponents, ""
		}
	case inPaths:
		return inPathItem, ""
	case inPathItem:
		if methods[key] {
			return inOperation, ""
		}
		if key == "parameters" {
			return inParameters, ""
		}
	case inOperation:
		switch key {
		case "parameters":
			return inParameters, ""
		case "requestBody":
			return inRequestBody, "requestBodies"
		case "responses":
			return inResponses, ""
		}
	case inParameters:
		return inParameter, "parameters"
	case inParameter, inHeader:
		switch key {
		case "schema":
			return inSchema, "schemas"
		case "content":
			return inContent, ""
		case "example", "examples":
			return inData, ""
		}
	case inRequestBody:
		if key == "content" {
			return inContent, ""
		}
	case inResponses:
		return inResponse, "responses"
	case inResponse:
		switch key {
		case "headers":
			return inHeaders, ""
		case "content":
			return inContent, ""
		}
	case inHeaders:
		return inHeader, "headers"
	case inContent:
		return inMediaType, ""
	case inMediaType:
		switch key {
		case "schema":
			return inSchema, "schemas"
		case "example", "examples":
			return inData, ""
		}
	case inSchema:
		switch key {
		case "example", "examples", "default", "enum", "const":
			return inData, ""
		}
		return inSchema, "" // a schema's parts: checked that they are there, not of which kind
	case inData:
		return inData, ""
	}
	return inOther, ""
}

// walkRefs calls fn with every $ref of v (at place p, where a $ref must
// name a component of kind want, in by), the kind its place wants and what
// it is in.
func walkRefs(v any, p place, want string, by owner, fn func(ref, want string, by owner)) {
	if p == inData {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x["$ref"].(string); ok {
			fn(r, want, by)
		}
		for _, k := range sortedKeys(x) {
			if k == "$ref" {
				continue
			}
			if p == inComponents {
				group, _ := x[k].(map[string]any)
				cp, cw := componentPlace(k)
				for _, name := range sortedKeys(group) {
					walkRefs(group[name], cp, cw, owner{component: "/components/" + k + "/" + name}, fn)
				}
				continue
			}
			if p == inPaths {
				item, _ := x[k].(map[string]any)
				var ops []string
				for _, m := range sortedKeys(item) {
					if methods[m] {
						ops = append(ops, m)
					}
				}
				walkRefs(x[k], inPathItem, "", owner{path: k, ops: ops}, fn)
				continue
			}
			if p == inPathItem && methods[k] {
				walkRefs(x[k], inOperation, "", owner{path: by.path, ops: []string{k}}, fn)
				continue
			}
			if p == inSchema && isNameMap(k) {
				// A map of names to schemas (properties, $defs…): each
				// value a schema.
				group, _ := x[k].(map[string]any)
				for _, name := range sortedKeys(group) {
					walkRefs(group[name], inSchema, "", by, fn)
				}
				continue
			}
			cp, cw := child(p, k)
			walkRefs(x[k], cp, cw, by, fn)
		}
	case []any:
		for _, e := range x {
			switch p {
			case inParameters:
				walkRefs(e, inParameter, "parameters", by, fn)
			default:
				walkRefs(e, p, "", by, fn)
			}
		}
	}
}

// isNameMap says a schema keyword's value maps names to schemas.
func isNameMap(k string) bool {
	switch k {
	case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
		return true
	}
	return false
}

// dropOperations removes the operations of methods at path, noting each
// in skips with why (the reference in it that is broken). It returns how
// many it removed.
func dropOperations(doc map[string]any, path string, methods []string, why string, skips *[]skip) int {
	paths, _ := doc["paths"].(map[string]any)
	item, _ := paths[path].(map[string]any)
	n := 0
	for _, m := range methods {
		if _, ok := item[m].(map[string]any); ok {
			skipOperation(item, path, m, why, skips)
			n++
		}
	}
	return n
}

// skipOperation removes the operation method of the path item at path,
// noting it in skips by its operationId (else "METHOD path") with why.
func skipOperation(item map[string]any, path, method, why string, skips *[]skip) {
	op, _ := item[method].(map[string]any)
	id, _ := op["operationId"].(string)
	if id == "" {
		id = strings.ToUpper(method) + " " + path
	}
	*skips = append(*skips, skip{id, why})
	delete(item, method)
}

// skip is an operation left out before the import proper.
type skip struct{ name, why string }

func removeComponent(doc map[string]any, ptr string) bool {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	comps, _ := doc["components"].(map[string]any)
	group, _ := comps[parts[1]].(map[string]any)
	if _, ok := group[parts[2]]; !ok {
		return false
	}
	delete(group, parts[2])
	return true
}

// dropBroken removes the component at ptr, every component that refers to
// it (transitively), and every operation that does, noting each operation
// in skips. It returns how many things it removed.
func dropBroken(doc map[string]any, ptr, why string, skips *[]skip) int {
	removed := 0
	bad := []string{ptr}
	if removeComponent(doc, ptr) {
		removed++
	}
	refersTo := func(v any, targets []string) bool {
		b, _ := json.Marshal(v)
		for _, t := range targets {
			if bytes.Contains(b, []byte(`"#`+t+`"`)) {
				return true
			}
		}
		return false
	}
	for changed := true; changed; {
		changed = false
		comps, _ := doc["components"].(map[string]any)
		for kind, g := range comps {
			group, _ := g.(map[string]any)
			for name, c := range group {
				if refersTo(c, bad) {
					delete(group, name)
					bad = append(bad, "/components/"+kind+"/"+name)
					removed++
					changed = true
				}
			}
		}
	}
	name := strings.TrimPrefix(bad[0], "/components/")
	paths, _ := doc["paths"].(map[string]any)
	for p, it := range paths {
		item, _ := it.(map[string]any)
		shared := refersTo(item["parameters"], bad)
		for m, o := range item {
			if methods[m] && (shared || refersTo(o, bad)) {
				skipOperation(item, p, m, name+" ("+why+")", skips)
				removed++
			}
		}
	}
	return removed
}
