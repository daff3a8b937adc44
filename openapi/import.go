// Package openapi turns the operations of an OpenAPI 3.0 or 3.1 document
// into tool manifests: path parameters become {x}, query parameters {?a,b},
// a JSON request body json-input with its schema merged into the input,
// API-key and bearer schemes header or bearer auth with a secretRef, OAuth 2
// schemes a connection need, the 2xx responses successStatus and output, the
// method mutating, and the server's host the network allowlist. Every
// manifest it returns passes the loader's checks.
package openapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	bodykind "github.com/httptools/httptools/body"
	"github.com/httptools/httptools/httpspec" // its kind checks the manifests: imported, it is registered
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/synth"
	"go.yaml.in/yaml/v4"
)

// Options steer an import.
type Options struct {
	// Operations lists the operationIds to import; nil imports all.
	Operations []string
	// Prefix starts every tool id ("<prefix>.<operation>"); "" derives it
	// from the server's host (api.stripe.com → stripe,
	// messaging.twilio.com → twilio-messaging), else the title.
	Prefix string
	// Server replaces the document's servers (every level).
	Server string
	// EnvName is the envName of generated secretRefs; "" means "production".
	EnvName string
	// Loader checks every manifest; nil means the zero synth.Loader.
	Loader *synth.Loader
	// Path is the document's file: external $refs are resolved from its
	// folder when AllowExternalRefs is set.
	Path string
	// AllowExternalRefs resolves $refs to other files (never URLs) below
	// the document's folder; without it such a document is refused,
	// naming the reference.
	AllowExternalRefs bool
}

// Manifest is one generated tool.
type Manifest struct {
	ID   string
	JSON []byte // indented, ending in a newline
}

// Result is what an import made, and what it skipped or changed, in words.
type Result struct {
	Manifests []Manifest
	Warnings  []string
	// Operations counts the operations considered; Skipped the ones not
	// imported, by reason (Warnings say which and why, in words).
	Operations int
	Skipped    map[SkipReason]int
}

// Summary is the coverage line: "N operations: M imported, K skipped
// (reasons: …)".
func (r *Result) Summary() string {
	k := 0
	var reasons []string
	for _, why := range sortedKeys(r.Skipped) {
		k += r.Skipped[why]
		reasons = append(reasons, fmt.Sprintf("%s %d", why, r.Skipped[why]))
	}
	s := fmt.Sprintf("%d operations: %d imported, %d skipped", r.Operations, len(r.Manifests), k)
	if k > 0 {
		s += " (reasons: " + strings.Join(reasons, "; ") + ")"
	}
	return s
}

// Import reads an OpenAPI 3.0 or 3.1 document, or a Swagger 2.0 one
// (converted with kin-openapi's openapi2conv), JSON or YAML, and returns
// manifests for its operations.
func Import(src []byte, opts Options) (*Result, error) {
	if t := bytes.TrimLeft(src, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		// A JSON document: refused when malformed or nested past the
		// document limit, before kin-openapi walks it. (YAML has its
		// parser's own depth limit.)
		if err := jsoncheck.Check(src, jsoncheck.MaxDocumentDepth); err != nil {
			var je *jsoncheck.Error
			if errors.As(err, &je) && je.Kind == jsoncheck.TooDeep {
				return nil, fmt.Errorf("not an OpenAPI document: %w", err)
			}
		}
	}
	var skips []skip
	doc, err := load(src, opts, &skips)
	if err != nil {
		return nil, err
	}
	im := &importer{doc: doc, opts: opts, res: &Result{Skipped: map[SkipReason]int{}}, noted: map[string]bool{}}
	for _, sk := range skips {
		im.res.Operations++
		im.res.Skipped[SkipBrokenComponent]++
		im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("%s: skipped: it uses a broken component: %s", sk.name, sk.why))
	}
	if doc.Info == nil {
		doc.Info = &openapi3.Info{}
	}
	base, err := im.baseServer()
	if err != nil {
		return nil, err
	}
	if im.opts.Prefix == "" {
		im.opts.Prefix = prefixOf(base.host, doc.Info.Title)
	}
	if im.opts.EnvName == "" {
		im.opts.EnvName = "production"
	}
	if im.opts.Loader == nil {
		im.opts.Loader = &synth.Loader{}
	}
	wanted, missing := map[string]bool{}, map[string]bool{}
	for _, id := range opts.Operations {
		wanted[id], missing[id] = true, true
	}
	var paths map[string]*openapi3.PathItem
	if doc.Paths != nil {
		paths = doc.Paths.Map()
	}
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	ids := map[string]string{} // tool id → the operation that has it
	for _, p := range keys {
		item := paths[p]
		if item == nil {
			continue
		}
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"} {
			op := item.GetOperation(method)
			if op == nil {
				continue
			}
			if len(wanted) > 0 && !wanted[op.OperationID] {
				continue
			}
			delete(missing, op.OperationID)
			im.res.Operations++
			srv, err := im.serverFor(base, item, op)
			if err == nil {
				err = im.operation(p, method, item, op, srv, ids)
			}
			if err != nil {
				im.warn(method, p, op, err.Error())
				var se *skipError
				if !errors.As(err, &se) {
					// Not a skip the importer decided (writing the
					// manifest failed): named as the loader would.
					se = &skipError{reason: SkipDoesNotLoad}
				}
				im.res.Skipped[se.reason]++
			}
		}
	}
	for id := range missing {
		im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("operation %q is not in the document", id))
	}
	sort.Strings(im.res.Warnings)
	return im.res, nil
}

// load parses the document: OpenAPI 3.x as it is, Swagger 2.0 converted.
// External references are refused unless allowed, and then read from
// files below the document's folder only.
func load(src []byte, opts Options, skips *[]skip) (*openapi3.T, error) {
	var head struct {
		OpenAPI string `yaml:"openapi" json:"openapi"`
		Swagger string `yaml:"swagger" json:"swagger"`
	}
	if err := yaml.Unmarshal(src, &head); err != nil {
		return nil, fmt.Errorf("not an OpenAPI document: %v", err)
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = opts.AllowExternalRefs
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
		if rel, err := filepath.Rel(root, p); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("%s: only files below the document's folder %s are read", u.Path, root)
		}
		return os.ReadFile(p)
	}
	// readIn is readBelow for a path relative to a folder.
	readIn := func(dir string) func(rel string) ([]byte, error) {
		return func(rel string) ([]byte, error) {
			return readBelow(&url.URL{Path: filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(rel)))})
		}
	}
	// Every read of another document passes here.
	loader.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		data, err := readBelow(u)
		if err != nil || !bytes.Contains(data, []byte("properties")) {
			return data, err
		}
		// "properties": {"$ref": …} in a file the loader reads: read in
		// here, relative to that file (the files it brings in, hop by hop,
		// at most 32 deep).
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
			return nil, fmt.Errorf("converting Swagger 2.0 to OpenAPI 3: %v", refHint(err))
		}
		return doc, nil
	case strings.HasPrefix(head.OpenAPI, "3.0"), strings.HasPrefix(head.OpenAPI, "3.1"):
		data := src
		var generic map[string]any
		if !opts.AllowExternalRefs && bytes.Contains(src, []byte("$ref")) {
			// An operation that is a $ref to a file would load as an empty
			// operation: refused with the way out.
			if v, err := decodeYAML(src); err == nil {
				g, _ := v.(map[string]any)
				if where, ref := operationRef(g); where != "" {
					return nil, fmt.Errorf("not an OpenAPI document: %s is a $ref to %s: the document refers to other files: pass --allow-external-refs to read them from its folder", where, ref)
				}
			}
		}
		if opts.AllowExternalRefs && root != "" {
			// An operation given as a $ref to another file (DigitalOcean's
			// layout, which bundlers accept though the format has $refs
			// for path items only): read in, its own references made
			// relative to the document.
			v, err := decodeYAML(src)
			if err != nil {
				return nil, fmt.Errorf("not an OpenAPI document: %v", err)
			}
			if generic, _ = v.(map[string]any); generic == nil {
				return nil, errors.New("not an OpenAPI document: the document is not an object")
			}
			n, err := inlineOperationRefs(generic, readIn(root))
			if err != nil {
				return nil, fmt.Errorf("not an OpenAPI document: %v", err)
			}
			if n > 0 {
				if data, err = json.Marshal(generic); err != nil {
					return nil, fmt.Errorf("not an OpenAPI document: %v", err)
				}
			}
		}
		parse := func(data []byte) (*openapi3.T, error) {
			fresh := openapi3.NewLoader()
			fresh.IsExternalRefsAllowed, fresh.ReadFromURIFunc = loader.IsExternalRefsAllowed, loader.ReadFromURIFunc
			if location != nil {
				return fresh.LoadFromDataWithPath(data, location)
			}
			return fresh.LoadFromData(data)
		}
		doc, err := parse(data)
		if err == nil {
			return doc, nil
		}
		// A broken part (a component that does not decode, a reference to
		// one that is not there or of another kind, prose that is not
		// text) costs the operations that use it, not the document: found
		// in the document's structure (broken.go), never in the loader's
		// words, and the document loaded again without it.
		if generic == nil {
			v, derr := decodeYAML(src)
			if generic, _ = v.(map[string]any); derr != nil || generic == nil {
				return nil, fmt.Errorf("not an OpenAPI document: %v", refHint(err))
			}
		}
		if !repair(generic, skips) {
			return nil, fmt.Errorf("not an OpenAPI document: %v", refHint(err))
		}
		if data, err = json.Marshal(generic); err != nil {
			return nil, fmt.Errorf("not an OpenAPI document: %v", err)
		}
		if doc, err = parse(data); err != nil {
			return nil, fmt.Errorf("not an OpenAPI document: %v", refHint(err))
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
func decodeYAML(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return jsonShape(v), nil
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
// media types and is skipped as binary rather than imported as a JSON
// tool that can only fail.
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

// inlineOperationRefs replaces each operation of doc that is only a $ref
// to another file with that file's content, rewriting the references in
// it to be relative to the document. It returns how many it replaced.
func inlineOperationRefs(doc map[string]any, read func(rel string) ([]byte, error)) (int, error) {
	n := 0
	paths, _ := doc["paths"].(map[string]any)
	for _, key := range sortedKeys(paths) {
		item, _ := paths[key].(map[string]any)
		for _, m := range []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"} {
			op, _ := item[m].(map[string]any)
			ref, _ := op["$ref"].(string)
			if len(op) != 1 || ref == "" || strings.HasPrefix(ref, "#") {
				continue
			}
			body, err := readRef(read, ref, "an operation object")
			if err != nil {
				return n, fmt.Errorf("%s %s: %v", strings.ToUpper(m), key, err)
			}
			if err := inlineMapRefs(body, read, 0); err != nil {
				return n, fmt.Errorf("%s %s: %v", strings.ToUpper(m), key, err)
			}
			item[m] = body
			n++
		}
	}
	return n, nil
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
			if !slices.Contains([]string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}, m) {
				continue
			}
			if shared || refersTo(o, bad) {
				op, _ := o.(map[string]any)
				id, _ := op["operationId"].(string)
				if id == "" {
					id = strings.ToUpper(m) + " " + p
				}
				*skips = append(*skips, skip{id, name + " (" + why + ")"})
				delete(item, m)
				removed++
			}
		}
	}
	return removed
}

// refHint adds what to do to a loader error about an external reference.
func refHint(err error) string {
	msg := err.Error()
	if (strings.Contains(msg, "external reference") || strings.Contains(msg, "not allowed")) && !strings.Contains(msg, "--allow-external-refs") {
		return msg + " (the document refers to other files: pass --allow-external-refs to read them from its folder)"
	}
	return msg
}

// server is a base URL an operation is sent to.
type server struct {
	url  string // no trailing slash
	host string
}

// absServer returns the first absolute http(s) URL among servers, with
// its variables' defaults filled in.
func absServer(servers openapi3.Servers) (server, bool) {
	for _, s := range servers {
		if s == nil {
			continue
		}
		u := s.URL
		for name, v := range s.Variables {
			if v != nil {
				u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
			}
		}
		if pu, err := url.Parse(u); err == nil && (pu.Scheme == "https" || pu.Scheme == "http") && pu.Host != "" && !strings.ContainsAny(pu.Host, "{}") {
			return server{url: strings.TrimRight(u, "/"), host: pu.Hostname()}, true
		}
	}
	return server{}, false
}

// baseServer is --server, else the document's first absolute server.
func (im *importer) baseServer() (server, error) {
	if im.opts.Server != "" {
		if s, ok := absServer(openapi3.Servers{{URL: im.opts.Server}}); ok {
			// --server names the host; a document whose servers are all
			// relative ("/v1.45", Docker's) keeps its path below it,
			// unless --server has a path of its own.
			if u, _ := url.Parse(s.url); u != nil && (u.Path == "" || u.Path == "/") {
				if _, abs := absServer(im.doc.Servers); !abs && len(im.doc.Servers) > 0 && im.doc.Servers[0] != nil {
					if rel := strings.TrimRight(im.doc.Servers[0].URL, "/"); strings.HasPrefix(rel, "/") && !strings.ContainsAny(rel, "{}") {
						s.url = strings.TrimRight(s.url, "/") + rel
					}
				}
			}
			return s, nil
		}
		return server{}, fmt.Errorf("server %q is not an absolute http(s) URL: pass --server https://api.example.com", im.opts.Server)
	}
	if s, ok := absServer(im.doc.Servers); ok {
		return s, nil
	}
	if len(im.doc.Servers) > 0 && im.doc.Servers[0] != nil {
		return server{}, fmt.Errorf("server %q is not an absolute http(s) URL, and no other is: pass --server https://api.example.com", im.doc.Servers[0].URL)
	}
	return server{}, errors.New("the document names no server: pass --server https://api.example.com")
}

// serverFor is the operation's own server, else its path's, else base.
func (im *importer) serverFor(base server, item *openapi3.PathItem, op *openapi3.Operation) (server, error) {
	if im.opts.Server != "" {
		return base, nil
	}
	if op.Servers != nil && len(*op.Servers) > 0 {
		if s, ok := absServer(*op.Servers); ok {
			return s, nil
		}
	}
	if len(item.Servers) > 0 {
		if s, ok := absServer(item.Servers); ok {
			return s, nil
		}
	}
	return base, nil
}

type importer struct {
	doc   *openapi3.T
	opts  Options
	res   *Result
	noted map[string]bool // the security schemes warned about once
}

func (im *importer) warn(method, path string, op *openapi3.Operation, msg string) {
	name := op.OperationID
	if name == "" {
		name = method + " " + path
	}
	im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("%s: %s", name, msg))
}

// tool is the manifest as written, in the manifest's own types (synth's
// and httpspec's), its fields in a readable order. The input and output
// are JSON Schemas, built as values by the converter (schema.go).
type tool struct {
	ID          string           `json:"id"`
	Description string           `json:"description"`
	Version     string           `json:"version"`
	Mutating    bool             `json:"mutating"`
	Input       map[string]any   `json:"input"`
	Output      map[string]any   `json:"output"`
	Effects     []synth.Effect   `json:"effects"`
	Network     synth.Network    `json:"network"`
	NeedsSpec   *synth.NeedsSpec `json:"needsSpec,omitempty"`
	Metadata    metadata         `json:"metadata"`
	Spec        httpspec.Spec    `json:"spec"`
}

// metadata is where an imported tool came from.
type metadata struct {
	OpenAPI origin `json:"openapi"`
}

// origin is the operation a tool was imported from.
type origin struct {
	OperationID string `json:"operationId"`
	Method      string `json:"method"`
	Path        string `json:"path"`
}

func (im *importer) operation(path, method string, item *openapi3.PathItem, op *openapi3.Operation, srv server, ids map[string]string) error {
	if !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, method) {
		return skipf(SkipMethod, "method %s: a tool's method is GET, POST, PUT, PATCH or DELETE", method)
	}
	id := toolID(im.opts.Prefix, kebab(op.OperationID, method, path))
	name := op.OperationID
	if name == "" {
		name = method + " " + path
	}
	if prev, dup := ids[id]; dup {
		id = toolID(im.opts.Prefix, kebab(op.OperationID, method, path)+"-"+shortHash(method+" "+path))
		im.warn(method, path, op, fmt.Sprintf("its id is %s: %s has the plain one", id, prev))
	}
	ids[id] = name
	t := tool{
		ID:       id,
		Version:  version(im.doc.Info.Version),
		Mutating: method != "GET",
		Network:  synth.Network{Kind: synth.NetworkAllowlist, Hosts: []string{srv.host}},
		Metadata: metadata{OpenAPI: origin{OperationID: op.OperationID, Method: method, Path: path}},
	}
	t.Description = describeOperation(op, item, method, path)
	effect := "reads"
	if t.Mutating {
		effect = "writes"
	}
	t.Effects = []synth.Effect{{Kind: effect, Resource: "external:" + srv.host}, {Kind: "network", Resource: "external:" + srv.host}}

	// A path key may carry a literal query ("/{Bucket}?cors") or a
	// fragment that only tells operations apart ("/#GetObject"): the
	// fragment is never sent, so it is dropped; the literal query stays,
	// and the parameters continue it.
	literalQuery := false
	if i := strings.IndexByte(path, '#'); i >= 0 {
		im.warn(method, path, op, fmt.Sprintf("the path's fragment %q is left out: a fragment is never sent to the server", path[i:]))
		path = path[:i]
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		literalQuery = true
		if i == len(path)-1 {
			path, literalQuery = path[:i], false
		}
	}
	// Characters RFC 6570 does not allow as literals ("/<upload_url>")
	// are sent percent-encoded, as a client would.
	path = escapeLiterals(path)

	in := newConverter()
	props := map[string]any{}
	var required []string
	var query []string
	var headers []httpspec.Header
	params := map[string]*openapi3.Parameter{}
	var order []string
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				continue
			}
			key := pr.Value.In + ":" + pr.Value.Name
			if _, seen := params[key]; !seen {
				order = append(order, key)
			}
			params[key] = pr.Value
		}
	}
	for _, key := range order {
		p := params[key]
		if p.In != "path" && im.isCredential(p) {
			im.warn(method, path, op, fmt.Sprintf("%s parameter %q left out: it carries a credential, which a tool takes from its authorization, never from the model's input", p.In, p.Name))
			continue
		}
		switch p.In {
		case "path", "query":
		case "header":
			if strings.EqualFold(p.Name, "Idempotency-Key") {
				// Filled with the kernel's idempotency key of the call,
				// stable across retries and re-runs.
				headers = append(headers, httpspec.Header{Name: "Idempotency-Key", Value: ""})
				continue
			}
			if !p.Required {
				im.warn(method, path, op, fmt.Sprintf("header parameter %q left out: it is optional (a required header is filled from the input)", p.Name))
				continue
			}
			v := headerVar(p.Name)
			if _, clash := props[v]; clash {
				return skipf(SkipParameter, "header parameter %q: its input name %q is taken", p.Name, v)
			}
			headers = append(headers, httpspec.Header{Name: p.Name, Value: "{" + v + "}"})
			sch := in.inline(p.Schema, 0)
			if sch["type"] == nil && sch["$ref"] == nil {
				sch["type"] = "string"
			}
			sch["description"] = strings.TrimSpace(plainText(p.Description) + " (sent as the " + p.Name + " header)")
			props[v] = sch
			required = append(required, v)
			continue
		default:
			im.warn(method, path, op, fmt.Sprintf("%s parameter %q left out: only path, query and header parameters are filled from the input", p.In, p.Name))
			continue
		}
		// A name RFC 6570 cannot spell is written percent-encoded: sent so
		// (servers decode it), read from the input member of its name.
		v := templateName(p.Name)
		explode := p.Explode != nil && *p.Explode
		style := p.Style
		if p.In == "query" {
			if style == "" {
				style = "form"
			}
			if p.Explode == nil {
				explode = style == "form" // form style explodes by default
			}
			if style == "deepObject" {
				vars, dropped, why := im.deepObject(p, in)
				if len(dropped) > 0 && why == "" {
					im.warn(method, path, op, fmt.Sprintf("query parameter %q: %s left out: a deepObject nested in a deepObject, or a list of objects, has no agreed spelling", p.Name, strings.Join(dropped, ", ")))
				}
				if why != "" {
					if p.Required {
						return skipf(SkipParameter, "required query parameter %q: %s", p.Name, why)
					}
					im.warn(method, path, op, fmt.Sprintf("query parameter %q left out: %s", p.Name, why))
					continue
				}
				for _, dv := range vars {
					if _, clash := props[dv.name]; clash {
						return skipf(SkipParameter, "query parameter %q: its input name %q is taken", p.Name, dv.name)
					}
					props[dv.name] = dv.schema
					if dv.required {
						required = append(required, dv.name)
					}
					query = append(query, dv.template)
				}
				continue
			}
			if (style == "pipeDelimited" || style == "spaceDelimited") && !explode && (isArray(p.Schema) || p.Schema == nil || p.Schema.Value == nil || len(p.Schema.Value.Type.Slice()) == 0) {
				// RFC 6570 has no join by | or space; a string of the
				// values so joined is sent as it is written (the | or
				// space percent-encoded, which the server decodes).
				sep, word := "|", "|"
				if style == "spaceDelimited" {
					sep, word = " ", "spaces"
				}
				sch := map[string]any{"type": "string"}
				if isArray(p.Schema) {
					if items := in.inline(p.Schema.Value.Items, 0); items != nil {
						if d, ok := items["description"].(string); ok && d != "" {
							sch["description"] = d
						}
					}
				}
				d := strings.TrimSpace(plainText(p.Description) + " (several values joined by " + word + ", e.g. a" + sep + "b)")
				if cur, ok := sch["description"].(string); ok {
					d = strings.TrimSpace(d + " " + cur)
				}
				sch["description"] = d
				props[p.Name] = sch
				if p.Required {
					required = append(required, p.Name)
				}
				query = append(query, v)
				continue
			}
			if style != "form" {
				why := fmt.Sprintf("its style %s has no RFC 6570 form", style)
				if p.Required {
					return skipf(SkipParameter, "required query parameter %q: %s", p.Name, why)
				}
				im.warn(method, path, op, fmt.Sprintf("query parameter %q left out: %s (form style, the default, does)", p.Name, why))
				continue
			}
		}
		if p.In == "path" {
			op := ""
			switch style {
			case "", "simple":
			case "label":
				op = "."
			case "matrix":
				op = ";"
			default:
				return skipf(SkipParameter, "path parameter %q: style %s has no RFC 6570 form", p.Name, style)
			}
			star := ""
			if explode {
				star = "*"
			}
			if !strings.Contains(path, "{"+p.Name+"}") {
				return skipf(SkipParameter, "path parameter %q does not appear in the path", p.Name)
			}
			path = strings.ReplaceAll(path, "{"+p.Name+"}", "{"+op+v+star+"}")
		}
		sch := in.inline(p.Schema, 0)
		if p.Description != "" {
			if _, ok := sch["description"]; !ok {
				sch["description"] = plainText(p.Description)
			}
		}
		props[p.Name] = sch
		if p.Required || p.In == "path" {
			required = append(required, p.Name)
		}
		if p.In == "query" {
			if (isArray(p.Schema) || isObject(p.Schema)) && explode {
				query = append(query, v+"*")
			} else {
				query = append(query, v)
			}
		}
	}
	tmpl := srv.url + path
	if len(query) > 0 {
		sep := "?"
		if literalQuery {
			sep = "&"
		}
		tmpl += "{" + sep + strings.Join(query, ",") + "}"
	}
	spec := &t.Spec
	*spec = httpspec.Spec{Kind: httpspec.Kind, Method: method, URLTemplate: tmpl, Headers: headers}
	if rb := op.RequestBody; rb != nil && rb.Value != nil && method != "GET" && jsonContent(rb.Value.Content) == nil {
		if fm := rb.Value.Content.Get(formType); fm != nil {
			if err := im.formBody(method, path, op, fm, in, props, params, &required, spec); err != nil {
				return err
			}
		} else {
			return skipf(SkipBody, "the request body is %s: %s", strings.Join(sortedKeys(rb.Value.Content), ", "), whyNotBody(rb.Value.Content))
		}
	} else if rb := op.RequestBody; rb != nil && rb.Value != nil && method != "GET" {
		mt := jsonContent(rb.Value.Content)
		if mt == nil {
			return skipf(SkipBody, "the request body is %s: %s", strings.Join(sortedKeys(rb.Value.Content), ", "), whyNotBody(rb.Value.Content))
		}
		body := in.resolved(mt.Schema)
		bprops, _ := body["properties"].(map[string]any)
		if bprops == nil && mt.Schema != nil && mt.Schema.Value != nil && len(mt.Schema.Value.AllOf) > 0 {
			// allOf of objects (a base and its extension): their members
			// together.
			bprops, body = map[string]any{}, map[string]any{"type": "object"}
			var req []string
			for _, part := range mt.Schema.Value.AllOf {
				ps := in.resolved(part)
				pp, _ := ps["properties"].(map[string]any)
				for k, v := range pp {
					bprops[k] = v
				}
				if r, ok := ps["required"].([]string); ok {
					req = append(req, r...)
				}
			}
			if len(bprops) == 0 {
				return skipf(SkipBody, "the JSON body's allOf has no object members: it cannot be the tool input minus the URL's values")
			}
			body["properties"], body["required"] = bprops, req
		}
		if body["type"] != "object" && bprops == nil {
			if body["oneOf"] != nil || body["anyOf"] != nil {
				return skipf(SkipBody, "the JSON body is one of several shapes (oneOf/anyOf): a tool's input is one object whose members, minus the URL's, are the body")
			}
			return skipf(SkipBody, "the JSON body is not an object: it cannot be the tool input minus the URL's values")
		}
		for _, k := range sortedKeys(bprops) {
			if _, clash := props[k]; clash {
				im.warn(method, path, op, fmt.Sprintf("body property %q has the name of a parameter: the parameter wins", k))
				continue
			}
			props[k] = bprops[k]
		}
		// The body's own required members are required whether or not
		// the body is: an API that takes no body at all is rare, one that
		// refuses a body without them is the rule.
		if req, ok := body["required"].([]string); ok {
			for _, r := range req {
				if _, clash := params["path:"+r]; !clash && !slices.Contains(required, r) {
					required = append(required, r)
				}
			}
		}
		spec.RequestBody = &httpspec.RequestBody{Kind: bodykind.JSONInput}
	}
	t.Input = in.attach(map[string]any{"type": "object", "properties": props})
	if c := in.cuts("input"); c != "" {
		im.warn(method, path, op, "to keep the tool readable, "+c)
	}
	if len(required) > 0 {
		t.Input["required"] = required
	}
	im.security(method, path, op, &t, spec)
	if err := im.responses(method, path, op, &t, spec); err != nil {
		return err
	}
	var buf bytes.Buffer
	encode := func() error {
		buf.Reset()
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(t)
	}
	if err := encode(); err != nil {
		return err
	}
	if cuts := fit(&t, func() int { encode(); return buf.Len() }); len(cuts) > 0 {
		if err := encode(); err != nil {
			return err
		}
		im.warn(method, path, op, fmt.Sprintf("the manifest is cut to %d KB (the budget is %d KB): %s were left out", buf.Len()>>10, maxManifestBytes>>10, strings.Join(cuts, ", then ")))
		if buf.Len() > maxManifestBytes {
			return skipf(SkipTooBig, "the manifest is %d KB even cut down, over the %d KB budget", buf.Len()>>10, maxManifestBytes>>10)
		}
	}
	if _, err := im.opts.Loader.Load(buf.Bytes()); err != nil {
		return skipf(SkipDoesNotLoad, "the generated manifest does not load: %v", err)
	}
	im.res.Manifests = append(im.res.Manifests, Manifest{ID: t.ID, JSON: buf.Bytes()})
	return nil
}

const formType = "application/x-www-form-urlencoded"

// formBody makes a form body: each top-level member of the body's schema
// an input member and a key={name} pair of a text template, which the
// runtime encodes (arrays repeated or as key[], objects as key[member]).
func (im *importer) formBody(method, path string, op *openapi3.Operation, mt *openapi3.MediaType, in *converter, props map[string]any, params map[string]*openapi3.Parameter, required *[]string, spec *httpspec.Spec) error {
	body := in.resolved(mt.Schema)
	bprops, _ := body["properties"].(map[string]any)
	if len(bprops) == 0 {
		return nil // an empty form (Stripe's deletes): no body is sent
	}
	var pairs []string
	for _, k := range sortedKeys(bprops) {
		if _, clash := props[k]; clash {
			im.warn(method, path, op, fmt.Sprintf("form member %q has the name of a parameter: the parameter wins", k))
			continue
		}
		if strings.ContainsAny(k, ".{}&=") {
			im.warn(method, path, op, fmt.Sprintf("form member %q left out: its name cannot be an input placeholder", k))
			continue
		}
		props[k] = bprops[k]
		key := url.QueryEscape(k)
		if enc := mt.Encoding[k]; isArray(mt.Schema.Value.Properties[k]) && enc != nil && enc.Style == "deepObject" {
			key += "[]"
		}
		pairs = append(pairs, key+"={"+k+"}")
	}
	if req, ok := body["required"].([]string); ok {
		for _, r := range req {
			if _, isParam := params["path:"+r]; !isParam && !slices.Contains(*required, r) {
				*required = append(*required, r)
			}
		}
	}
	spec.Headers = append(spec.Headers, httpspec.Header{Name: "Content-Type", Value: formType})
	spec.RequestBody = &httpspec.RequestBody{Kind: bodykind.Text, Template: strings.Join(pairs, "&")}
	return nil
}

// whyNotBody says why a body the format cannot carry is skipped.
func whyNotBody(c openapi3.Content) string {
	for k := range c {
		switch {
		case strings.HasPrefix(k, "multipart/"):
			return "a tool sends JSON or text, not files in a multipart body"
		case strings.Contains(k, "xml"):
			return "a tool sends JSON or text, not XML"
		case strings.HasPrefix(k, "application/octet-stream"), strings.HasPrefix(k, "image/"), strings.HasPrefix(k, "video/"), strings.HasPrefix(k, "audio/"):
			return "a tool sends JSON or text, not binary data"
		}
	}
	return "only JSON bodies are imported"
}

// credentialNames are parameter names that carry a credential.
var credentialNames = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "api-key": true, "access_token": true, "oauth_token": true,
	"token": true, "auth_token": true, "client_secret": true, "password": true, "authorization": true,
	"x-api-key": true,
}

// isCredential reports whether a parameter carries a credential: the
// document's own apiKey schemes name it, or its name is one APIs use.
func (im *importer) isCredential(p *openapi3.Parameter) bool {
	if credentialNames[strings.ToLower(p.Name)] {
		return true
	}
	if im.doc.Components != nil {
		for _, ref := range im.doc.Components.SecuritySchemes {
			if ref != nil && ref.Value != nil && ref.Value.Type == "apiKey" && ref.Value.In == p.In && strings.EqualFold(ref.Value.Name, p.Name) {
				return true
			}
		}
	}
	return false
}

// headerVar is the input name of a header parameter: X-Request-Id →
// x_request_id.
func headerVar(name string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "_"), "_")
}

// security maps the first usable security requirement to auth.
func (im *importer) security(method, path string, op *openapi3.Operation, t *tool, spec *httpspec.Spec) {
	reqs := im.doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if len(reqs) == 0 {
		return
	}
	// The alternatives are ranked, simplest to hold first: a bearer
	// token, an API key header, an OAuth connection, then basic auth.
	var skipped []string
	best, bestRank := "", 0
	var bestReq openapi3.SecurityRequirement
	for _, req := range reqs {
		if len(req) == 0 {
			return // anonymous access is one of the options
		}
		for _, name := range sortedKeys(req) {
			if im.doc.Components == nil {
				break
			}
			ref := im.doc.Components.SecuritySchemes[name]
			if ref == nil || ref.Value == nil {
				continue
			}
			s := ref.Value
			rank := 0
			switch {
			case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
				rank = 4
			case s.Type == "apiKey" && s.In == "header":
				rank = 3
			case s.Type == "oauth2" || s.Type == "openIdConnect":
				rank = 2
			case s.Type == "http" && strings.EqualFold(s.Scheme, "basic"):
				rank = 1
			case s.Type == "apiKey" && s.In == "query":
				skipped = append(skipped, fmt.Sprintf("%s (an API key in the query parameter %q, which a tool cannot send from a secret)", name, s.Name))
			default:
				skipped = append(skipped, fmt.Sprintf("%s (%s %s)", name, s.Type, s.In+s.Scheme))
			}
			if rank > bestRank {
				best, bestRank, bestReq = name, rank, req
			}
		}
	}
	if best != "" {
		s := im.doc.Components.SecuritySchemes[best].Value
		secret := &synth.SecretRef{EnvName: im.opts.EnvName, Name: envName(best)}
		switch bestRank {
		case 4:
			spec.Authorization = &httpspec.Authorization{Kind: httpspec.AuthBearer, SecretRef: secret}
		case 3:
			spec.Authorization = &httpspec.Authorization{Kind: httpspec.AuthHeader, HeaderName: s.Name, SecretRef: secret}
		case 2:
			conn := connName(best)
			scopes := bestReq[best]
			if scopes == nil {
				scopes = []string{}
			}
			t.NeedsSpec = &synth.NeedsSpec{Connections: map[string]synth.ConnectionNeed{conn: {App: im.opts.Prefix, Permissions: scopes, As: synth.AsPerson}}}
			spec.Authorization = &httpspec.Authorization{Kind: httpspec.AuthConnection, Connection: conn}
		case 1:
			// The secret holds the whole header value: "Basic " and the
			// base64 of user:password.
			spec.Authorization = &httpspec.Authorization{Kind: httpspec.AuthHeader, HeaderName: "Authorization", SecretRef: secret}
			if !im.noted[best] {
				im.noted[best] = true
				im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("security scheme %s is HTTP basic auth: its tools send secret %s/%s as the whole Authorization value: store \"Basic \" followed by the base64 of user:password", best, im.opts.EnvName, envName(best)))
			}
		}
		return
	}
	im.warn(method, path, op, "no supported security scheme ("+strings.Join(skipped, ", ")+"): the tool sends no credentials; add authorization by hand")
}

// responses sets successStatus, output and parseJson from the 2xx answers.
// An answer that is binary (a file, an image) is refused: a tool's output is
// JSON or text.
func (im *importer) responses(method, path string, op *openapi3.Operation, t *tool, spec *httpspec.Spec) error {
	t.Output = map[string]any{}
	if op.Responses == nil {
		return nil
	}
	var codes []int
	var first *openapi3.Response
	firstCode := 1000
	resps := op.Responses.Map()
	for _, code := range sortedKeys(resps) { // in order: 200 is taken before an equal 2XX, every run
		r := resps[code]
		lo, hi := 0, 0
		switch {
		case strings.EqualFold(code, "2XX"):
			lo, hi = 200, 299
		default:
			n, err := strconv.Atoi(code)
			if err != nil || n < 200 || n > 299 {
				continue
			}
			lo, hi = n, n
		}
		codes = append(codes, lo, hi)
		if lo < firstCode && r != nil && r.Value != nil {
			firstCode, first = lo, r.Value
		}
	}
	if len(codes) > 0 {
		lo, hi := slices.Min(codes), slices.Max(codes)
		if lo != 200 || hi != 299 {
			spec.SuccessStatus = &httpspec.StatusRange{Min: lo, Max: hi}
		}
	}
	if first == nil || len(first.Content) == 0 {
		return nil
	}
	if mt := jsonContent(first.Content); mt != nil {
		out := newConverter()
		t.Output = out.attach(out.resolved(mt.Schema))
		if c := out.cuts("output"); c != "" {
			im.warn(method, path, op, "to keep the tool readable, "+c)
		}
		return nil
	}
	for k := range first.Content {
		if strings.HasPrefix(k, "text/") || strings.Contains(k, "xml") || k == "*/*" {
			spec.ParseJSON = new(bool)
			t.Output = map[string]any{"type": "string"}
			return nil
		}
	}
	return skipf(SkipAnswer, "the answer is %s: a tool returns JSON or text, not binary data", strings.Join(sortedKeys(first.Content), ", "))
}

func jsonContent(c openapi3.Content) *openapi3.MediaType {
	if mt := c.Get("application/json"); mt != nil {
		return mt
	}
	for _, k := range sortedKeys(c) {
		if strings.Contains(k, "json") {
			return c[k]
		}
	}
	return nil
}

func isObject(ref *openapi3.SchemaRef) bool {
	return ref != nil && ref.Value != nil && ref.Value.Type != nil && ref.Value.Type.Is("object")
}

// A deepVar is one query variable a deepObject parameter becomes.
type deepVar struct {
	name     string // the input member and wire name, e.g. created[gte]
	template string // its RFC 6570 variable, percent-encoded
	schema   map[string]any
	required bool
}

// deepObject spells a deepObject query parameter in RFC 6570 as far as it
// can: each declared member of the object as its own variable named
// name[member] (Stripe's created[gte]=…), an array as name[] exploded
// (expand[]=a&expand[]=b), and a scalar alternative of an anyOf as the
// plain name. An object with no declared members has no variable to name,
// and why says so.
func (im *importer) deepObject(p *openapi3.Parameter, in *converter) (vars []deepVar, dropped []string, why string) {
	if p.Schema == nil || p.Schema.Value == nil {
		return nil, nil, "style deepObject without a schema"
	}
	desc := plainText(p.Description)
	branches := openapi3.SchemaRefs{p.Schema}
	if v := p.Schema.Value; len(v.AnyOf)+len(v.OneOf) > 0 {
		branches = append(append(openapi3.SchemaRefs{}, v.AnyOf...), v.OneOf...)
	}
	var scalars openapi3.SchemaRefs
	for _, b := range branches {
		if b == nil || b.Value == nil {
			continue
		}
		switch {
		case isArray(b):
			if b.Value.Items == nil || !isScalar(b.Value.Items) {
				dropped = append(dropped, p.Name+"[]") // a list of objects has no agreed spelling
				continue
			}
			sch := in.inline(b, 0)
			sch["description"] = strings.TrimSpace(desc + " (sent as " + p.Name + "[]=… for each item)")
			vars = append(vars, deepVar{name: p.Name + "[]", template: templateName(p.Name+"[]") + "*", schema: sch, required: p.Required})
		case isObject(b) || len(b.Value.Properties) > 0:
			if len(b.Value.Properties) == 0 {
				continue
			}
			req := map[string]bool{}
			for _, r := range b.Value.Required {
				req[r] = true
			}
			for _, m := range sortedKeys(b.Value.Properties) {
				mv := b.Value.Properties[m]
				if !isScalar(mv) {
					dropped = append(dropped, p.Name+"["+m+"]") // nested: no agreed spelling
					continue
				}
				sch := in.inline(mv, 0)
				d, _ := sch["description"].(string)
				sch["description"] = strings.TrimSpace(strings.TrimSpace(d+" "+desc) + " (sent as " + p.Name + "[" + m + "])")
				vars = append(vars, deepVar{name: p.Name + "[" + m + "]", template: templateName(p.Name + "[" + m + "]"), schema: sch, required: p.Required && req[m] && len(branches) == 1})
			}
		default:
			scalars = append(scalars, b)
		}
	}
	if len(scalars) > 0 {
		// The scalar alternatives (an integer, or an enum of words) are
		// one plain variable.
		sch := map[string]any{"anyOf": in.inlineAll(scalars, 0)}
		if len(scalars) == 1 {
			sch = in.inline(scalars[0], 0)
		}
		if desc != "" {
			sch["description"] = desc
		}
		vars = append(vars, deepVar{name: p.Name, template: templateName(p.Name), schema: sch, required: p.Required && len(vars) == 0})
	}
	if len(vars) == 0 && len(dropped) > 0 {
		return nil, nil, strings.Join(dropped, ", ") + " has no agreed deepObject spelling (a list of objects, or an object nested in one)"
	}
	if len(vars) == 0 {
		return nil, nil, "its style deepObject names no members, so RFC 6570 has no variable for them"
	}
	return vars, dropped, ""
}

// escapeLiterals percent-encodes the characters of a path, outside its
// {expressions}, that RFC 6570 does not allow in a literal.
func escapeLiterals(path string) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c == '{':
			depth++
		case c == '}' && depth > 0:
			depth--
		case depth == 0 && (c <= ' ' || c >= 0x7f || strings.IndexByte("\"'<>\\^`|", c) >= 0):
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		case depth == 0 && c == '%' && !(i+2 < len(path) && isHex(path[i+1]) && isHex(path[i+2])):
			b.WriteString("%25")
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// templateName spells a parameter's name as an RFC 6570 variable: letters,
// digits and _ as they are, anything else percent-encoded (max-keys →
// max%2Dkeys, $filter → %24filter, assignee.any → assignee%2Eany).
func templateName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// isScalar: a schema whose every value is a string, number, boolean or
// null, which one RFC 6570 variable spells as one value.
func isScalar(ref *openapi3.SchemaRef) bool {
	if ref == nil || ref.Value == nil {
		return false
	}
	v := ref.Value
	if isObject(ref) || isArray(ref) || len(v.Properties) > 0 || v.Items != nil || len(v.AllOf) > 0 {
		return false
	}
	for _, b := range append(append(openapi3.SchemaRefs{}, v.AnyOf...), v.OneOf...) {
		if !isScalar(b) {
			return false
		}
	}
	return true
}

func isArray(ref *openapi3.SchemaRef) bool {
	return ref != nil && ref.Value != nil && ref.Value.Type != nil && ref.Value.Type.Is("array")
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// slug makes an id part: "Swagger Petstore - OpenAPI 3.0" → "swagger-petstore".
func slug(title string) string {
	title = strings.ToLower(strings.SplitN(title, " - ", 2)[0])
	s := strings.Trim(nonWord.ReplaceAllString(title, "-"), "-")
	if s == "" {
		return "api"
	}
	return s
}

// kebab makes the tool part of an id from the operationId (or the method and
// path), acronyms kept whole: getPetById → get-pet-by-id,
// GETSendMessage → get-send-message, listHTTPRoutes → list-http-routes,
// issues/list-for-repo → issues-list-for-repo.
func kebab(opID, method, path string) string {
	if opID == "" {
		opID = strings.ToLower(method) + " " + path
	}
	rs := []rune(opID)
	var b strings.Builder
	isUpper := func(r rune) bool { return r >= 'A' && r <= 'Z' }
	isLower := func(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }
	for i, r := range rs {
		if isUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && isLower(rs[i+1]) && !(rs[i+1] >= '0' && rs[i+1] <= '9')
			// A word starts at an upper case letter after a lower case
			// one, or at the last capital of an acronym before a lower
			// case letter ("HTTPRoutes": HTTP, Routes).
			if isLower(prev) || (isUpper(prev) && nextLower) {
				b.WriteByte('-')
			}
		}
		if isUpper(r) {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	s := strings.Trim(nonWord.ReplaceAllString(b.String(), "-"), "-")
	if s == "" {
		return "operation"
	}
	return s
}

// maxIDLength bounds tool ids: MCP clients and models show them whole.
const maxIDLength = 64

// toolID joins prefix and name, cut to maxIDLength on a word with a hash
// of the whole kept, so that two long names stay apart.
func toolID(prefix, name string) string {
	id := prefix + "." + name
	if len(id) <= maxIDLength {
		return id
	}
	h := "-" + shortHash(id)
	cut := id[:maxIDLength-len(h)]
	if i := strings.LastIndexByte(cut, '-'); i > len(prefix)+1 {
		cut = cut[:i]
	}
	return cut + h
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:3])
}

// prefixOf makes the id prefix from the server's host: its registrable
// name first, then what comes before it (api.stripe.com → stripe,
// messaging.twilio.com → twilio-messaging, www.googleapis.com →
// googleapis); the title's slug when the host says nothing.
func prefixOf(host, title string) string {
	labels := strings.Split(strings.ToLower(strings.TrimSuffix(host, ".")), ".")
	if len(labels) >= 2 && net.ParseIP(host) == nil {
		labels = labels[:len(labels)-1] // the top-level domain
		if n := len(labels); n >= 2 && len(labels[n-1]) <= 3 && (labels[n-1] == "co" || labels[n-1] == "com") {
			labels = labels[:n-1] // example.co.uk
		}
		name := labels[len(labels)-1]
		var sub []string
		for _, l := range labels[:len(labels)-1] {
			if l != "api" && l != "www" && !regexp.MustCompile(`^v\d+$`).MatchString(l) {
				sub = append(sub, l)
			}
		}
		parts := append([]string{name}, sub...)
		if p := strings.Trim(nonWord.ReplaceAllString(strings.Join(parts, "-"), "-"), "-"); p != "" {
			return p
		}
	}
	return slug(title)
}

// envName turns a scheme name into a secret name: api_key → API_KEY.
func envName(s string) string {
	return strings.Trim(strings.ToUpper(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(s, "_")), "_")
}

func connName(s string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9_]+`).ReplaceAllString(strings.ToLower(s), "_"), "_")
}

var semver = regexp.MustCompile(`^\d+\.\d+\.\d+`)

func version(v string) string {
	if m := semver.FindString(v); m != "" {
		return m
	}
	return "1.0.0"
}
