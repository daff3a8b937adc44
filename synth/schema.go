package synth

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed tool.schema.json
var toolSchemaJSON []byte

// ToolSchema returns the JSON Schema of the Tool definition, version 1.3.0,
// that every manifest is checked against: a copy, so the one Load uses
// cannot be changed.
func ToolSchema() []byte { return bytes.Clone(toolSchemaJSON) }

// SchemaVersion is the version of the Tool definition this package implements.
const SchemaVersion = "1.3.0"

var (
	manifestSchemaOnce sync.Once
	manifestSchema     *jsonschema.Schema
	printer            = message.NewPrinter(language.English)
)

func toolSchema() *jsonschema.Schema {
	manifestSchemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(toolSchemaJSON))
		if err != nil {
			panic("synth: embedded tool.schema.json: " + err.Error())
		}
		c := newCompiler()
		if err := c.AddResource("tool.schema.json", doc); err != nil {
			panic("synth: embedded tool.schema.json: " + err.Error())
		}
		manifestSchema = c.MustCompile("tool.schema.json")
	})
	return manifestSchema
}

// noLoader refuses every external reference: manifests are untrusted and a
// schema must never make us read a file or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed: inline it under $defs", url)
}

func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	return c
}

// dialects are the $schema values accepted on transport "mcp" tools.
var dialects = map[string]*jsonschema.Draft{
	"json-schema.org/draft-06/schema":      jsonschema.Draft6,
	"json-schema.org/draft-07/schema":      jsonschema.Draft7,
	"json-schema.org/draft/2019-09/schema": jsonschema.Draft2019,
	packDialect:                            jsonschema.Draft2020,
}

// packDialect is the dialect of pack tools' schemas, as dialectKey spells
// it: Draft 2020-12, the only one the load check and the fast path
// (fastpath.go) accept for them.
const packDialect = "json-schema.org/draft/2020-12/schema"

const dialectList = "draft-06, draft-07, 2019-09 or 2020-12"

func dialectKey(s string) string {
	s = strings.TrimSuffix(s, "#")
	s = strings.TrimPrefix(s, "https://")
	return strings.TrimPrefix(s, "http://")
}

func dialectName(s string) string {
	k := dialectKey(s)
	k = strings.TrimPrefix(k, "json-schema.org/")
	k = strings.TrimPrefix(k, "draft/")
	return strings.TrimSuffix(k, "/schema")
}

// compileSchema compiles a tool's input or output schema. Pack tools use Draft
// 2020-12; transport "mcp" tools use the dialect their $schema names.
func compileSchema(raw json.RawMessage, path string, mcp bool, ps *Problems) *valueSchema {
	doc, err := jsoncheck.Decode(context.Background(), raw, jsoncheck.MaxDocumentDepth, jsoncheck.Options{})
	if err != nil {
		ps.compileError(path, err.Error())
		return nil
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil // the manifest schema already said it must be an object
	}
	if d, ok := obj["$schema"].(string); ok {
		_, known := dialects[dialectKey(d)]
		switch {
		case !mcp && dialectKey(d) != packDialect:
			ps.compileError(JoinPath(path, "$schema"), fmt.Sprintf("pack tools' schemas are Draft 2020-12, but $schema names %s: remove $schema or set it to https://json-schema.org/draft/2020-12/schema", dialectName(d)))
			return nil
		case mcp && !known:
			ps.compileError(JoinPath(path, "$schema"), fmt.Sprintf("dialect %s is not accepted: an MCP tool's schema must be %s", dialectName(d), dialectList))
			return nil
		}
	}
	c := newCompiler()
	url := "tool:///" + path + ".json"
	if err := c.AddResource(url, doc); err != nil {
		ps.compileError(path, "does not compile: "+err.Error())
		return nil
	}
	sch, err := c.Compile(url)
	if err != nil {
		var sve *jsonschema.SchemaValidationError
		var ve *jsonschema.ValidationError
		if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
			seen := map[string]bool{}
			for _, l := range leaves(ve) {
				// The meta-schema's anyOf branches fail together; the
				// first says it best.
				p := joinLocation(path, l.InstanceLocation)
				if !seen[p] {
					seen[p] = true
					ps.compileError(p, "is not a valid JSON Schema: "+describe(l.ErrorKind))
				}
			}
			return nil
		}
		ps.compileError(path, "does not compile as a JSON Schema: "+strings.ReplaceAll(err.Error(), url, path))
		return nil
	}
	return newValueSchema(sch, raw)
}

// leaves returns the innermost errors of a validation error tree: the ones
// that name a field and a rule.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func joinLocation(base string, loc []string) string {
	p := base
	for _, seg := range loc {
		if n, ok := index(seg); ok {
			p = JoinPath(p, n)
		} else {
			p = JoinPath(p, seg)
		}
	}
	return p
}

func index(s string) (int, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// describe words a schema violation as something to change.
func describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return fmt.Sprintf("must be %s, not %s", article(strings.Join(k.Want, " or ")), k.Got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = display(w)
		}
		return fmt.Sprintf("must be one of %s; got %s", strings.Join(want, ", "), display(k.Got))
	case *kind.Const:
		return fmt.Sprintf("must be %s; got %s", display(k.Want), display(k.Got))
	case *kind.MinLength:
		if k.Want == 1 {
			return "must not be empty"
		}
	case *kind.FalseSchema:
		return "is not allowed here"
	}
	return k.LocalizedString(printer)
}

func article(t string) string {
	switch {
	case strings.HasPrefix(t, "object"), strings.HasPrefix(t, "array"), strings.HasPrefix(t, "integer"):
		return "an " + t
	case t == "null":
		return t
	}
	return "a " + t
}

func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// schemaProblems turns the manifest-schema violations of a document into
// problems with field paths.
func schemaProblems(ve *jsonschema.ValidationError, ps *Problems) {
	schemaProblemsIn("", toolSchema(), ve, ps, "the Tool definition is closed")
}

// schemaProblemsAt is schemaProblems for a part of the manifest at base
// (a spec, checked against its kind's schema).
func schemaProblemsAt(base string, sch *jsonschema.Schema, ve *jsonschema.ValidationError, ps *Problems) {
	schemaProblemsIn(base, sch, ve, ps, "the Tool definition is closed")
}

// schemaProblemsIn is schemaProblemsAt in a document whose unknown fields
// closed explains; sch, the document's schema, names the fields an unknown
// one may be a misspelling of.
func schemaProblemsIn(base string, sch *jsonschema.Schema, ve *jsonschema.ValidationError, ps *Problems, closed string) {
	for _, l := range leaves(ve) {
		path := joinLocation(base, l.InstanceLocation)
		switch k := l.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				ps.schemaError(JoinPath(path, m), "is required: add it")
			}
		case *kind.AdditionalProperties:
			for _, f := range k.Properties {
				ps.schemaError(JoinPath(path, f), "unknown field: remove it or fix its spelling ("+closed+")"+didYouMean(sch, l.SchemaURL, f))
			}
		case *kind.Pattern:
			if path == "version" {
				ps.schemaError(path, fmt.Sprintf("must be X.Y.Z, three whole numbers like 1.0.0; got %q", k.Got))
			} else {
				ps.schemaError(path, fmt.Sprintf("must match %s; got %q", k.Want, k.Got))
			}
		case *kind.Minimum:
			ps.schemaError(path, fmt.Sprintf("must be at least %s; got %s", k.Want.RatString(), k.Got.RatString()))
		case *kind.Maximum:
			ps.schemaError(path, fmt.Sprintf("must be at most %s; got %s", k.Want.RatString(), k.Got.RatString()))
		default:
			ps.schemaError(path, describe(l.ErrorKind))
		}
	}
}

// DocumentSchema is a compiled JSON Schema (Draft 2020-12) for one of the
// project's document formats (case files): compile it once, check many.
type DocumentSchema struct {
	sch *jsonschema.Schema
	// What names the document in the message of an unknown field ("a
	// cases file"); "" says the document's schema.
	What string
}

// CompileDocumentSchema compiles schema; external references are refused.
func CompileDocumentSchema(schema []byte) (*DocumentSchema, error) {
	sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := newCompiler()
	if err := c.AddResource("doc.schema.json", sdoc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	sch, err := c.Compile("doc.schema.json")
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &DocumentSchema{sch: sch}, nil
}

// Check validates a document the way manifests are checked (jsoncheck
// first, then the schema) and returns every problem with a field path.
func (d *DocumentSchema) Check(src []byte) []Problem {
	var ps Problems
	doc, ok := parseDocument(src, &ps)
	if !ok {
		return ps.List()
	}
	if err := d.sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			what := d.What
			if what == "" {
				what = "the document"
			}
			schemaProblemsIn("", d.sch, ve, &ps, what+" takes only the fields of its schema")
		}
	}
	return ps.List()
}

// CheckDocument validates a JSON document against a JSON Schema (Draft
// 2020-12) and returns every violation as a Problem with a field path, the
// way manifests are checked. It compiles schema on every call: for many
// documents, use CompileDocumentSchema.
func CheckDocument(schema, src []byte) []Problem {
	d, err := CompileDocumentSchema(schema)
	if err != nil {
		return []Problem{{Message: err.Error()}}
	}
	return d.Check(src)
}
