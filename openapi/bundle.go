package openapi

import (
	"fmt"
	"strings"
)

// Bundling: a document split over files made one, before the loader sees
// it, so that each file is read and decoded once, by the importer's own
// decoder. The loader's own way reads every file through its YAML parser
// again for each place that names it, which cost a 2,900-file description
// more than half of its import.
//
// A reference to another file, in a place the format has components for
// (a schema, a parameter, a response, a request body, a header, an example,
// a link, a callback, a security scheme), becomes one component of the
// document, named after the reference, that every reference to the same
// object names. What has no component (a path item, an operation given as
// a reference, a map of properties given as one) is read in where it is
// named. References are followed only where the format reads them: an
// example's value or an extension holding "$ref" is data, left as it is.

// kind is what a place of the document holds.
type kind int

const (
	kNone kind = iota // data: not looked into
	kPathItem
	kOperation
	kParameter
	kRequestBody
	kResponse
	kMediaType
	kEncoding
	kHeader
	kSchema
	kExample
	kLink
	kCallback
	kSecurityScheme
)

// section is where a kind's components live; "" for a kind read in where
// it is named.
var section = map[kind]string{
	kParameter:      "parameters",
	kRequestBody:    "requestBodies",
	kResponse:       "responses",
	kHeader:         "headers",
	kSchema:         "schemas",
	kExample:        "examples",
	kLink:           "links",
	kCallback:       "callbacks",
	kSecurityScheme: "securitySchemes",
}

// maxInline bounds a chain of objects read in where they are named (a map
// of properties whose file names itself again); maxCopies all of them, so
// that a file naming itself twice on each level is not 2^32 copies.
const (
	maxInline = 32
	maxCopies = 1 << 16
)

type bundler struct {
	root   string                            // the document's file, slash-separated and absolute
	read   func(file string) ([]byte, error) // reads a file by that path, within the policy
	files  map[string]any                    // decoded files by path
	done   map[string]string                 // "file#pointer" → the component reference made for it
	names  map[string]bool                   // "section/name" taken
	comps  map[string]map[string]any         // the document's components by section
	doc    map[string]any                    // the document
	stack  map[string]bool                   // objects being read in where named, for cycles
	alias  map[string]string                 // a component reference → the name it was made under, where a suffix told it from another
	copies int                               // objects read in where named, so far
}

// bundle rewrites doc, the document at file root (absolute, slash-
// separated), so that it refers to no other file. Where two objects would
// be components of one name (urn.yml of two folders), the second takes a
// suffix and alias maps its reference to the name without it, which
// definitions are named after, as they were before bundling.
func bundle(doc map[string]any, root string, read func(file string) ([]byte, error), alias map[string]string) error {
	b := &bundler{root: root, read: read, files: map[string]any{root: doc}, done: map[string]string{},
		names: map[string]bool{}, comps: map[string]map[string]any{}, doc: doc, stack: map[string]bool{}, alias: alias}
	comps, _ := doc["components"].(map[string]any)
	for _, sec := range section {
		m, _ := comps[sec].(map[string]any)
		for name := range m {
			b.names[sec+"/"+name] = true
		}
	}
	return b.document(doc)
}

func (b *bundler) document(doc map[string]any) error {
	for _, key := range []string{"paths", "webhooks"} {
		if err := b.each(doc[key], kPathItem, b.root, 0, key); err != nil {
			return err
		}
	}
	comps, _ := doc["components"].(map[string]any)
	for _, sec := range sortedKeys(comps) {
		k := kNone
		for kk, s := range section {
			if s == sec {
				k = kk
			}
		}
		if sec == "pathItems" {
			k = kPathItem
		}
		if k == kNone {
			continue
		}
		// Walk a copy of the names: hoisting adds to the section.
		if err := b.each(comps[sec], k, b.root, 0, "components/"+sec); err != nil {
			return err
		}
	}
	return nil
}

// each walks every value of the map m as a k. A map given as a reference
// (Algolia's "responses": {"$ref": "#/Responses"}, DigitalOcean's
// "properties": {"$ref": "x.yml"}), which bundlers accept and the loader
// cannot (a map of responses is no response), is read in first, the keys
// beside the reference winning.
func (b *bundler) each(m any, k kind, file string, depth int, where string) error {
	mm, _ := m.(map[string]any)
	if ref, ok := mm["$ref"].(string); ok {
		if depth >= maxInline {
			return fmt.Errorf("%s: a map given as a $ref names another more than %d files deep", where, maxInline)
		}
		target, ptr, _ := b.resolve(file, ref)
		obj, tfile, err := b.object(target, ptr, ref)
		if err != nil {
			return err
		}
		if err := b.copied(ref); err != nil {
			return err
		}
		obj = deepCopy(obj).(map[string]any)
		if err := b.each(obj, k, tfile, depth+1, ref); err != nil {
			return err
		}
		delete(mm, "$ref")
		if err := b.each(mm, k, file, depth, where); err != nil {
			return err
		}
		for key, v := range obj {
			if _, beside := mm[key]; !beside {
				mm[key] = v
			}
		}
		return nil
	}
	for _, key := range sortedKeys(mm) {
		v, err := b.walk(mm[key], k, file, depth, where+"/"+key)
		if err != nil {
			return err
		}
		mm[key] = v
	}
	return nil
}

// list walks every item of the list l as a k.
func (b *bundler) list(l any, k kind, file string, depth int, where string) error {
	ll, _ := l.([]any)
	for i, e := range ll {
		v, err := b.walk(e, k, file, depth, fmt.Sprintf("%s/%d", where, i))
		if err != nil {
			return err
		}
		ll[i] = v
	}
	return nil
}

// walk rewrites v, a k written in file, and returns what stands in its
// place: a reference to another file made a reference to a component, or
// the object read in.
func (b *bundler) walk(v any, k kind, file string, depth int, where string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok || k == kNone {
		return v, nil
	}
	if ref, ok := m["$ref"].(string); ok {
		target, ptr, external := b.resolve(file, ref)
		if !external {
			m["$ref"] = "#" + ptr // the same place, named from the document
			return m, nil
		}
		if sec := section[k]; sec != "" {
			to, err := b.hoist(k, target, ptr, ref)
			if err != nil {
				return nil, err
			}
			m["$ref"] = to // the siblings (a 3.1 description) stay
			return m, nil
		}
		obj, err := b.inline(k, target, ptr, ref, depth)
		if err != nil {
			return nil, err
		}
		if len(m) > 1 {
			// Keys beside the reference (Algolia's operationId and
			// requestBody beside an operation's $ref) win over the
			// object's.
			delete(m, "$ref")
			if err := b.members(m, k, file, depth, where); err != nil {
				return nil, err
			}
			for key, v := range m {
				obj[key] = v
			}
		}
		return obj, nil
	}
	return m, b.members(m, k, file, depth, where)
}

// members walks the places inside m, a k written in file, that hold
// something the format reads.
func (b *bundler) members(m map[string]any, k kind, file string, depth int, where string) error {
	type place struct {
		key  string
		kind kind
		many int // 0 one, 1 a map of them, 2 a list of them
	}
	var places []place
	switch k {
	case kPathItem:
		places = []place{{"parameters", kParameter, 2}}
		for _, meth := range []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"} {
			places = append(places, place{meth, kOperation, 0})
		}
	case kOperation:
		places = []place{{"parameters", kParameter, 2}, {"requestBody", kRequestBody, 0}, {"responses", kResponse, 1}, {"callbacks", kCallback, 1}}
	case kCallback:
		return b.each(m, kPathItem, file, depth, where)
	case kParameter, kHeader:
		places = []place{{"schema", kSchema, 0}, {"content", kMediaType, 1}, {"examples", kExample, 1}}
	case kRequestBody:
		places = []place{{"content", kMediaType, 1}}
	case kMediaType:
		places = []place{{"schema", kSchema, 0}, {"examples", kExample, 1}, {"encoding", kEncoding, 1}}
	case kEncoding:
		places = []place{{"headers", kHeader, 1}}
	case kResponse:
		places = []place{{"headers", kHeader, 1}, {"content", kMediaType, 1}, {"links", kLink, 1}}
	case kSchema:
		return b.schema(m, file, depth, where)
	}
	for _, p := range places {
		var err error
		switch p.many {
		case 0:
			var v any
			if v, err = b.walk(m[p.key], p.kind, file, depth, where+"/"+p.key); err == nil && m[p.key] != nil {
				m[p.key] = v
			}
		case 1:
			err = b.each(m[p.key], p.kind, file, depth, where+"/"+p.key)
		case 2:
			err = b.list(m[p.key], p.kind, file, depth, where+"/"+p.key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// schemaMaps are a schema's keywords that hold a map of schemas; schemaOne
// one schema; schemaLists a list of them.
var (
	schemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaOne   = []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems", "contentSchema"}
	schemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

func (b *bundler) schema(m map[string]any, file string, depth int, where string) error {
	for _, key := range schemaMaps {
		mm, ok := m[key].(map[string]any)
		if !ok {
			continue
		}
		if err := b.each(mm, kSchema, file, depth, where+"/"+key); err != nil {
			return err
		}
	}
	for _, key := range schemaOne {
		if v, ok := m[key]; ok {
			if l, isList := v.([]any); isList && key == "items" {
				if err := b.list(l, kSchema, file, depth, where+"/items"); err != nil {
					return err
				}
				continue
			}
			w, err := b.walk(v, kSchema, file, depth, where+"/"+key)
			if err != nil {
				return err
			}
			m[key] = w
		}
	}
	for _, key := range schemaLists {
		if err := b.list(m[key], kSchema, file, depth, where+"/"+key); err != nil {
			return err
		}
	}
	// A discriminator's mapping values are references too, where they
	// are not plain schema names.
	if d, ok := m["discriminator"].(map[string]any); ok {
		mp, _ := d["mapping"].(map[string]any)
		for name, t := range mp {
			r, ok := t.(string)
			if !ok || !isRefText(r) {
				continue
			}
			target, ptr, external := b.resolve(file, r)
			if !external {
				mp[name] = "#" + ptr
				continue
			}
			to, err := b.hoist(kSchema, target, ptr, r)
			if err != nil {
				return err
			}
			mp[name] = to
		}
	}
	return nil
}

// isRefText tells a discriminator mapping's reference from a schema's
// name.
func isRefText(r string) bool {
	return strings.Contains(r, "#") || strings.Contains(r, "/") || strings.HasSuffix(r, ".yml") || strings.HasSuffix(r, ".yaml") || strings.HasSuffix(r, ".json")
}
