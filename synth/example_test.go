package synth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/httptools/httptools/synth"
)

// greet is the handler of a made-up kind "greet": it answers without any
// network, from its spec and the call's input.
type greet struct{ greeting string }

func (g greet) Handle(_ context.Context, call *synth.Call) (*synth.Output, error) {
	var in struct{ Name string }
	json.Unmarshal(call.Input, &in)
	out, _ := json.Marshal(map[string]string{"text": g.greeting + ", " + in.Name})
	return &synth.Output{JSON: out}, nil
}

// greetKind synthesizes greet handlers and offers the schema of its spec.
type greetKind struct{}

func (greetKind) Synthesize(b *synth.Build) synth.Handler {
	var s struct{ Greeting string }
	json.Unmarshal(b.Manifest.Spec.Raw, &s)
	return greet{s.Greeting}
}

func (greetKind) SpecSchema() []byte {
	return []byte(`{"type":"object","required":["kind","greeting"],"additionalProperties":false,
	  "properties":{"kind":{"const":"greet"},"greeting":{"type":"string","minLength":1}}}`)
}

// Load a manifest of a kind of your own, then invoke it: the input and
// output are checked against the manifest's schemas, the spec against the
// kind's.
func Example() {
	reg := &synth.Registry{}
	reg.MustRegister("greet", greetKind{})
	loader := synth.Loader{Registry: reg}

	tool, err := loader.Load([]byte(`{"id":"demo.greet","description":"Greets someone.","version":"1.0.0","mutating":false,
	  "input":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]},
	  "output":{"type":"object","properties":{"text":{"type":"string"}}},
	  "spec":{"kind":"greet","greeting":"Hello"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := tool.Invoke(context.Background(), synth.CallContext{Tenant: "acme"}, json.RawMessage(`{"name":"Ada"}`), synth.InvokeOptions{})
	fmt.Println(string(res.Output), err)

	_, err = tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{"name":7}`), synth.InvokeOptions{})
	var e *synth.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Violations[0].Pointer, e.Violations[0].Message)
	}

	_, err = loader.Load([]byte(`{"id":"demo.bad","description":"d","version":"1.0.0","input":{"type":"object"},"output":{},
	  "spec":{"kind":"greet","greting":"Hi"}}`))
	if errors.As(err, &e) {
		for _, p := range e.Problems {
			fmt.Println(p.Path+":", p.Message)
		}
	}
	// Output:
	// {"text":"Hello, Ada"} <nil>
	// input-validation-failed /name must be a string, not number
	// spec.greeting: is required: add it
	// spec.greting: unknown field: remove it or fix its spelling (the Tool definition is closed); did you mean "greeting"?
}
