package synth_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/httptools/httptools/synth"
)

// echoTool loads a tool of the made-up "echo" kind whose handler returns
// its input, so these tests exercise the pipeline without HTTP.
func echoTool(t *testing.T, fields string) *synth.Tool {
	t.Helper()
	reg := &synth.Registry{}
	reg.MustRegister("echo", synth.SynthesizerFunc(func(*synth.Build) synth.Handler { return echo{} }))
	l := synth.Loader{Registry: reg}
	tool, err := l.Load([]byte(`{"id":"x.echo","description":"d","version":"1.0.0",` + fields + `,"spec":{"kind":"echo"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestInvokeInputValidation(t *testing.T) {
	tool := echoTool(t, `"input":{"type":"object","properties":{"n":{"type":"integer","maximum":5},"s":{"type":"string"}},"required":["s"]},"output":{}`)
	for _, tc := range []struct {
		in       string
		pointers []string
	}{
		{`[]`, []string{""}},
		{`"x"`, []string{""}},
		{`{"n":`, []string{""}},
		{``, []string{""}},
		{`{"n": 9}`, []string{"", "/n"}},
		{`{"n": "x", "s": 1}`, []string{"/n", "/s"}},
	} {
		_, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(tc.in), synth.InvokeOptions{})
		var e *synth.Error
		if !errors.As(err, &e) || e.Code != synth.CodeInputValidationFailed || e.ToolID != "x.echo" {
			t.Fatalf("%s: got %v", tc.in, err)
		}
		var got []string
		for _, v := range e.Violations {
			got = append(got, v.Pointer)
		}
		if strings.Join(got, ",") != strings.Join(tc.pointers, ",") {
			t.Errorf("%s: violations at %v, want %v (%v)", tc.in, got, tc.pointers, e.Violations)
		}
		if !strings.HasPrefix(e.Message, `Tool "x.echo" input failed validation: `) {
			t.Errorf("message %q", e.Message)
		}
	}
}

func TestInvokeFillsDefaultsKeepingText(t *testing.T) {
	tool := echoTool(t, `"input":{"type":"object","properties":{
		"id":{"type":"integer"},
		"units":{"type":"string","default":"metric"},
		"opts":{"type":"object","properties":{"page":{"type":"integer","default":1},"size":{"default":20}}},
		"given":{"type":"boolean","default":true}}},"output":{}`)
	res, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{"id": 9007199254740993, "given": false, "opts": {"size": 5.0}}`), synth.InvokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":9007199254740993,"given":false,"opts":{"size":5.0,"page":1},"units":"metric"}`
	if string(res.Output) != want {
		t.Errorf("got  %s\nwant %s", res.Output, want)
	}
	// Nothing to fill: the caller's bytes are kept as they came.
	in := `{ "id" : 1, "units":"si", "given": true, "opts": {"page": 2, "size": 1} }`
	res, _ = tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(in), synth.InvokeOptions{})
	if string(res.Output) != in {
		t.Errorf("got %s, want the input untouched", res.Output)
	}
}

func TestInvokeOutputValidation(t *testing.T) {
	tool := echoTool(t, `"input":{"type":"object"},"output":{"type":"object","required":["ok"]}`)
	_, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{"nope":1}`), synth.InvokeOptions{})
	var e *synth.Error
	if !errors.As(err, &e) || e.Code != synth.CodeOutputValidationFailed || len(e.Violations) != 1 {
		t.Fatalf("got %v", err)
	}
	res, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{"nope":1}`), synth.InvokeOptions{SkipOutputValidation: true})
	if err != nil || string(res.Output) != `{"nope":1}` {
		t.Fatalf("skip: %s %v", res.Output, err)
	}
	// A type-only output schema takes the fast path, and still refuses.
	arr := echoTool(t, `"input":{"type":"object"},"output":{"type":"array","description":"d"}`)
	if _, err := arr.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{}); !errors.As(err, &e) || e.Code != synth.CodeOutputValidationFailed {
		t.Errorf("type-only schema: got %v", err)
	}
}

func TestInvokeUnattendedNeedsApproval(t *testing.T) {
	approval := echoTool(t, `"input":{},"output":{},"needsApprovalWhenUnattended":true`)
	person := echoTool(t, `"input":{},"output":{},"needsSpec":{"connections":{"g":{"app":"google","permissions":["gmail.send"],"as":"person"}}}`)
	company := echoTool(t, `"input":{},"output":{},"needsSpec":{"connections":{"g":{"app":"google","permissions":["gmail.send"],"as":"company"}}}`)
	in := json.RawMessage(`{}`)
	for _, tc := range []struct {
		name    string
		tool    *synth.Tool
		ctx     synth.CallContext
		refused bool
	}{
		{"approval, unattended", approval, synth.CallContext{Unattended: true}, true},
		{"approval, unattended, approved", approval, synth.CallContext{Unattended: true, Approved: true}, false},
		{"approval, attended", approval, synth.CallContext{}, false},
		{"person connection, unattended", person, synth.CallContext{Unattended: true}, true},
		{"company connection, unattended", company, synth.CallContext{Unattended: true}, false},
	} {
		_, err := tc.tool.Invoke(context.Background(), tc.ctx, in, synth.InvokeOptions{})
		var e *synth.Error
		refused := errors.As(err, &e) && e.Code == synth.CodePreconditionFailed && e.Reason == synth.ReasonApprovalRequired
		if refused != tc.refused {
			t.Errorf("%s: got %v, want refused=%v", tc.name, err, tc.refused)
		}
		if refused && !strings.HasPrefix(e.Message, `Tool "x.echo" was not run: approval-required: `) {
			t.Errorf("%s: message %q", tc.name, e.Message)
		}
	}
}

func TestInvokeWithoutSpec(t *testing.T) {
	tool, err := synth.Load([]byte(`{"id":"x.pack","description":"d","version":"1.0.0","input":{},"output":{},"pauses":true,
		"codeArtifactRef":{"kind":"filesystem","modulePath":"/p/h.js"}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{})
	var e *synth.Error
	if !errors.As(err, &e) || e.Code != synth.CodeHandlerError {
		t.Fatalf("got %v", err)
	}
}

func TestOutsideData(t *testing.T) {
	for fields, want := range map[string]bool{
		`"input":{},"output":{}`:                             true,
		`"input":{},"output":{},"resultIsOutsideData":false`: false,
		`"input":{},"output":{},"resultIsOutsideData":true`:  true,
	} {
		res, err := echoTool(t, fields).Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{})
		if err != nil || res.OutsideData != want {
			t.Errorf("%s: OutsideData %v, want %v (%v)", fields, res.OutsideData, want, err)
		}
	}
}

// TestMCPDraft07ItemsIsATuple: on an MCP tool, draft-07's array-form items
// validates position by position and lets more items through.
func TestMCPDraft07ItemsIsATuple(t *testing.T) {
	tool := echoTool(t, `"transport":"mcp","input":{"type":"object"},
		"output":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"t":{"type":"array","items":[{"type":"string"},{"type":"integer"}]}}}`)
	for in, ok := range map[string]bool{
		`{"t":["a",1]}`:         true,
		`{"t":["a",1,{"x":2}]}`: true,
		`{"t":[1,"a"]}`:         false,
	} {
		_, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(in), synth.InvokeOptions{})
		if (err == nil) != ok {
			t.Errorf("%s: %v, want valid=%v", in, err, ok)
		}
	}
}
