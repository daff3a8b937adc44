package synth

// The meta-schema check of a batch's schemas, each subschema once. The
// tools one API imports repeat their subschemas (Cloudflare's answer
// envelope, its error list, its paging block sit in nearly every tool),
// and jsonschema checks each schema against the Draft 2020-12 meta-schema
// whole, every time: about two thirds of compiling an import's schemas. A
// subschema the meta-schema accepted once is accepted anywhere, since the
// 2020-12 meta-schema checks a subschema the same wherever it sits
// (through "$dynamicRef": "#meta", the same at every schema place), as
// long as no "$id", "$schema" or anchor below the root changes the dialect
// or the scope, which is why a schema holding one anywhere is not checked
// here; nor is one with a $ref anywhere (its data included: jsonschema
// compiles what a $ref names, and "dependencies") that is not a fragment
// of the document itself, which would resolve against the json-schema.org
// address below where against the ordinary one it does not.
//
// So a schema is checked in two passes, both jsonschema's own:
//  1. its skeleton — the schema with each subschema already accepted
//     replaced by true — is checked against the Draft 2020-12 meta-schema,
//     compiled as jsonschema compiles its own (draft.go's init);
//  2. the schema itself is compiled at a json-schema.org address, which
//     jsonschema does not check against the meta-schema again (it takes
//     that host's documents for meta-schemas: roots.addRoot).
//
// If either pass fails, or the schema is not of the shape this reads, the
// caller compiles it the ordinary way: every refusal, and its words, come
// from the ordinary compile. TestMetaSeenAgrees and FuzzMetaSeenAgrees
// hold it to never vouching for a schema the ordinary compile refuses,
// and to vouching for the plain ones it accepts.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// metaSeen is the subschemas the meta-schema accepted, by a digest of
// their content. Safe for concurrent use.
type metaSeen struct {
	mu sync.Mutex
	ok map[digest]struct{}
}

type digest [16]byte

// uncheckedBase is an address under which jsonschema compiles a document
// without checking it against the meta-schema.
const uncheckedBase = "https://json-schema.org/httptools-checked/"

// The places of a 2020-12 schema where the meta-schema expects a schema,
// whatever the schema around it: one schema, an object of them, an array
// of them.
var (
	metaPlaceOne = map[string]bool{
		"items": true, "contains": true, "additionalProperties": true, "propertyNames": true,
		"if": true, "then": true, "else": true, "not": true,
		"unevaluatedItems": true, "unevaluatedProperties": true, "contentSchema": true,
	}
	metaPlaceMap = map[string]bool{
		"properties": true, "patternProperties": true, "dependentSchemas": true, "$defs": true, "definitions": true,
	}
	metaPlaceList = map[string]bool{
		"prefixItems": true, "allOf": true, "anyOf": true, "oneOf": true,
	}
	// scopeKeys change the dialect, the base address or the anchors a
	// subschema is read with.
	scopeKeys = map[string]bool{
		"$id": true, "$schema": true, "$anchor": true, "$dynamicAnchor": true, "$dynamicRef": true,
		"$recursiveAnchor": true, "$recursiveRef": true, "$vocabulary": true,
	}
)

// compile compiles doc, a pack tool's schema decoded, when it can vouch for
// it: nil when it cannot (the caller then compiles it the ordinary way).
func (m *metaSeen) compile(doc map[string]any, path string) *jsonschema.Schema {
	w := walk{seen: m}
	_, skel, _, ok := w.value(doc, place{schema: true, root: true}, nil)
	if !ok || draft2020Meta().Validate(skel) != nil {
		return nil
	}
	c := newCompiler()
	url := uncheckedBase + path + ".json"
	if c.AddResource(url, doc) != nil {
		return nil
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil
	}
	m.mu.Lock()
	for _, d := range w.digests {
		m.ok[d] = struct{}{}
	}
	m.mu.Unlock()
	return sch
}

func (m *metaSeen) accepted(d digest) bool {
	m.mu.Lock()
	_, ok := m.ok[d]
	m.mu.Unlock()
	return ok
}

// draft2020Meta is the Draft 2020-12 meta-schema, compiled as jsonschema
// compiles the one it checks schemas against: formats asserted, its
// regexp engine the default one, as newCompiler's is.
var draft2020Meta = sync.OnceValue(func() *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	return c.MustCompile(jsonschema.Draft2020.String())
})

// walk digests a schema's subschemas and builds its skeleton.
type walk struct {
	seen    *metaSeen
	digests []digest // of every subschema, the root's last
}

// place is where a value sits: at a schema place or in data, at the root.
type place struct{ schema, root bool }

// value appends v's piece of its parent's digest input to dst, and returns
// v's skeleton and whether it differs from v; false when v is not of the
// shape compile reads: a schema place holding neither an object nor a
// boolean, a scope keyword anywhere (but the root's 2020-12 $schema), a
// $ref anywhere that is not a fragment of the document itself.
func (w *walk) value(v any, at place, dst []byte) (out []byte, skel any, changed, ok bool) {
	switch v := v.(type) {
	case map[string]any:
		if at.schema {
			return w.schema(v, at.root, dst)
		}
		own := []byte{'o'}
		for _, k := range sorted(v) {
			// Data too: jsonschema compiles some of it as schemas (what
			// a $ref names, "dependencies"), where an address would
			// resolve against the unchecked base as it does not against
			// the ordinary one.
			if !plainKeyword(k, v[k], false) {
				return nil, nil, false, false
			}
			own = appendString(own, k)
			if own, _, _, ok = w.value(v[k], place{}, own); !ok {
				return nil, nil, false, false
			}
		}
		return appendDigest(dst, own), v, false, true
	case []any:
		if at.schema {
			return nil, nil, false, false
		}
		own := []byte{'a'}
		for _, x := range v {
			if own, _, _, ok = w.value(x, place{}, own); !ok {
				return nil, nil, false, false
			}
		}
		return appendDigest(dst, own), v, false, true
	case string:
		return appendString(append(dst, 's'), v), v, false, !at.schema
	case json.Number:
		return appendString(append(dst, 'n'), string(v)), v, false, !at.schema
	case bool:
		if v {
			return append(dst, 'T'), v, false, true
		}
		return append(dst, 'F'), v, false, true
	case nil:
		return append(dst, 'z'), v, false, !at.schema
	}
	return nil, nil, false, false
}

// schema is value for an object at a schema place.
func (w *walk) schema(v map[string]any, root bool, dst []byte) (out []byte, skel any, changed, ok bool) {
	own := []byte{'S'}
	var parts map[string]any // the members whose skeleton differs
	for _, k := range sorted(v) {
		x := v[k]
		if !plainKeyword(k, x, root) {
			return nil, nil, false, false
		}
		own = appendString(own, k)
		var part any
		var differs bool
		switch {
		case metaPlaceOne[k]:
			own, part, differs, ok = w.value(x, place{schema: true}, own)
		case metaPlaceMap[k]:
			own, part, differs, ok = w.places(x, false, own)
		case metaPlaceList[k]:
			own, part, differs, ok = w.places(x, true, own)
		default:
			own, _, _, ok = w.value(x, place{}, own)
		}
		if !ok {
			return nil, nil, false, false
		}
		if differs {
			if parts == nil {
				parts = map[string]any{}
			}
			parts[k] = part
		}
	}
	d := digestOf(own)
	w.digests = append(w.digests, d)
	dst = append(append(dst, 'h'), d[:]...)
	switch {
	case w.seen.accepted(d):
		return dst, true, true, true
	case parts == nil:
		return dst, v, false, true
	}
	s := make(map[string]any, len(v))
	for k, x := range v {
		s[k] = x
	}
	maps.Copy(s, parts)
	return dst, s, true, true
}

// plainKeyword says member k of an object holds no scope keyword (but
// the root's 2020-12 $schema) and no $ref that is not a fragment of the
// document itself.
func plainKeyword(k string, x any, root bool) bool {
	switch {
	case k == "$schema" && root:
		s, ok := x.(string)
		return ok && dialectKey(s) == packDialect
	case scopeKeys[k]:
		return false
	case k == "$ref":
		s, ok := x.(string)
		return ok && strings.HasPrefix(s, "#")
	}
	return true
}

// places is value for an object (list false) or an array (list true) of
// schemas; another value there is data, which the meta-schema refuses.
func (w *walk) places(x any, list bool, dst []byte) (out []byte, skel any, changed, ok bool) {
	own := []byte{'m'}
	switch x := x.(type) {
	case map[string]any:
		if list {
			return w.value(x, place{}, dst)
		}
		var parts map[string]any
		for _, k := range sorted(x) {
			own = appendString(own, k)
			var part any
			var differs bool
			if own, part, differs, ok = w.value(x[k], place{schema: true}, own); !ok {
				return nil, nil, false, false
			}
			if differs {
				if parts == nil {
					parts = make(map[string]any, len(x))
				}
				parts[k] = part
			}
		}
		if parts == nil {
			return appendDigest(dst, own), x, false, true
		}
		s := maps.Clone(x)
		maps.Copy(s, parts)
		return appendDigest(dst, own), s, true, true
	case []any:
		if !list {
			return w.value(x, place{}, dst)
		}
		var s []any
		for i, e := range x {
			var part any
			var differs bool
			if own, part, differs, ok = w.value(e, place{schema: true}, own); !ok {
				return nil, nil, false, false
			}
			if differs {
				if s == nil {
					s = slices.Clone(x)
				}
				s[i] = part
			}
		}
		if s == nil {
			return appendDigest(dst, own), x, false, true
		}
		return appendDigest(dst, own), s, true, true
	}
	return w.value(x, place{}, dst)
}

// sorted returns m's keys in order: a digest must not depend on the order
// a map is ranged in.
func sorted(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

func appendDigest(dst, own []byte) []byte {
	d := digestOf(own)
	return append(append(dst, 'h'), d[:]...)
}

func digestOf(own []byte) digest {
	sum := sha256.Sum256(own)
	return digest(sum[:16])
}
