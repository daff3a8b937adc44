package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	pathpkg "path"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"
)

// Reading a document: OpenAPI 3.x as it is, Swagger 2.0 converted, YAML
// or JSON (yaml.go), and the other files it refers to when allowed
// (refs.go).

// load parses the document: OpenAPI 3.x as it is, Swagger 2.0 converted.
// External references are refused unless allowed, and then read from
// files below the document's folder only. aliases, when not nil, is given
// the names of the components bundling had to tell apart (bundle).
func load(src []byte, opts Options, skips *[]skip, aliases map[string]string) (*openapi3.T, error) {
	var head struct {
		OpenAPI string `yaml:"openapi" json:"openapi"`
		Swagger string `yaml:"swagger" json:"swagger"`
	}
	if t := bytes.TrimLeft(src, " \t\r\n\ufeff"); len(t) == 0 || t[0] != '{' || json.Unmarshal(src, &head) != nil {
		if err := yaml.Unmarshal(src, &head); err != nil {
			return nil, fmt.Errorf("not an OpenAPI document: %v", err)
		}
	}
	refs, err := newRefReader(opts)
	if err != nil {
		return nil, err
	}
	switch {
	case head.Swagger != "":
		if !strings.HasPrefix(head.Swagger, "2.") {
			return nil, fmt.Errorf("swagger %q: Swagger 2.0, OpenAPI 3.0 and 3.1 are supported", head.Swagger)
		}
		return loadSwagger2(src, refs, skips)
	case strings.HasPrefix(head.OpenAPI, "3.0"), strings.HasPrefix(head.OpenAPI, "3.1"):
		return loadOpenAPI3(src, refs, skips, aliases)
	case head.OpenAPI != "":
		return nil, fmt.Errorf("openapi %q: OpenAPI 3.0 and 3.1 and Swagger 2.0 are supported", head.OpenAPI)
	}
	return nil, errors.New("not an OpenAPI document: it has neither an openapi nor a swagger field (OpenAPI 3.0, 3.1 and Swagger 2.0 are supported)")
}

// loadSwagger2 reads a Swagger 2.0 document, repaired where kin-openapi's
// converter would trip, and converts it to OpenAPI 3.
func loadSwagger2(src []byte, refs *refReader, skips *[]skip) (*openapi3.T, error) {
	generic, err := decodeYAML(src)
	if err != nil {
		return nil, fmt.Errorf("not a Swagger document: %v", err)
	}
	markBinaryAnswers(generic)
	if g, ok := generic.(map[string]any); ok {
		csvArrays(g)
		repair2(g, skips)
	}
	js, err := json.Marshal(generic)
	if err != nil {
		return nil, fmt.Errorf("not a Swagger document: %v", err)
	}
	var doc2 openapi2.T
	if err := json.Unmarshal(js, &doc2); err != nil {
		return nil, fmt.Errorf("not a Swagger 2.0 document: %v", err)
	}
	doc, err := openapi2conv.ToV3WithLoader(&doc2, refs.loader(), refs.location)
	if err != nil {
		return nil, fmt.Errorf("converting Swagger 2.0 to OpenAPI 3: %v", err)
	}
	return doc, nil
}

// loadOpenAPI3 reads an OpenAPI 3.0 or 3.1 document, the other files it
// names brought into it.
func loadOpenAPI3(src []byte, refs *refReader, skips *[]skip, aliases map[string]string) (*openapi3.T, error) {
	v, err := decodeYAML(src)
	if err != nil {
		return nil, fmt.Errorf("not an OpenAPI document: %v", err)
	}
	generic, _ := v.(map[string]any)
	if generic == nil {
		return nil, errors.New("not an OpenAPI document: the document is not an object")
	}
	if !refs.opts.AllowExternalRefs {
		// An operation that is a $ref to a file would load as an empty
		// operation: refused with the way out.
		if where, ref := operationRef(generic); where != "" {
			return nil, fmt.Errorf("not an OpenAPI document: %s is a $ref to %s: the document refers to other files: pass --allow-external-refs to read them from its folder", where, ref)
		}
	}
	// The other files the document names are brought into it, each
	// read and decoded once (bundle.go), and the whole is handed to
	// the loader as JSON: its own way decodes every file, the
	// document too, with a YAML parser that keeps each node's place.
	if err := bundle(generic, refs.rootFile(), refs.readBundled, aliases); err != nil {
		return nil, fmt.Errorf("not an OpenAPI document: %v", err)
	}
	doc, err := refs.resolve(generic)
	if err == nil {
		return doc, nil
	}
	// A broken part (a component that does not decode, a reference to
	// one that is not there or of another kind, prose that is not
	// text) costs the operations that use it, not the document: found
	// in the document's structure (broken.go), never in the loader's
	// words, and the document loaded again without it.
	if !repair(generic, skips) {
		return nil, fmt.Errorf("not an OpenAPI document: %v", err)
	}
	if doc, err = refs.resolve(generic); err != nil {
		return nil, fmt.Errorf("not an OpenAPI document: %v", err)
	}
	return doc, nil
}

// markBinaryAnswers gives a Swagger 2.0 answer without a schema, of an
// operation that produces no JSON or text (Docker's export: a tarball),
// the schema of binary data, so that the converted operation names its
// media types and imports as a tool answering a file rather than as a
// JSON tool that can only fail.
func markBinaryAnswers(doc any) {
	d, _ := doc.(map[string]any)
	global, _ := d["produces"].([]any)
	paths, _ := d["paths"].(map[string]any)
	for _, it := range paths {
		item, _ := it.(map[string]any)
		for _, m := range []string{"get", "put", "post", "delete", "options", "head", "patch"} {
			op, _ := item[m].(map[string]any)
			if op == nil {
				continue
			}
			produces := global
			if p, ok := op["produces"].([]any); ok {
				produces = p
			}
			if len(produces) == 0 {
				continue
			}
			textual := false
			for _, p := range produces {
				t, _ := p.(string)
				if strings.Contains(t, "json") || strings.HasPrefix(t, "text/") || strings.Contains(t, "xml") || t == "*/*" {
					textual = true
				}
			}
			if textual {
				continue
			}
			resps, _ := op["responses"].(map[string]any)
			for code, r := range resps {
				resp, _ := r.(map[string]any)
				if _, has := resp["schema"]; resp != nil && !has && strings.HasPrefix(code, "2") && code != "204" {
					resp["schema"] = map[string]any{"type": "string", "format": "binary"}
				}
			}
		}
	}
}

// operationRef finds an operation of doc that is only a $ref to another
// file: its method and path, and the reference.
func operationRef(doc map[string]any) (where, ref string) {
	paths, _ := doc["paths"].(map[string]any)
	for _, key := range sortedKeys(paths) {
		item, _ := paths[key].(map[string]any)
		for _, m := range []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"} {
			op, _ := item[m].(map[string]any)
			if r, _ := op["$ref"].(string); r != "" && !strings.HasPrefix(r, "#") {
				return strings.ToUpper(m) + " " + key, r
			}
		}
	}
	return "", ""
}

// inlineMapRefs reads in the external $refs that stand for a whole map of
// schemas ("properties": {"$ref": "x.yml"}), which a bundler accepts and
// the format's loader cannot: a map of schemas is no schema.
func inlineMapRefs(v any, read func(rel string) ([]byte, error), depth int) error {
	if depth > 32 {
		return errors.New("properties refer to properties more than 32 files deep")
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if ref, ok := e.(map[string]any); ok && k == "properties" && len(ref) == 1 {
				if r, ok := ref["$ref"].(string); ok && !strings.HasPrefix(r, "#") {
					props, err := readRef(read, r, "a map of properties")
					if err != nil {
						return err
					}
					x[k] = props
					// What the file brings counts one hop deeper.
					if err := inlineMapRefs(props, read, depth+1); err != nil {
						return err
					}
					continue
				}
			}
			if err := inlineMapRefs(e, read, depth); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := inlineMapRefs(e, read, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// readRef reads the object an external $ref ("file.yml#/pointer") names,
// its own $refs rebased to be relative to the folder read reads from; want
// words what it must be.
func readRef(read func(rel string) ([]byte, error), ref, want string) (map[string]any, error) {
	file, frag, _ := strings.Cut(ref, "#")
	src, err := read(file)
	if err != nil {
		return nil, err
	}
	v, err := decodeYAML(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if frag != "" {
		v = pointerGet(v, frag)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not %s", ref, want)
	}
	rebase(obj, file)
	return obj, nil
}

// rebase rewrites the $refs of v, written relative to file, to be relative
// to the document: "models/x.yml" in resources/vpcs/get.yml becomes
// "resources/vpcs/models/x.yml", and "#/a" becomes "resources/vpcs/get.yml#/a".
func rebase(v any, file string) {
	move := func(r string) string {
		target, frag, hasFrag := strings.Cut(r, "#")
		if strings.Contains(target, "://") {
			return r
		}
		if target == "" {
			target = file
		} else {
			target = pathpkg.Join(pathpkg.Dir(file), target)
		}
		if hasFrag {
			target += "#" + frag
		}
		return target
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if r, ok := e.(string); ok && k == "$ref" {
				x[k] = move(r)
				continue
			}
			if d, ok := e.(map[string]any); ok && k == "discriminator" {
				// A discriminator's mapping values are references too.
				if mp, ok := d["mapping"].(map[string]any); ok {
					for name, t := range mp {
						if r, ok := t.(string); ok && (strings.Contains(r, "#") || strings.HasSuffix(r, ".yml") || strings.HasSuffix(r, ".yaml") || strings.HasSuffix(r, ".json")) {
							mp[name] = move(r)
						}
					}
				}
				continue
			}
			rebase(e, file)
		}
	case []any:
		for _, e := range x {
			rebase(e, file)
		}
	}
}

// pointerGet follows a JSON pointer into v; nil when it leads nowhere.
func pointerGet(v any, ptr string) any {
	for _, p := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if p == "" {
			continue
		}
		p = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}
