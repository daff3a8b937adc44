package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"
)

// Reading a document: OpenAPI 3.x as it is, Swagger 2.0 converted, YAML
// or JSON, and the other files it refers to when allowed.

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
	loader := openapi3.NewLoader()
	// Every external reference reaches readBelow, which refuses it in our
	// words (with the flag that allows it) unless it is allowed: the
	// loader's own refusal is never what the user reads.
	loader.IsExternalRefsAllowed = true
	var location *url.URL
	root := ""
	if opts.Path != "" {
		abs, err := filepath.Abs(opts.Path)
		if err != nil {
			return nil, err
		}
		location = &url.URL{Path: filepath.ToSlash(abs)}
		root = filepath.Dir(abs)
	}
	allowed := root // where referenced files may be read from
	if opts.RefsRoot != "" {
		abs, err := filepath.Abs(opts.RefsRoot)
		if err != nil {
			return nil, err
		}
		allowed = abs
	}
	// Each file is read once: a shared file that many references name
	// (hundreds of times in a big multi-file description) is not read,
	// parsed and rewritten again for each.
	cache := map[string][]byte{}
	// Every read of another document passes here: refused unless allowed,
	// and then only files below the document's folder.
	// readBelow reads a file below the document's folder, and nothing else.
	readBelow := func(u *url.URL) ([]byte, error) {
		if !opts.AllowExternalRefs {
			return nil, fmt.Errorf("the document refers to %s: pass --allow-external-refs to read files next to it", u)
		}
		if root == "" {
			return nil, errors.New("external $refs are resolved from the document's folder: name the document's file (Options.Path)")
		}
		if u.Scheme != "" && u.Scheme != "file" || u.Host != "" {
			return nil, fmt.Errorf("%s: only files next to the document are read, never URLs", u)
		}
		p := filepath.Clean(filepath.FromSlash(u.Path))
		if rel, err := filepath.Rel(allowed, p); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			if opts.RefsRoot != "" {
				return nil, fmt.Errorf("%s: only files below %s (--refs-root) are read", u.Path, allowed)
			}
			return nil, fmt.Errorf("%s: only files below the document's folder %s are read (--refs-root DIR allows a folder above it)", u.Path, root)
		}
		data, err := readFile(p)
		if err != nil {
			return nil, err
		}
		if ext := strings.ToLower(filepath.Ext(p)); ext == ".yaml" || ext == ".yml" {
			data = spaceBeforeComments(data)
		}
		return data, nil
	}
	// readIn is readBelow for a path relative to a folder.
	readIn := func(dir string) func(rel string) ([]byte, error) {
		return func(rel string) ([]byte, error) {
			return readBelow(&url.URL{Path: filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(rel)))})
		}
	}
	// readFrom reads a referenced file and its "properties": {"$ref": …}
	// read in, relative to that file (the files it brings in, hop by
	// hop, at most 32 deep).
	readFrom := func(u *url.URL) ([]byte, error) {
		data, err := readBelow(u)
		if err != nil || !bytes.Contains(data, []byte("properties")) {
			return data, err
		}
		v, err := decodeYAML(data)
		if err != nil {
			return data, nil // the loader reports it
		}
		changed := false
		read := readIn(filepath.Dir(filepath.FromSlash(u.Path)))
		err = inlineMapRefs(v, func(rel string) ([]byte, error) {
			changed = true
			return read(rel)
		}, 0)
		if err != nil || !changed {
			return data, err
		}
		return json.Marshal(v)
	}
	// Every read of another document passes here, once a file.
	loader.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		key := filepath.Clean(filepath.FromSlash(u.Path))
		if data, ok := cache[key]; ok {
			return data, nil
		}
		data, err := readFrom(u)
		if err == nil {
			cache[key] = data
		}
		return data, err
	}
	switch {
	case head.Swagger != "":
		if !strings.HasPrefix(head.Swagger, "2.") {
			return nil, fmt.Errorf("swagger %q: Swagger 2.0, OpenAPI 3.0 and 3.1 are supported", head.Swagger)
		}
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
		doc, err := openapi2conv.ToV3WithLoader(&doc2, loader, location)
		if err != nil {
			return nil, fmt.Errorf("converting Swagger 2.0 to OpenAPI 3: %v", err)
		}
		return doc, nil
	case strings.HasPrefix(head.OpenAPI, "3.0"), strings.HasPrefix(head.OpenAPI, "3.1"):
		v, err := decodeYAML(src)
		if err != nil {
			return nil, fmt.Errorf("not an OpenAPI document: %v", err)
		}
		generic, _ := v.(map[string]any)
		if generic == nil {
			return nil, errors.New("not an OpenAPI document: the document is not an object")
		}
		if !opts.AllowExternalRefs {
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
		rootFile := ""
		if location != nil {
			rootFile = location.Path
		}
		err = bundle(generic, rootFile, func(file string) ([]byte, error) {
			if strings.Contains(file, "://") {
				u, err := url.Parse(file)
				if err != nil {
					return nil, fmt.Errorf("%s: only files next to the document are read, never URLs", file)
				}
				return readBelow(u)
			}
			return readBelow(&url.URL{Path: file})
		}, aliases)
		if err != nil {
			return nil, fmt.Errorf("not an OpenAPI document: %v", err)
		}
		parse := func(g map[string]any) (*openapi3.T, error) {
			doc, err := decodeDocument(g)
			if err != nil {
				return nil, err
			}
			// No location: every reference left is the document's own,
			// and the loader takes a place named from a document that has
			// a location other than its root's for another file's.
			fresh := openapi3.NewLoader()
			fresh.IsExternalRefsAllowed, fresh.ReadFromURIFunc = loader.IsExternalRefsAllowed, loader.ReadFromURIFunc
			if err := fresh.ResolveRefsIn(doc, nil); err != nil {
				return nil, err
			}
			return doc, nil
		}
		doc, err := parse(generic)
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
		if doc, err = parse(generic); err != nil {
			return nil, fmt.Errorf("not an OpenAPI document: %v", err)
		}
		return doc, nil
	case head.OpenAPI != "":
		return nil, fmt.Errorf("openapi %q: OpenAPI 3.0 and 3.1 and Swagger 2.0 are supported", head.OpenAPI)
	}
	return nil, errors.New("not an OpenAPI document: it has neither an openapi nor a swagger field (OpenAPI 3.0, 3.1 and Swagger 2.0 are supported)")
}

// decodeYAML decodes YAML (or JSON) into JSON's shapes: a mapping whose
// keys are not all strings (Swagger's response codes written as numbers,
// 200:) becomes a map[string]any too, its keys in their YAML text.
// decodeYAML decodes a document, JSON as JSON (a YAML parser refuses some
// of what JSON allows: a \u escape of a surrogate pair, a tab in a
// string), anything else as YAML.
// readFile reads a referenced file (a test counts the reads).
var readFile = os.ReadFile

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
