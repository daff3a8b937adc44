package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/httptools/httptools/httpspec"
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

// checkOne checks one manifest against its operation, in steps: read the
// manifest, make an input from the operation's schemas (its parameters,
// its body, what the tool requires), dry-run the tool with what is left
// out and then with the whole input, and compare the request described
// with the operation.
func checkOne(doc *openapi3.T, opts Options, loader *synth.Loader, m Manifest) []Finding {
	c := &checking{doc: doc, opts: opts, id: m.ID}
	tool, ok := c.read(loader, m)
	if !ok {
		return c.findings
	}
	c.parameterInputs()
	c.bodyInputs()
	c.requiredInputs()
	whole, bodyOptional := c.optionalBody()
	c.findings = append(c.findings, leftOut(tool, m.ID, c.input, c.schema.Required, c.params, c.order, whole, bodyOptional)...)
	w, ok := c.describe(tool)
	if !ok {
		return c.findings
	}
	c.compare(w)
	return c.findings
}

// checking is one tool's check: the operation it came from, the input
// made for it, and what has been found so far.
type checking struct {
	doc  *openapi3.T
	opts Options
	id   string

	origin origin              // the operation the manifest names
	item   *openapi3.PathItem  // its path
	op     *openapi3.Operation // the operation itself
	spec   httpspec.Spec       // the manifest's HTTP spec
	schema inputSchema         // the manifest's input schema

	params map[string]*openapi3.Parameter // the operation's parameters, by "in:name"
	order  []string                       // their keys, as the importer reads them
	input  map[string]any                 // the input given to the tool
	values map[string]any                 // "in:name" → the value sent

	bodyVal     any             // the body the input should make
	bodyType    string          // its media type, "" when no body
	credMembers map[string]bool // body members that carry a credential

	findings []Finding
}

// inputSchema is what the checker reads of a tool's input schema.
type inputSchema struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

// flag records a finding of class.
func (c *checking) flag(class, format string, args ...any) {
	c.findings = append(c.findings, Finding{Tool: c.id, Class: class, Detail: fmt.Sprintf(format, args...)})
}

// read decodes m in the manifest's own types (synth's, the importer's
// metadata, httpspec's spec), finds its operation in the document and
// loads the tool; false, with a finding, when one of them fails.
func (c *checking) read(loader *synth.Loader, m Manifest) (*synth.Tool, bool) {
	var man synth.Manifest
	var meta metadata
	if err := json.Unmarshal(m.JSON, &man); err != nil {
		c.flag(ClassDescribe, "the manifest does not decode: %v", err)
		return nil, false
	}
	if err := decodeIfAny(man.Metadata, &meta); err != nil {
		c.flag(ClassDescribe, "the manifest's metadata does not decode: %v", err)
		return nil, false
	}
	if man.Spec != nil {
		if err := decodeIfAny(man.Spec.Raw, &c.spec); err != nil {
			c.flag(ClassDescribe, "the manifest's spec does not decode: %v", err)
			return nil, false
		}
	}
	c.origin = meta.OpenAPI
	if c.item = c.doc.Paths.Find(c.origin.Path); c.item == nil {
		c.flag(ClassPath, "no path %s in the document", c.origin.Path)
		return nil, false
	}
	if c.op = c.item.GetOperation(c.origin.Method); c.op == nil {
		c.flag(ClassMethod, "no %s %s in the document", c.origin.Method, c.origin.Path)
		return nil, false
	}
	tool, err := loader.Load(m.JSON)
	if err != nil {
		c.flag(ClassDescribe, "the manifest does not load: %v", err)
		return nil, false
	}
	decodeIfAny(man.Input, &c.schema) // an input that is no object has no members
	return tool, true
}

// decodeIfAny decodes raw into v, leaving v as it is when raw is empty or
// null.
func decodeIfAny(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// isInput says the tool's input has a member name.
func (c *checking) isInput(name string) bool {
	_, ok := c.schema.Properties[name]
	return ok
}

// describe dry-runs the tool with the whole input; false, with a finding
// unless the tool refuses only a pattern or a format, when it does not
// describe a request.
func (c *checking) describe(tool *synth.Tool) (*wire, bool) {
	raw, _ := json.Marshal(c.input)
	w, err := dryRun(tool, raw)
	if err == nil {
		return w, true
	}
	var e *synth.Error
	if errors.As(err, &e) && e.Code == synth.CodeInputValidationFailed {
		if !strings.Contains(e.Message, "pattern") && !strings.Contains(e.Message, "format") {
			c.flag(ClassRefuses, "the tool refuses an input made from the operation's schemas: %s", clipText(e.Message, 300))
		}
		return nil, false
	}
	c.flag(ClassDescribe, "%v", err)
	return nil, false
}

// compare flags each way the described request differs from the
// operation: method, server, path, query, headers, body, credentials.
func (c *checking) compare(w *wire) {
	if !strings.EqualFold(w.Method, c.origin.Method) {
		c.flag(ClassMethod, "sends %s, the operation is %s", w.Method, c.origin.Method)
	}
	u, err := url.Parse(w.URL)
	if err != nil {
		c.flag(ClassPath, "the URL %q does not parse", w.URL)
		return
	}
	c.comparePath(c.compareServer(u))
	c.compareQuery(u.Query())
	c.compareHeaders(w)
	c.compareBody(w)
	if msg := credentialsMet(c.doc, c.op, w, c.opts.AuthScheme); msg != "" {
		c.flag(ClassCredentials, "%s", msg)
	}
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
