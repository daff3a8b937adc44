package synth_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/httptools/httptools/synth"
)

// echo is a made-up kind: its handler returns the input as the output.
type echo struct{}

func (echo) Handle(_ context.Context, c *synth.Call) (*synth.Output, error) {
	return &synth.Output{JSON: c.Input}, nil
}

func TestRegistryRegister(t *testing.T) {
	var r synth.Registry
	syn := synth.SynthesizerFunc(func(*synth.Build) synth.Handler { return echo{} })
	if err := r.Register("", syn); err == nil {
		t.Error("empty kind: want an error")
	}
	if err := r.Register("x", nil); err == nil {
		t.Error("nil synthesizer: want an error")
	}
	for _, k := range []string{"sql", "graphql", "echo"} {
		if err := r.Register(k, syn); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Register("sql", syn); !errors.Is(err, synth.ErrDuplicateKind) {
		t.Errorf("duplicate: got %v, want ErrDuplicateKind", err)
	}
	if got := r.Kinds(); !reflect.DeepEqual(got, []string{"echo", "graphql", "sql"}) {
		t.Errorf("Kinds() = %v, want sorted", got)
	}
	if _, ok := r.Lookup("graphql"); !ok {
		t.Error("Lookup(graphql) missing")
	}
	if _, ok := r.Lookup("http"); ok {
		t.Error("a fresh registry must not know http")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegister of a duplicate must panic")
		}
	}()
	r.MustRegister("sql", syn)
}

// TestCustomKind registers a kind in a fresh registry, as a third party
// would, and loads and invokes a manifest of that kind.
func TestCustomKind(t *testing.T) {
	reg := &synth.Registry{}
	var built *synth.Manifest
	reg.MustRegister("echo", synth.SynthesizerFunc(func(b *synth.Build) synth.Handler {
		built = b.Manifest
		var s struct {
			Kind  string `json:"kind"`
			Shout bool   `json:"shout"`
		}
		if err := json.Unmarshal(b.Manifest.Spec.Raw, &s); err != nil || !s.Shout {
			b.Problems.Error("spec.shout", "must be true")
			return nil
		}
		return echo{}
	}))
	l := synth.Loader{Registry: reg}
	src := []byte(`{"id":"x.echo","description":"d","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"echo","shout":true}}`)
	tool, err := l.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	if built.ID != "x.echo" {
		t.Errorf("synthesizer saw %q", built.ID)
	}
	res, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{"a":1}`), synth.InvokeOptions{})
	if err != nil || string(res.Output) != `{"a":1}` {
		t.Fatalf("got %s, %v", res.Output, err)
	}
	_, err = l.Load([]byte(`{"id":"x.echo","description":"d","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"echo"}}`))
	var e *synth.Error
	if !errors.As(err, &e) || len(e.Problems) != 1 || e.Problems[0].Path != "spec.shout" {
		t.Fatalf("got %v", err)
	}
	// The default registry is untouched by this test.
	if _, ok := synth.DefaultRegistry().Lookup("echo"); ok {
		t.Error("echo leaked into the default registry")
	}
}

// fixed is a handler that returns the same output each call.
type fixed struct{ out *synth.Output }

func (f fixed) Handle(context.Context, *synth.Call) (*synth.Output, error) { return f.out, nil }

// TestHandlerOutputIsCheckedBeforeTheFastPaths: whatever a handler returns
// is checked as JSON before an output schema's fast path may call it
// valid; only bytes CheckOutput accepted are spared the second pass.
func TestHandlerOutputIsCheckedBeforeTheFastPaths(t *testing.T) {
	schemas := []string{`{}`, `{"type":"object"}`, `{"type":"object","properties":{"a":{"type":"integer"}}}`, `{"type":"array"}`, `{"type":"string"}`}
	broken := []string{`{"a":`, `{"a":1,"a":2}`, `{"a":1}{"b":2}`, `{"a":1} x`, `[1,2`, `"unterminated`, `{"a":01}`, `{"a":1e999999}`, ``, strings.Repeat("[", 200) + strings.Repeat("]", 200)}
	for _, schema := range schemas {
		for _, b := range broken {
			reg := &synth.Registry{}
			reg.MustRegister("fixed", synth.SynthesizerFunc(func(*synth.Build) synth.Handler {
				return fixed{&synth.Output{JSON: json.RawMessage(b), Status: 200}}
			}))
			tool, err := (&synth.Loader{Registry: reg}).Load([]byte(`{"id":"x.fixed","description":"d","version":"1.0.0","input":{"type":"object"},"output":` + schema + `,"spec":{"kind":"fixed"}}`))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{})
			var e *synth.Error
			if !errors.As(err, &e) || e.Reason != synth.ReasonResponseNotJSON {
				t.Errorf("schema %s, output %.40q: got %v, want response-not-json", schema, b, err)
			}
		}
	}
	// CheckOutput refuses what Invoke would, and what it accepts passes.
	for _, b := range broken {
		if _, err := synth.CheckOutput(json.RawMessage(b)); err == nil {
			t.Errorf("CheckOutput accepted %.40q", b)
		}
	}
	out, err := synth.CheckOutput(json.RawMessage(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	reg := &synth.Registry{}
	reg.MustRegister("fixed", synth.SynthesizerFunc(func(*synth.Build) synth.Handler { return fixed{out} }))
	tool, _ := (&synth.Loader{Registry: reg}).Load([]byte(`{"id":"x.fixed","description":"d","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"fixed"}}`))
	if res, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{}); err != nil || string(res.Output) != `{"a":1}` {
		t.Fatalf("%v %v", res, err)
	}
	// A handler returning nothing at all is an error, not a crash.
	reg = &synth.Registry{}
	reg.MustRegister("fixed", synth.SynthesizerFunc(func(*synth.Build) synth.Handler { return fixed{nil} }))
	tool, _ = (&synth.Loader{Registry: reg}).Load([]byte(`{"id":"x.fixed","description":"d","version":"1.0.0","input":{"type":"object"},"output":{},"spec":{"kind":"fixed"}}`))
	var e *synth.Error
	if _, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{}); !errors.As(err, &e) || e.Code != synth.CodeHandlerError {
		t.Fatalf("nil output: %v", err)
	}
}

// sqlKind is a third party's kind that offers a schema for its spec.
type sqlKind struct{ schema string }

func (k sqlKind) Synthesize(b *synth.Build) synth.Handler {
	if b.Problems.SchemaRefused("spec.query") {
		return nil
	}
	return fixed{&synth.Output{JSON: json.RawMessage(`[]`)}}
}

func (k sqlKind) SpecSchema() []byte { return []byte(k.schema) }

// TestSpecSchemaOfAKind: a kind's schema checks its spec with the field
// paths and words of the rest of the manifest; a schema that does not
// compile is refused at Register.
func TestSpecSchemaOfAKind(t *testing.T) {
	reg := &synth.Registry{}
	if err := reg.Register("sql", sqlKind{`{"type":"object","required":["kind","query"],"additionalProperties":false,
	  "properties":{"kind":{"const":"sql"},"query":{"type":"string","minLength":1},"timeoutMs":{"type":"integer","minimum":1},
	    "params":{"type":"array","items":{"type":"string"}}}}`}); err != nil {
		t.Fatal(err)
	}
	l := synth.Loader{Registry: reg}
	_, err := l.Load([]byte(`{"id":"x.sql","description":"d","version":"1.0.0","input":{"type":"object"},"output":{},
	  "spec":{"kind":"sql","qurey":"select 1","timeoutMs":0,"params":["a",2]}}`))
	var e *synth.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v", err)
	}
	want := map[string]string{
		"spec.query":     "is required: add it",
		"spec.qurey":     "unknown field",
		"spec.timeoutMs": "must be at least 1",
		"spec.params[1]": "string",
	}
	for _, p := range e.Problems {
		if w, ok := want[p.Path]; ok && strings.Contains(p.Message, w) {
			delete(want, p.Path)
		}
	}
	if len(want) != 0 {
		t.Errorf("missing problems %v in %v", want, e.Problems)
	}
	if _, err := l.Load([]byte(`{"id":"x.sql","description":"d","version":"1.0.0","input":{"type":"object"},"output":{},"spec":{"kind":"sql","query":"select 1"}}`)); err != nil {
		t.Errorf("a good spec: %v", err)
	}
	for _, bad := range []string{`{"type":"nope"}`, `not json`, `{"$ref":"https://example.com/s.json"}`} {
		if err := (&synth.Registry{}).Register("sql", sqlKind{bad}); err == nil {
			t.Errorf("Register took the schema %s", bad)
		}
	}
}
