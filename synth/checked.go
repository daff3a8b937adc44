package synth

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/httptools/httptools/internal/jsoncheck"
)

// Check checks src as Load does — every load-time rule, the schemas
// compiled, the handler synthesized — and keeps nothing: the check of a
// batch of manifests that are written, not served (an import checks every
// tool it writes). With seen, an input or output schema whose bytes
// compiled in an earlier check of the same batch is not compiled again:
// the tools of one API repeat their schemas (a third of Cloudflare's
// schema bytes are another of its tools' schema, the same answer envelope
// on every list). seen may be nil.
func (l *Loader) Check(src []byte, seen *CheckedSchemas) error {
	_, err := l.load(src, seen)
	return err
}

// CheckedSchemas is the schemas Loader.Check found to compile, by their
// bytes: for one batch of manifests, dropped with it. It holds their
// bytes, not what they compiled to (a big import's compiled schemas,
// held together, would double its memory). Safe for concurrent use.
type CheckedSchemas struct {
	mu   sync.Mutex
	m    map[schemaKey]bool // the schema accepts any value (valueSchema.streams)
	meta metaSeen           // the subschemas the meta-schema accepted (metaseen.go)
}

// NewCheckedSchemas returns an empty set.
func NewCheckedSchemas() *CheckedSchemas {
	return &CheckedSchemas{m: map[schemaKey]bool{}, meta: metaSeen{ok: map[digest]struct{}{}}}
}

// schemaKey is what compiling a schema depends on: its bytes, its place
// (which names its problems) and whether it is an MCP tool's (which may
// name another dialect).
type schemaKey struct {
	path string
	mcp  bool
	raw  string
}

// compile is compileSchema, skipped for a schema seen compile before: then
// it returns a stand-in that answers only streams(), for a check that
// keeps nothing.
func (c *CheckedSchemas) compile(raw json.RawMessage, path string, mcp bool, ps *Problems) *valueSchema {
	if c == nil {
		return compileSchema(raw, path, mcp, ps)
	}
	k := schemaKey{path, mcp, string(raw)}
	c.mu.Lock()
	streams, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		if streams {
			return &valueSchema{onlyType: "any"}
		}
		return &valueSchema{}
	}
	vs := c.compileSeen(raw, path, mcp)
	if vs == nil {
		vs = compileSchema(raw, path, mcp, ps)
	}
	if vs != nil {
		c.mu.Lock()
		c.m[k] = vs.streams()
		c.mu.Unlock()
	}
	return vs
}

// compileSeen compiles a pack tool's schema checking against the
// meta-schema only the subschemas not checked before (metaseen.go); nil
// when it cannot vouch for the schema, which compileSchema then compiles.
func (c *CheckedSchemas) compileSeen(raw json.RawMessage, path string, mcp bool) *valueSchema {
	if mcp {
		return nil
	}
	doc, err := jsoncheck.Decode(context.Background(), raw, jsoncheck.MaxDocumentDepth, jsoncheck.Options{})
	obj, ok := doc.(map[string]any)
	if err != nil || !ok {
		return nil
	}
	sch := c.meta.compile(obj, path)
	if sch == nil {
		return nil
	}
	return newValueSchema(sch, raw)
}
