package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"go.yaml.in/yaml/v4"
)

// Decoding YAML (or JSON) the way descriptions are written.

// quotedThenComment is a quoted scalar with a comment right after it
// ('text'# note): YAML wants a space before the #, which the parsers
// most descriptions are written with do not.
var quotedThenComment = regexp.MustCompile(`('(?:[^'\n]|'')*'|"(?:[^"\\\n]|\\.)*")#`)

// spaceBeforeComments puts the space YAML wants between a quoted scalar
// and a comment right after it, in a file the YAML parser refuses (and
// only then: in one it takes, the same bytes may be two quoted scalars
// of a flow mapping, '#/a'}, {$ref: '#/b').
func spaceBeforeComments(data []byte) []byte {
	if !bytes.Contains(data, []byte("'#")) && !bytes.Contains(data, []byte(`"#`)) {
		return data
	}
	var v any
	if yaml.Unmarshal(data, &v) == nil {
		return data
	}
	fixed := quotedThenComment.ReplaceAll(data, []byte("$1 #"))
	if yaml.Unmarshal(fixed, &v) != nil {
		return data // not that: the loader reports what is wrong
	}
	return fixed
}

// decodeYAML decodes a document, JSON as JSON (a YAML parser refuses some
// of what JSON allows: a \u escape of a surrogate pair, a tab in a
// string), anything else as YAML, into JSON's shapes: a mapping whose
// keys are not all strings (Swagger's response codes written as numbers,
// 200:) becomes a map[string]any too, its keys in their YAML text.
func decodeYAML(data []byte) (any, error) {
	var v any
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(data, &v); err == nil {
			return v, nil
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	// A timestamp stays the text it was written as (2019-09-03T16:34:46.000+00:00),
	// not a time written again in another form: the loader reads it so.
	keepTimestamps(&doc, 0)
	if err := doc.Decode(&v); err != nil {
		return nil, err
	}
	return jsonShape(v), nil
}

// keepTimestamps tags n's timestamps, at any depth, as strings.
func keepTimestamps(n *yaml.Node, depth int) {
	if n == nil || depth > 512 {
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!timestamp" {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		keepTimestamps(c, depth+1)
	}
}

// jsonShape makes YAML's mappings JSON's objects, at any depth: a
// map[any]any (keys that are not all strings) becomes a map[string]any
// keyed by each key's text.
func jsonShape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonShape(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonShape(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonShape(e)
		}
		return x
	}
	return v
}
