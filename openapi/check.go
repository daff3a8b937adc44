package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

// The checker: every imported manifest against the operation it came
// from, sending nothing. For each tool it makes an input from the
// operation's own schemas (a value for every parameter and body member),
// asks the tool to describe the request it would send (a dry run), and
// compares that request with what the operation says: method, server,
// path and its encoding, each parameter in its place and style, the body's
// media type and members, the credential. It reads the document itself
// and derives what is expected from it, not from the importer's choices:
// a mistake of the importer shows as a finding of its class.

// Finding classes, one per thing compared.
const (
	ClassMethod      = "method"
	ClassServer      = "server"
	ClassPath        = "path"
	ClassQuery       = "query"
	ClassHeader      = "header"
	ClassCookie      = "cookie"
	ClassMediaType   = "body-media-type"
	ClassBody        = "body-members"
	ClassBodyLeak    = "body-holds-a-parameter"
	ClassCredentials = "credentials"
	ClassRefuses     = "refuses-valid-input"
	ClassRequired    = "requires-read-only"
	ClassDescribe    = "cannot-describe"
	// ClassOptional: what the operation leaves optional, the tool asks
	// for or sends when not given: an optional body required or sent
	// (with its Content-Type) when left out, a query parameter's default
	// sent though the caller gave none (issue 43, classes 1 and 5).
	ClassOptional = "sends-what-was-not-given"
)

// Finding is one difference between a tool's request and its operation.
type Finding struct {
	Tool, Class, Detail string
}

// Report is what Check found.
type Report struct {
	Tools    int
	Flagged  int // tools with at least one finding
	Findings []Finding
	ByClass  map[string]int // tools flagged, by class
}

// String is a line per class, then the total.
func (r *Report) String() string {
	var b strings.Builder
	for _, c := range sortedKeys(r.ByClass) {
		fmt.Fprintf(&b, "%s: %d\n", c, r.ByClass[c])
	}
	fmt.Fprintf(&b, "%d tools checked, %d flagged", r.Tools, r.Flagged)
	return b.String()
}

// Check compares each of manifests (Import's, of src with opts) with its
// operation in src.
func Check(src []byte, opts Options, manifests []Manifest) (*Report, error) {
	var skips []skip
	doc, err := load(src, opts, &skips, nil)
	if err != nil {
		return nil, err
	}
	loader := opts.Loader
	if loader == nil {
		loader = &synth.Loader{}
	}
	rep := &Report{ByClass: map[string]int{}}
	for _, m := range manifests {
		rep.Tools++
		fs := checkOne(doc, opts, loader, m)
		seen := map[string]bool{}
		for _, f := range fs {
			if !seen[f.Class] {
				seen[f.Class] = true
				rep.ByClass[f.Class]++
			}
		}
		if len(fs) > 0 {
			rep.Flagged++
		}
		rep.Findings = append(rep.Findings, fs...)
	}
	return rep, nil
}

// wire is a dry run's request.
type wire struct {
	Method  string
	URL     string
	Headers []string
	Body    json.RawMessage
}

func (w *wire) header(name string) (string, bool) {
	for _, h := range w.Headers {
		k, v, _ := strings.Cut(h, ": ")
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// anySecret resolves every secret to one value; anyToken every connection.
type anySecret struct{}

func (anySecret) ResolveSecret(context.Context, synth.SecretRef) (string, error) {
	return "checker-secret", nil
}

type anyToken struct{}

func (anyToken) AccessToken(context.Context, synth.ConnectionRequest) (string, error) {
	return "checker-token", nil
}

func checkOne(doc *openapi3.T, opts Options, loader *synth.Loader, m Manifest) []Finding {
	var fs []Finding
	flag := func(class, format string, args ...any) {
		fs = append(fs, Finding{Tool: m.ID, Class: class, Detail: fmt.Sprintf(format, args...)})
	}
	var man struct {
		Input    json.RawMessage
		Metadata struct{ OpenAPI origin }
		Spec     struct {
			URLTemplate string
			RequestBody *struct{ Kind, Template string }
		}
	}
	if err := json.Unmarshal(m.JSON, &man); err != nil {
		flag(ClassDescribe, "the manifest does not decode: %v", err)
		return fs
	}
	o := man.Metadata.OpenAPI
	item := doc.Paths.Find(o.Path)
	if item == nil {
		flag(ClassPath, "no path %s in the document", o.Path)
		return fs
	}
	op := item.GetOperation(o.Method)
	if op == nil {
		flag(ClassMethod, "no %s %s in the document", o.Method, o.Path)
		return fs
	}
	tool, err := loader.Load(m.JSON)
	if err != nil {
		flag(ClassDescribe, "the manifest does not load: %v", err)
		return fs
	}
	var inProps struct {
		Properties map[string]json.RawMessage
		Required   []string
	}
	json.Unmarshal(man.Input, &inProps)

	// The operation's parameters, and a value for each.
	params := map[string]*openapi3.Parameter{}
	order := mergeParams(params, item, op) // as the importer reads them
	input := map[string]any{}
	values := map[string]any{}                     // "in:name" → the value sent
	credentials := &importer{doc: doc, opts: opts} // what counts as a credential parameter is the importer's rule
	memberOf := func(p *openapi3.Parameter) string {
		for _, cand := range []string{p.Name, headerVar(p.Name), templateName(p.Name)} {
			if _, ok := inProps.Properties[cand]; ok {
				return cand
			}
		}
		return ""
	}
	for _, k := range order {
		p := params[k]
		member := memberOf(p)
		if member == "" {
			idempotency := p.In == "header" && strings.EqualFold(p.Name, "Idempotency-Key") // the kernel's key fills it
			if p.Required && !idempotency && !credentials.isCredential(p) {
				flag(classOfPlace(p.In), "required %s parameter %q is not an input of the tool", p.In, p.Name)
			}
			continue
		}
		v := sample(schemaOf(p.Schema), 0)
		if obj, ok := v.(map[string]any); ok && p.Style == "deepObject" {
			// A deepObject is a member per key: name[key].
			for dk, dv := range obj {
				if _, ok := inProps.Properties[p.Name+"["+dk+"]"]; ok {
					input[p.Name+"["+dk+"]"] = dv
				}
			}
			values[k] = v
			continue
		}
		input[member], values[k] = v, v
	}
	// The body, and its members.
	var bodyVal any
	var bodyType string
	credMembers := map[string]bool{} // body members that carry a credential, by the importer's rule
	if rb := op.RequestBody; rb != nil && rb.Value != nil && len(rb.Value.Content) > 0 {
		for _, ct := range sortedKeys(rb.Value.Content) {
			bodyType = ct
			if strings.Contains(ct, "json") {
				break
			}
		}
		mt := rb.Value.Content[bodyType]
		if base, _, _ := strings.Cut(bodyType, ";"); strings.TrimSpace(base) == "application/json-patch+json" {
			// The media type says what the body is: RFC 6902's list.
			bodyVal = []any{map[string]any{"op": "add", "path": "/a", "value": "v"}}
		}
		whole := man.Spec.RequestBody != nil && man.Spec.RequestBody.Kind == "text" && strings.HasPrefix(man.Spec.RequestBody.Template, "{") && !strings.Contains(man.Spec.RequestBody.Template, "=")
		if bodyVal == nil && schemaOf(mt.Schema) == nil && strings.Contains(bodyType, "json") {
			bodyVal = map[string]any{} // any JSON: the smallest object
		} else if bodyVal == nil {
			bodyVal = sample(schemaOf(mt.Schema), 0)
		}
		if obj, ok := bodyVal.(map[string]any); ok {
			header := credentials.headerCredential(op)
			members := bodyMembers(mt)
			for k := range obj {
				if schema := members.of(k); bodyCredential(k, schema) {
					credMembers[k] = true
					if _, isInput := inProps.Properties[k]; isInput && (!header || sameAsHeader(k, schema)) {
						flag(ClassCredentials, "the input asks the model for the credential %q, which the API takes in the body", k)
					}
				}
			}
		}
		if whole {
			name := strings.Trim(man.Spec.RequestBody.Template, "{}")
			input[name] = bodyVal
		} else if obj, ok := bodyVal.(map[string]any); ok {
			for k, v := range obj {
				if _, isInput := inProps.Properties[k]; isInput {
					input[k] = v
				} else if !credMembers[k] && (bodyRequired(mt, k) || !strings.ContainsAny(k, ".{}&=")) {
					// An optional member whose name no placeholder can
					// spell (Twilio's Parameter1.Name) is left out with a
					// warning: the tool cannot set it, and sends the rest.
					flag(ClassBody, "body member %q is not an input of the tool", k)
				}
			}
		}
	}
	// Members the tool requires that the operation marks read-only (and
	// does not require itself), the URL's own aside.
	for _, r := range inProps.Required {
		if rb := op.RequestBody; rb != nil && rb.Value != nil && !strings.Contains(man.Spec.URLTemplate, r) {
			for _, mt := range rb.Value.Content {
				if s := schemaOf(mt.Schema); s != nil && readOnlyMember(s, r, 0) {
					flag(ClassRequired, "the tool requires %q, which the API marks read-only", r)
				}
			}
		}
		if _, ok := input[r]; !ok {
			input[r] = "x"
		}
	}
	whole := ""
	if rb := man.Spec.RequestBody; rb != nil && rb.Kind == "text" && strings.HasPrefix(rb.Template, "{") && strings.HasSuffix(rb.Template, "}") && strings.Count(rb.Template, "{") == 1 {
		whole = strings.Trim(rb.Template, "{}")
	}
	bodyOptional := op.RequestBody == nil || op.RequestBody.Value == nil || !op.RequestBody.Value.Required
	if whole != "" && bodyOptional && slices.Contains(inProps.Required, whole) {
		flag(ClassOptional, "the tool requires %q, the request body, which the operation leaves optional", whole)
	}
	fs = append(fs, leftOut(tool, m.ID, input, inProps.Required, params, order, whole, bodyOptional)...)
	raw, _ := json.Marshal(input)
	described, err := tool.DryRun(context.Background(), synth.CallContext{Tenant: "check", Person: "p", Secrets: auth.Chain{anySecret{}}, Connections: anyToken{}}, raw, synth.InvokeOptions{})
	if err != nil {
		var e *synth.Error
		if errors.As(err, &e) && e.Code == synth.CodeInputValidationFailed {
			if !strings.Contains(e.Message, "pattern") && !strings.Contains(e.Message, "format") {
				flag(ClassRefuses, "the tool refuses an input made from the operation's schemas: %s", clipText(e.Message, 300))
			}
			return fs
		}
		flag(ClassDescribe, "%v", err)
		return fs
	}
	var w wire
	json.Unmarshal(described, &w)

	if !strings.EqualFold(w.Method, o.Method) {
		flag(ClassMethod, "sends %s, the operation is %s", w.Method, o.Method)
	}
	u, err := url.Parse(w.URL)
	if err != nil {
		flag(ClassPath, "the URL %q does not parse", w.URL)
		return fs
	}
	// Server: the URL starts with one of the operation's servers (its
	// own, its path's, the document's), or --server.
	servers := op.Servers
	if servers == nil || len(*servers) == 0 {
		servers = &item.Servers
	}
	if len(*servers) == 0 {
		servers = &doc.Servers
	}
	var bases []string
	for _, s := range *servers {
		bases = append(bases, serverURL(s))
	}
	if opts.Server != "" {
		bases = append(bases, opts.Server)
		for _, s := range *servers {
			if rel := serverURL(s); strings.HasPrefix(rel, "/") {
				bases = append(bases, strings.TrimRight(opts.Server, "/")+rel)
			}
		}
	}
	path := u.EscapedPath()
	matched := false
	// The longest first: --server with the document's relative path
	// before --server alone.
	slices.SortStableFunc(bases, func(a, b string) int { return len(b) - len(a) })
	for _, b := range bases {
		su, err := url.Parse(b)
		if err != nil || su.Host == "" {
			continue
		}
		if strings.EqualFold(su.Host, u.Host) && strings.HasPrefix(path, strings.TrimSuffix(su.EscapedPath(), "/")) {
			path = strings.TrimPrefix(path, strings.TrimSuffix(su.EscapedPath(), "/"))
			matched = true
			break
		}
	}
	if !matched && len(bases) > 0 {
		flag(ClassServer, "sends to %s://%s%s, which is under none of the operation's servers %v", u.Scheme, u.Host, u.EscapedPath(), bases)
	}
	// Path: each {name} the expected encoding of its value.
	want := o.Path
	if i := strings.IndexAny(want, "?#"); i >= 0 {
		want = want[:i]
	}
	for _, k := range order {
		p := params[k]
		if p.In != "path" {
			continue
		}
		v, ok := values[k]
		if !ok {
			continue
		}
		want = strings.ReplaceAll(want, "{"+p.Name+"}", pathValue(p, v))
	}
	if escapeLiterals(want) != path && want != path {
		if dec, err := url.PathUnescape(path); err != nil || dec != want {
			flag(ClassPath, "sends path %s, the operation's is %s", path, want)
		}
	}
	// Query: each value given, in its style.
	q := u.Query()
	for _, k := range order {
		p := params[k]
		v, ok := values[k]
		if p.In != "query" || !ok {
			continue
		}
		if msg := queryMatches(p, v, q); msg != "" {
			flag(ClassQuery, "query parameter %q: %s", p.Name, msg)
		}
	}
	// Headers: each value given.
	for _, k := range order {
		p := params[k]
		v, ok := values[k]
		if p.In != "header" || !ok {
			continue
		}
		got, sent := w.header(p.Name)
		if !sent || got != scalarText(v) {
			flag(ClassHeader, "header %q: sent %q (present %v), want %q", p.Name, got, sent, scalarText(v))
		}
	}
	// Body: its media type and its members; no parameter in it.
	noBody := len(w.Body) == 0 || string(w.Body) == "null" || string(w.Body) == `""`
	onlyCreds := func(obj map[string]any) bool {
		for k := range obj {
			if !credMembers[k] {
				return false
			}
		}
		return true
	}
	if empty, _ := bodyVal.(map[string]any); bodyType != "" && noBody && empty != nil && onlyCreds(empty) {
		// An empty object body (a form of no members, Stripe's deletes),
		// or one of credentials only, which the header carries (Slack's
		// users.deletePhoto): nothing to send.
	} else if bodyType != "" && (bodyVal != nil || !noBody) {
		got, _ := w.header("Content-Type")
		gotBase, _, _ := strings.Cut(got, ";")
		if !strings.EqualFold(strings.TrimSpace(gotBase), bodyType) && !(bodyType == "*/*") {
			flag(ClassMediaType, "sends Content-Type %q, the operation takes %s", got, bodyType)
		}
		if strings.Contains(bodyType, "json") {
			var sent any
			if err := json.Unmarshal(w.Body, &sent); err != nil {
				// A dry run shows a non-JSON body as a JSON string.
				var s string
				if json.Unmarshal(w.Body, &s) == nil && json.Unmarshal([]byte(s), &sent) != nil {
					flag(ClassBody, "the body is not JSON")
				}
			}
			if obj, ok := bodyVal.(map[string]any); ok {
				so, _ := sent.(map[string]any)
				for k, v := range obj {
					if credMembers[k] {
						continue
					}
					if got, ok := so[k]; !ok || !holds(got, v) {
						flag(ClassBody, "body member %q: sent %s, want %s", k, clipText(jsonText(got), 80), clipText(jsonText(v), 80))
					}
				}
				for k := range so {
					if _, ok := obj[k]; ok {
						continue
					}
					for _, pk := range order {
						if p := params[pk]; p.In != "body" && (k == p.Name || k == headerVar(p.Name)) {
							flag(ClassBodyLeak, "the body holds %q, the %s parameter %q", k, p.In, p.Name)
						}
					}
				}
			} else if bodyVal != nil && !holds(sent, bodyVal) {
				flag(ClassBody, "sends body %s, want %s", clipText(jsonText(sent), 80), clipText(jsonText(bodyVal), 80))
			}
		}
	}
	// Credentials: one of the operation's security requirements is met.
	if msg := credentialsMet(doc, op, &w, opts.AuthScheme); msg != "" {
		flag(ClassCredentials, "%s", msg)
	}
	return fs
}

func classOfPlace(in string) string {
	switch in {
	case "path":
		return ClassPath
	case "query":
		return ClassQuery
	case "header":
		return ClassHeader
	}
	return ClassCookie
}

func schemaOf(ref *openapi3.SchemaRef) *openapi3.Schema {
	if ref == nil {
		return nil
	}
	return ref.Value
}

// memberSchemas are a body's members, through allOf, collected once.
type memberSchemas map[string]*openapi3.Schema

func bodyMembers(mt *openapi3.MediaType) memberSchemas {
	props, req := memberSchemas{}, []string{}
	collect(schemaOf(mt.Schema), props, &req, 0)
	return props
}

// of is what the importer's credential rule reads of member name: its
// description.
func (m memberSchemas) of(name string) map[string]any {
	if p := m[name]; p != nil {
		return map[string]any{"description": p.Description}
	}
	return map[string]any{}
}

// readOnlyMember says s has a read-only member name, through allOf.
func readOnlyMember(s *openapi3.Schema, name string, depth int) bool {
	props, req := map[string]*openapi3.Schema{}, []string{}
	collect(s, props, &req, depth)
	return props[name] != nil && props[name].ReadOnly && !slices.Contains(req, name)
}

// holds says sent holds want: the same scalars, and for objects at
// least want's members (the tool fills its schema's defaults too).
func holds(sent, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		s, ok := sent.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !holds(s[k], v) {
				return false
			}
		}
		return true
	case []any:
		s, ok := sent.([]any)
		if !ok || len(s) != len(w) {
			return false
		}
		for i := range w {
			if !holds(s[i], w[i]) {
				return false
			}
		}
		return true
	}
	return jsonText(sent) == jsonText(want)
}

// sample is a value s accepts (as far as its type, enum, format, bounds
// and required members say).
func sample(s *openapi3.Schema, depth int) any {
	if s == nil || depth > 6 {
		return "x"
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	if s.Const != nil {
		return s.Const
	}
	for _, part := range s.AllOf {
		// An allOf whose part is not an object (an array, a string, with
		// a description beside it): a value of that part.
		if ps := schemaOf(part); ps != nil && ps.Type != nil && len(ps.Type.Slice()) > 0 && !ps.Type.Is("object") {
			return sample(ps, depth+1)
		}
	}
	if len(s.AllOf) > 0 {
		props, req := map[string]*openapi3.Schema{}, []string{}
		collect(s, props, &req, 0)
		if len(props) == 0 && (s.Type == nil || !s.Type.Is("object")) {
			// No members anywhere: an allOf of one shape (Elasticsearch's
			// Duration, one of several strings, or EpochTime, a number
			// through two references).
			for _, part := range s.AllOf {
				if ps := schemaOf(part); ps != nil {
					return sample(ps, depth+1)
				}
			}
		}
		out := map[string]any{}
		for _, k := range sortedKeys(props) {
			// Read-only, required or not: the server's to set, and the
			// importer leaves it out of the input (issue 43, class 8).
			if props[k].ReadOnly || depth > 0 && !slices.Contains(req, k) {
				continue
			}
			out[k] = sample(props[k], depth+1)
		}
		for _, part := range s.AllOf {
			// A part that is one of several objects (Cloudflare's app
			// config: account_app_id or managed_app_id): the first's
			// members, over the other parts' (an enum of one beside a
			// plain string: Cloudflare's deployment strategy).
			ps := schemaOf(part)
			if ps == nil {
				continue
			}
			for _, alts := range []openapi3.SchemaRefs{ps.OneOf, ps.AnyOf} {
				if len(alts) == 0 {
					continue
				}
				if o, ok := sample(schemaOf(alts[0]), depth+1).(map[string]any); ok {
					for k, v := range o {
						out[k] = v
					}
				}
			}
		}
		fillMinProperties(out, props, minProperties(s, 0), depth)
		return out
	}
	if alts := append(slices.Clip(s.OneOf), s.AnyOf...); len(alts) > 0 {
		v := sample(schemaOf(alts[0]), depth+1)
		if o, ok := v.(map[string]any); ok && len(s.Required) > 0 {
			// Members the schema requires beside its branches, which
			// declare them (Cloudflare's DNS record): the writable ones.
			props, req := map[string]*openapi3.Schema{}, []string{}
			collect(schemaOf(alts[0]), props, &req, 0)
			for _, r := range s.Required {
				if p := props[r]; p != nil && !p.ReadOnly && o[r] == nil {
					o[r] = sample(p, depth+1)
				}
			}
		}
		return v
	}
	typ := ""
	if s.Type != nil {
		for _, t := range s.Type.Slice() {
			if t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == "" && len(s.Properties) > 0 {
		typ = "object"
	}
	switch typ {
	case "integer":
		if s.Min != nil {
			return int64(*s.Min) + 1
		}
		return 7
	case "number":
		if s.Min != nil {
			return *s.Min + 1
		}
		return 1.5
	case "boolean":
		return true
	case "array":
		// Two values where two may be sent: one would read the same in
		// every style (a list joined by commas, or repeated).
		n := max(int(s.MinItems), 2)
		if s.MaxItems != nil && int(*s.MaxItems) < n {
			n = max(int(*s.MaxItems), 1)
		}
		out := make([]any, n)
		for i := range out {
			out[i] = nth(sample(schemaOf(s.Items), depth+1), schemaOf(s.Items), i)
		}
		if n > 1 && jsonText(out[0]) == jsonText(out[1]) && s.MinItems <= 1 {
			return out[:1] // no second value of its own (uniqueItems would refuse it)
		}
		return out
	case "object":
		o, _ := sampleObject(s, depth)
		return o
	}
	switch s.Format {
	case "date-time":
		return "2024-01-02T03:04:05Z"
	case "date":
		return "2024-01-02"
	case "uuid":
		return "123e4567-e89b-42d3-a456-426614174000"
	case "email":
		return "a@example.com"
	case "uri", "url":
		return "https://example.com/a"
	}
	n := max(int(s.MinLength), 3)
	if s.MaxLength != nil && int(*s.MaxLength) < n {
		n = max(int(*s.MaxLength), 1)
	}
	return strings.Repeat("v", n)
}

// nth makes the i-th item of a sample list differ from the others where
// its schema lets it: another enum value, another number, another word.
func nth(v any, s *openapi3.Schema, i int) any {
	if i == 0 {
		return v
	}
	if s != nil && len(s.Enum) > 0 {
		return s.Enum[i%len(s.Enum)]
	}
	switch x := v.(type) {
	case string:
		if s == nil || s.Format == "" && s.Pattern == "" && (s.MaxLength == nil || len(x)+1 <= int(*s.MaxLength)) {
			return x + strings.Repeat("w", i)
		}
	case int:
		return x + i
	case int64:
		return x + int64(i)
	case float64:
		return x + float64(i)
	}
	return v
}

// bodyRequired says the body of mt requires member k.
func bodyRequired(mt *openapi3.MediaType, k string) bool {
	props, req := map[string]*openapi3.Schema{}, []string{}
	collect(schemaOf(mt.Schema), props, &req, 0)
	return slices.Contains(req, k)
}

// collect gathers the members of s and its allOf parts, and the names any
// part requires.
func collect(s *openapi3.Schema, props map[string]*openapi3.Schema, req *[]string, depth int) {
	if s == nil || depth > maxDepth {
		return
	}
	for k, p := range s.Properties {
		if p != nil && p.Value != nil {
			props[k] = p.Value
		}
	}
	*req = append(*req, s.Required...)
	for _, part := range s.AllOf {
		collect(schemaOf(part), props, req, depth+1)
	}
}

// sampleObject is a value of every writable member of s at the top, and
// of the required ones below.
func sampleObject(s *openapi3.Schema, depth int) (map[string]any, bool) {
	out := map[string]any{}
	for _, k := range sortedKeys(s.Properties) {
		p := schemaOf(s.Properties[k])
		if p == nil || p.ReadOnly {
			continue
		}
		if depth > 0 && !slices.Contains(s.Required, k) {
			continue
		}
		out[k] = sample(p, depth+1)
	}
	props := map[string]*openapi3.Schema{}
	for k, p := range s.Properties {
		if p != nil && p.Value != nil {
			props[k] = p.Value
		}
	}
	fillMinProperties(out, props, s.MinProps, depth)
	if ap := schemaOf(s.AdditionalProperties.Schema); ap != nil {
		// A map that must hold some keys (Elasticsearch's highlight
		// fields, its indices_boost): keys of its own.
		for i := 0; uint64(len(out)) < s.MinProps; i++ {
			out[fmt.Sprintf("key%d", i)] = sample(ap, depth+1)
		}
	}
	return out, len(s.Properties) > 0
}

// fillMinProperties adds optional writable members to out until it has
// min: a minProperties that asks for more than the required ones (the
// query of Elasticsearch's count, one of its many kinds).
func fillMinProperties(out map[string]any, props map[string]*openapi3.Schema, min uint64, depth int) {
	for _, k := range sortedKeys(props) {
		if uint64(len(out)) >= min {
			return
		}
		if p := props[k]; !p.ReadOnly && out[k] == nil {
			out[k] = sample(p, depth+1)
		}
	}
}

// minProperties is the largest minProperties of s and its allOf parts.
func minProperties(s *openapi3.Schema, depth int) uint64 {
	if s == nil || depth > maxDepth {
		return 0
	}
	n := s.MinProps
	for _, part := range s.AllOf {
		n = max(n, minProperties(schemaOf(part), depth+1))
	}
	return n
}

// scalarText is a value as a URL or a header spells it.
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalarText(e)
		}
		return strings.Join(parts, ",")
	}
	return jsonText(v)
}

// pathValue is a path parameter's value in its style.
func pathValue(p *openapi3.Parameter, v any) string {
	text := url.PathEscape(scalarText(v))
	switch p.Style {
	case "label":
		return "." + text
	case "matrix":
		return ";" + p.Name + "=" + text
	}
	return text
}

// queryMatches says how q does not carry v as p's style says, "" when it
// does.
func queryMatches(p *openapi3.Parameter, v any, q url.Values) string {
	style := p.Style
	if style == "" {
		style = "form"
	}
	explode := style == "form"
	if p.Explode != nil {
		explode = *p.Explode
	}
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalarText(e)
		}
		switch {
		case style == "form" && explode:
			if got := q[p.Name]; strings.Join(got, "\x00") != strings.Join(parts, "\x00") {
				return fmt.Sprintf("sent %q, want each value repeated %q", got, parts)
			}
			return ""
		case style == "form":
			if got := q.Get(p.Name); got != strings.Join(parts, ",") {
				return fmt.Sprintf("sent %q, want %q (comma-joined)", got, strings.Join(parts, ","))
			}
			return ""
		case style == "pipeDelimited":
			if got := q.Get(p.Name); got != strings.Join(parts, "|") {
				return fmt.Sprintf("sent %q, want %q", got, strings.Join(parts, "|"))
			}
			return ""
		case style == "spaceDelimited":
			if got := q.Get(p.Name); got != strings.Join(parts, " ") {
				return fmt.Sprintf("sent %q, want %q", got, strings.Join(parts, " "))
			}
			return ""
		}
	case map[string]any:
		if style == "deepObject" {
			for k, e := range x {
				if got := q.Get(p.Name + "[" + k + "]"); got != scalarText(e) {
					return fmt.Sprintf("%s[%s] sent %q, want %q", p.Name, k, got, scalarText(e))
				}
			}
			return ""
		}
		if explode {
			for k, e := range x {
				if got := q.Get(k); got != scalarText(e) {
					return fmt.Sprintf("member %s sent %q, want %q", k, got, scalarText(e))
				}
			}
			return ""
		}
		return "" // form, not exploded: k,v pairs joined; not compared
	}
	if got, ok := q[p.Name]; !ok || len(got) != 1 || got[0] != scalarText(v) {
		return fmt.Sprintf("sent %q, want %q", got, scalarText(v))
	}
	return ""
}

// credentialsMet says how the request meets none of the operation's
// security requirements, "" when it meets one (or needs none).
func credentialsMet(doc *openapi3.T, op *openapi3.Operation, w *wire, authScheme string) string {
	reqs := doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if len(reqs) == 0 {
		return ""
	}
	if authScheme != "" && !slices.ContainsFunc(reqs, func(r openapi3.SecurityRequirement) bool { return len(r) == 0 }) {
		// The operator's scheme (--auth-scheme), for every operation
		// that needs a credential.
		reqs = openapi3.SecurityRequirements{{authScheme: {}}}
	}
	var wanted []string
	for _, req := range reqs {
		if len(req) == 0 {
			return ""
		}
		met := true
		for name := range req {
			var s *openapi3.SecurityScheme
			if doc.Components != nil && doc.Components.SecuritySchemes[name] != nil {
				s = doc.Components.SecuritySchemes[name].Value
			}
			if s == nil {
				met = false
				continue
			}
			switch {
			case s.Type == "apiKey" && s.In == "header":
				if _, ok := w.header(s.Name); !ok {
					met = false
				}
			case s.Type == "apiKey":
				met = false // in the query or a cookie: a tool cannot send it
			default: // http, oauth2, openIdConnect: the Authorization header
				if _, ok := w.header("Authorization"); !ok {
					met = false
				}
			}
		}
		if met {
			return ""
		}
		wanted = append(wanted, strings.Join(sortedKeys(req), "+"))
	}
	return "sends none of the credentials the operation asks for (" + strings.Join(wanted, " or ") + ")"
}

// serverURL is a server's URL with its variables' defaults.
func serverURL(s *openapi3.Server) string {
	if s == nil {
		return ""
	}
	u := s.URL
	for name, v := range s.Variables {
		if v != nil {
			u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
		}
	}
	return u
}

// leftOut dry-runs the tool with its required members only (the values
// of input) and flags what it sends that the caller did not give: a
// query parameter (a default filled in), or a body, or its Content-Type,
// where the operation's body is optional and the tool's is one member.
func leftOut(tool *synth.Tool, id string, input map[string]any, required []string, params map[string]*openapi3.Parameter, order []string, whole string, bodyOptional bool) []Finding {
	min := map[string]any{}
	for _, r := range required {
		if v, ok := input[r]; ok {
			min[r] = v
		} else {
			min[r] = "x"
		}
	}
	raw, _ := json.Marshal(min)
	described, err := tool.DryRun(context.Background(), synth.CallContext{Tenant: "check", Person: "p", Secrets: auth.Chain{anySecret{}}, Connections: anyToken{}}, raw, synth.InvokeOptions{})
	if err != nil {
		return nil // the full input's dry run says why
	}
	var w wire
	json.Unmarshal(described, &w)
	var fs []Finding
	if u, err := url.Parse(w.URL); err == nil {
		q := u.Query()
		for _, k := range order {
			p := params[k]
			if p.In == "query" && !p.Required && q.Has(p.Name) && !slices.Contains(required, p.Name) {
				fs = append(fs, Finding{Tool: id, Class: ClassOptional, Detail: fmt.Sprintf("query parameter %q is sent (%s=%s) though the input leaves it out", p.Name, p.Name, q.Get(p.Name))})
			}
		}
	}
	if whole != "" && bodyOptional && !slices.Contains(required, whole) {
		ct, hasCT := w.header("Content-Type")
		if len(w.Body) > 0 && string(w.Body) != "null" || hasCT {
			fs = append(fs, Finding{Tool: id, Class: ClassOptional, Detail: fmt.Sprintf("the input leaves out the optional body %q, and the tool sends %s with Content-Type %q", whole, clipText(string(w.Body), 40), ct)})
		}
	}
	return fs
}
