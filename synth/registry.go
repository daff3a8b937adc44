package synth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/redact"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"io"
	"sort"
	"sync"
)

// Handler runs the calls of one synthesized tool. It gets input that is
// already validated (defaults filled) and returns the output before output
// validation. Errors should be *Error; any other error becomes a
// handler-error. Implementations must be safe for concurrent use.
type Handler interface {
	Handle(ctx context.Context, call *Call) (*Output, error)
}

// Call is one invocation handed to a Handler.
type Call struct {
	// Tool is the tool being called (its manifest, its schemas).
	Tool    *Tool
	Context CallContext
	Input   json.RawMessage // a JSON object, validated, defaults filled
	// Options are the caller's settings for this call (timeout, logger,
	// log attributes); Context.IdempotencyKey already has the option's key.
	Options InvokeOptions
	// Secrets is the call's redactor: a handler adds every secret value it
	// resolves, and Invoke redacts them from everything it returns that is
	// the library's own words (error messages, bodies, violations, dry
	// runs), in every spelling package redact knows.
	Secrets *redact.Set
}

// Output is what a handler returns.
type Output struct {
	JSON     json.RawMessage // the output value, exactly as it will be returned
	Status   int             // upstream status, 0 if none
	Attempts int             // upstream attempts, 0 if none
	// Streamed says the value went to the call's OutputSink as it arrived
	// (checked as it went); JSON is then nil.
	Streamed bool
	// MediaType, when set, says the upstream answered bytes of that type
	// (an image, a sound, a document): JSON is then their base64 text, a
	// JSON string, and MCP offers them as an image, audio or embedded
	// resource block.
	MediaType string

	// checked is the JSON CheckOutput accepted: Invoke does not check the
	// same bytes twice, and checks any others.
	checked []byte
}

// CheckOutput checks raw as Invoke checks a handler's output (one
// well-formed JSON value, no member named twice, within the nesting and
// number limits; strings need not be valid UTF-8) and returns an Output
// holding it, which Invoke does not check again. A handler that must check
// the value itself (to word its own error) uses it to spare the second
// pass; any other Output is checked by Invoke. The error is a
// *jsoncheck.Error whose message says what is wrong and where.
func CheckOutput(raw json.RawMessage) (*Output, error) {
	if err := jsoncheck.CheckWith(raw, jsoncheck.MaxDepth, jsoncheck.Options{AllowInvalidUTF8: true}); err != nil {
		return nil, err
	}
	return &Output{JSON: raw, checked: raw}, nil
}

// wellFormed says o.JSON is what CheckOutput accepted: the same bytes.
func (o *Output) wellFormed() bool {
	return len(o.checked) == len(o.JSON) && (len(o.JSON) == 0 || &o.checked[0] == &o.JSON[0])
}

// OutputSink takes a call's output as it arrives (InvokeOptions.Sink), for
// a tool whose output needs no whole-value check (Tool.StreamsOutput): a big answer then passes
// through instead of being held. Begin is called once, when the upstream
// has answered with success and the value starts; what the handler writes
// to the writer is the output's JSON. A handler that finds the value broken
// after Begin returns an error: the sink's owner must then abandon what it
// sent (a REST response is cut off, never completed).
// An OutputSink belongs to one call and need not be safe for concurrent use: Begin is called at most once, by that call.
type OutputSink interface {
	Begin(status int) io.Writer
}

// Build is what a Synthesizer gets: the manifest, load options and the
// problems list it adds its findings to (paths from the manifest root, such as
// "spec.urlTemplate").
type Build struct {
	Manifest *Manifest
	Options  LoadOptions
	Problems *Problems
	// StreamsOutput says the output schema accepts any value (or there is
	// none): the handler may pass the output to a call's OutputSink as it
	// arrives (Tool.StreamsOutput).
	StreamsOutput bool
	// Endpoint is the parsed mcpEndpoint of a tool with transport "mcp",
	// nil for any other.
	Endpoint *MCPEndpoint
}

// Synthesizer turns the spec of one kind into a Handler. It reports every
// problem it finds on b.Problems; when it reports an error, its handler is
// discarded.
// It must be safe for concurrent use: loads and reloads may synthesize at once.
type Synthesizer interface {
	Synthesize(b *Build) Handler
}

// SpecSchemer is a Synthesizer that offers a JSON Schema (Draft 2020-12,
// no external references) for the spec of its kind. Register compiles it
// once; Load checks every manifest's spec against it, with field paths from
// the manifest's root ("spec.method is required: add it") and the words it
// uses for the rest of the manifest, before Synthesize runs. Synthesize
// still sees the manifest when the spec is refused (to add its own
// findings), and may skip a part the schema refused: Build.Problems
// SchemaRefused("spec.headers") says so.
// Like every Synthesizer it must be safe for concurrent use.
type SpecSchemer interface {
	Synthesizer
	SpecSchema() []byte
}

// SynthesizerFunc adapts a function to a Synthesizer.
type SynthesizerFunc func(b *Build) Handler

// Synthesize calls f(b).
func (f SynthesizerFunc) Synthesize(b *Build) Handler { return f(b) }

// Registry maps spec kinds to synthesizers. The zero value is an empty
// registry ready to use; it is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	kinds   map[string]Synthesizer
	schemas map[string]*jsonschema.Schema // of the SpecSchemers
}

// defaultRegistry is the registry Load uses.
var defaultRegistry = &Registry{}

// DefaultRegistry returns the registry Load (and a Loader without one)
// uses. Package httpspec registers the "http" kind in it when imported.
// The registry is fixed; what it holds grows only by Register.
func DefaultRegistry() *Registry { return defaultRegistry }

// ErrDuplicateKind is returned when a kind is registered twice.
var ErrDuplicateKind = errors.New("kind already registered")

// Register adds a synthesizer for kind. An empty kind, a nil synthesizer or a
// kind registered before is an error.
func (r *Registry) Register(kind string, s Synthesizer) error {
	if kind == "" {
		return errors.New("synth: register: empty kind")
	}
	if s == nil {
		return fmt.Errorf("synth: register %q: nil synthesizer", kind)
	}
	var sch *jsonschema.Schema
	if ss, ok := s.(SpecSchemer); ok {
		var err error
		if sch, err = compileSpecSchema(kind, ss.SpecSchema()); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.kinds[kind]; dup {
		return fmt.Errorf("synth: register %q: %w", kind, ErrDuplicateKind)
	}
	if r.kinds == nil {
		r.kinds = map[string]Synthesizer{}
		r.schemas = map[string]*jsonschema.Schema{}
	}
	r.kinds[kind] = s
	if sch != nil {
		r.schemas[kind] = sch
	}
	return nil
}

// specSchema returns the compiled spec schema of kind, or nil.
func (r *Registry) specSchema(kind string) *jsonschema.Schema {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.schemas[kind]
}

func compileSpecSchema(kind string, schema []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("synth: register %q: its spec schema is not JSON: %w", kind, err)
	}
	c := newCompiler()
	if err := c.AddResource("spec.schema.json", doc); err != nil {
		return nil, fmt.Errorf("synth: register %q: its spec schema: %w", kind, err)
	}
	sch, err := c.Compile("spec.schema.json")
	if err != nil {
		return nil, fmt.Errorf("synth: register %q: its spec schema does not compile: %w", kind, err)
	}
	return sch, nil
}

// MustRegister is Register that panics on error, for init functions.
func (r *Registry) MustRegister(kind string, s Synthesizer) {
	if err := r.Register(kind, s); err != nil {
		panic(err)
	}
}

// Lookup returns the synthesizer for kind.
func (r *Registry) Lookup(kind string) (Synthesizer, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.kinds[kind]
	return s, ok
}

// Kinds lists the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.kinds))
	for k := range r.kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DryRunner is a Handler that can describe the request a call would make
// without making it. The description is JSON with every secret redacted.
// Like every Handler it must be safe for concurrent use.
type DryRunner interface {
	DryRun(ctx context.Context, call *Call) (json.RawMessage, error)
}
