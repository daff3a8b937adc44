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
	res, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{"a":1}`))
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
			_, err = tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`))
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
	if res, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`)); err != nil || string(res.Output) != `{"a":1}` {
		t.Fatalf("%v %v", res, err)
	}
	// A handler returning nothing at all is an error, not a crash.
	reg = &synth.Registry{}
	reg.MustRegister("fixed", synth.SynthesizerFunc(func(*synth.Build) synth.Handler { return fixed{nil} }))
	tool, _ = (&synth.Loader{Registry: reg}).Load([]byte(`{"id":"x.fixed","description":"d","version":"1.0.0","input":{"type":"object"},"output":{},"spec":{"kind":"fixed"}}`))
	var e *synth.Error
	if _, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`)); !errors.As(err, &e) || e.Code != synth.CodeHandlerError {
		t.Fatalf("nil output: %v", err)
	}
}
