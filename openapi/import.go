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
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	_ "github.com/httptools/httptools/httpspec" // the manifests are checked with the http kind
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/synth"
)

// Options steer an import.
type Options struct {
	// Operations lists the operationIds to import; nil imports all.
	Operations []string
	// Prefix starts every tool id ("<prefix>.<operation>"); "" derives it
	// from the document's title.
	Prefix string
	// Server replaces the document's first server URL.
	Server string
	// EnvName is the envName of generated secretRefs; "" means "production".
	EnvName string
	// Loader checks every manifest; nil means the zero synth.Loader.
	Loader *synth.Loader
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
}

// Import reads an OpenAPI document (JSON or YAML) and returns manifests for
// its operations.
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
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromData(src)
	if err != nil {
		return nil, fmt.Errorf("not an OpenAPI document: %w", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.0") && !strings.HasPrefix(doc.OpenAPI, "3.1") {
		return nil, fmt.Errorf("openapi %q: only 3.0 and 3.1 are supported", doc.OpenAPI)
	}
	server := opts.Server
	if server == "" {
		if len(doc.Servers) == 0 || doc.Servers[0] == nil {
			return nil, errors.New("the document names no server: pass --server https://api.example.com")
		}
		server = doc.Servers[0].URL
		for name, v := range doc.Servers[0].Variables {
			if v != nil {
				server = strings.ReplaceAll(server, "{"+name+"}", v.Default)
			}
		}
	}
	su, err := url.Parse(server)
	if err != nil || (su.Scheme != "https" && su.Scheme != "http") || su.Host == "" {
		return nil, fmt.Errorf("server %q is not an absolute http(s) URL: pass --server https://api.example.com", server)
	}
	im := &importer{doc: doc, server: strings.TrimRight(server, "/"), host: su.Hostname(), opts: opts, res: &Result{}}
	if doc.Info == nil {
		doc.Info = &openapi3.Info{}
	}
	if im.opts.Prefix == "" {
		im.opts.Prefix = slug(doc.Info.Title)
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
			if err := im.operation(p, method, item, op); err != nil {
				im.warn(method, p, op, err.Error())
			}
		}
	}
	for id := range missing {
		im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("operation %q is not in the document", id))
	}
	sort.Strings(im.res.Warnings)
	return im.res, nil
}

type importer struct {
	doc    *openapi3.T
	server string
	host   string
	opts   Options
	res    *Result
}

func (im *importer) warn(method, path string, op *openapi3.Operation, msg string) {
	name := op.OperationID
	if name == "" {
		name = method + " " + path
	}
	im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("%s: %s", name, msg))
}

var varName = regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$`)

// tool is the manifest as written: fields in a readable order.
type tool struct {
	ID          string           `json:"id"`
	Description string           `json:"description"`
	Version     string           `json:"version"`
	Mutating    bool             `json:"mutating"`
	Input       map[string]any   `json:"input"`
	Output      map[string]any   `json:"output"`
	Effects     []map[string]any `json:"effects"`
	Network     map[string]any   `json:"network"`
	NeedsSpec   map[string]any   `json:"needsSpec,omitempty"`
	Metadata    map[string]any   `json:"metadata"`
	Spec        map[string]any   `json:"spec"`
}

func (im *importer) operation(path, method string, item *openapi3.PathItem, op *openapi3.Operation) error {
	if !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, method) {
		return fmt.Errorf("skipped: a tool's method is GET, POST, PUT, PATCH or DELETE, not %s", method)
	}
	t := tool{
		ID:       im.opts.Prefix + "." + kebab(op.OperationID, method, path),
		Version:  version(im.doc.Info.Version),
		Mutating: method != "GET",
		Network:  map[string]any{"kind": "allowlist", "hosts": []string{im.host}},
		Metadata: map[string]any{"openapi": map[string]any{"operationId": op.OperationID, "method": method, "path": path}},
	}
	t.Description = strings.TrimSpace(op.Summary)
	if d := strings.TrimSpace(op.Description); d != "" && d != t.Description {
		if t.Description != "" {
			t.Description += "\n\n"
		}
		t.Description += d
	}
	if t.Description == "" {
		t.Description = method + " " + path
	}
	effect := "reads"
	if t.Mutating {
		effect = "writes"
	}
	t.Effects = []map[string]any{{"kind": effect, "resource": "external:" + im.host}, {"kind": "network", "resource": "external:" + im.host}}
	props := map[string]any{}
	var required []string
	var query []string
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
		switch p.In {
		case "path", "query":
		default:
			im.warn(method, path, op, fmt.Sprintf("%s parameter %q left out: only path and query parameters are filled from the input", p.In, p.Name))
			continue
		}
		if !varName.MatchString(p.Name) {
			if p.In == "path" {
				return fmt.Errorf("skipped: path parameter %q is not a URI-template name (letters, digits, _)", p.Name)
			}
			im.warn(method, path, op, fmt.Sprintf("query parameter %q left out: not a URI-template name (letters, digits, _)", p.Name))
			continue
		}
		sch := inline(p.Schema, 0)
		if p.Description != "" {
			if _, ok := sch["description"]; !ok {
				sch["description"] = p.Description
			}
		}
		props[p.Name] = sch
		if p.Required || p.In == "path" {
			required = append(required, p.Name)
		}
		if p.In == "query" {
			explode := p.Explode == nil || *p.Explode // form style explodes by default
			if isArray(p.Schema) && explode {
				query = append(query, p.Name+"*")
			} else {
				query = append(query, p.Name)
			}
		}
	}
	tmpl := im.server + path
	if len(query) > 0 {
		tmpl += "{?" + strings.Join(query, ",") + "}"
	}
	spec := map[string]any{"kind": "http", "method": method, "urlTemplate": tmpl}
	if rb := op.RequestBody; rb != nil && rb.Value != nil && method != "GET" {
		mt := jsonContent(rb.Value.Content)
		if mt == nil {
			return errors.New("skipped: the request body is not JSON (form and binary bodies are not imported)")
		}
		body := inline(mt.Schema, 0)
		bprops, _ := body["properties"].(map[string]any)
		if body["type"] != "object" && bprops == nil {
			return errors.New("skipped: the JSON body is not an object, so it cannot be the tool input minus the URL's values")
		}
		for _, k := range sortedKeys(bprops) {
			if _, clash := props[k]; clash {
				im.warn(method, path, op, fmt.Sprintf("body property %q has the name of a parameter: the parameter wins", k))
				continue
			}
			props[k] = bprops[k]
		}
		if rb.Value.Required {
			if req, ok := body["required"].([]string); ok {
				required = append(required, req...)
			}
		}
		spec["requestBody"] = map[string]any{"kind": "json-input"}
	}
	t.Input = map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		t.Input["required"] = required
	}
	im.security(method, path, op, &t, spec)
	im.responses(op, &t, spec)
	t.Spec = spec
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		return err
	}
	if _, err := im.opts.Loader.Load(buf.Bytes()); err != nil {
		return fmt.Errorf("skipped: the generated manifest does not load: %v", err)
	}
	im.res.Manifests = append(im.res.Manifests, Manifest{ID: t.ID, JSON: buf.Bytes()})
	return nil
}

// security maps the first usable security requirement to auth.
func (im *importer) security(method, path string, op *openapi3.Operation, t *tool, spec map[string]any) {
	reqs := im.doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if len(reqs) == 0 {
		return
	}
	var skipped []string
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
			secret := map[string]any{"envName": im.opts.EnvName, "name": envName(name)}
			switch {
			case s.Type == "apiKey" && s.In == "header":
				spec["authorization"] = map[string]any{"kind": "header", "headerName": s.Name, "secretRef": secret}
				return
			case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
				spec["authorization"] = map[string]any{"kind": "bearer", "secretRef": secret}
				return
			case s.Type == "oauth2" || s.Type == "openIdConnect":
				conn := connName(name)
				scopes := req[name]
				if scopes == nil {
					scopes = []string{}
				}
				t.NeedsSpec = map[string]any{"connections": map[string]any{conn: map[string]any{"app": im.opts.Prefix, "permissions": scopes, "as": "person"}}}
				spec["authorization"] = map[string]any{"kind": "connection", "connection": conn}
				return
			}
			skipped = append(skipped, fmt.Sprintf("%s (%s %s)", name, s.Type, s.In+s.Scheme))
		}
	}
	im.warn(method, path, op, "no supported security scheme ("+strings.Join(skipped, ", ")+"): the tool sends no credentials; add authorization by hand")
}

// responses sets successStatus, output and parseJson from the 2xx answers.
func (im *importer) responses(op *openapi3.Operation, t *tool, spec map[string]any) {
	t.Output = map[string]any{}
	if op.Responses == nil {
		return
	}
	var codes []int
	var first *openapi3.Response
	firstCode := 1000
	for code, r := range op.Responses.Map() {
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
			spec["successStatus"] = map[string]any{"min": lo, "max": hi}
		}
	}
	if first == nil || len(first.Content) == 0 {
		return
	}
	if mt := jsonContent(first.Content); mt != nil {
		t.Output = inline(mt.Schema, 0)
		return
	}
	spec["parseJson"] = false
	t.Output = map[string]any{"type": "string"}
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

func isArray(ref *openapi3.SchemaRef) bool {
	return ref != nil && ref.Value != nil && ref.Value.Type != nil && ref.Value.Type.Is("array")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
// path): getPetById → get-pet-by-id, issues/list-for-repo → issues-list-for-repo.
func kebab(opID, method, path string) string {
	if opID == "" {
		opID = strings.ToLower(method) + " " + path
	}
	var b strings.Builder
	for i, r := range opID {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
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
