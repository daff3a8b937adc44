package synth

import (
	"context"
	"encoding/json"
	"testing"
)

// callSeer is a handler that keeps the call it got.
type callSeer struct{ got *Call }

func (h *callSeer) Handle(_ context.Context, c *Call) (*Output, error) {
	h.got = c
	return &Output{JSON: json.RawMessage(`{}`)}, nil
}

// TestHandlersSeeTheirTool: the Call a handler gets names the tool it is
// for (it was documented and always nil).
func TestHandlersSeeTheirTool(t *testing.T) {
	h := &callSeer{}
	reg := &Registry{}
	reg.MustRegister("seen", SynthesizerFunc(func(*Build) Handler { return h }))
	tool, err := (&Loader{Registry: reg}).Load([]byte(`{"id":"t.seen","description":"Seen.","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"seen"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tool.Invoke(context.Background(), CallContext{}, json.RawMessage(`{}`), InvokeOptions{}); err != nil {
		t.Fatal(err)
	}
	if h.got == nil || h.got.Tool != tool {
		t.Errorf("the handler's call names tool %v, want %v", h.got.Tool, tool)
	}
}
