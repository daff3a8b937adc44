package synth_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/httptools/httptools/synth"
)

// full sets every field of the Tool definition (with a code handler, the
// one kind that needs no synthesizer), so that a copy can be checked deep.
const full = `{"id":"x.full","description":"d","version":"1.0.0",
  "input":{"type":"object","properties":{"a":{"type":"string"}}},"output":{"type":"object"},
  "needs":[{"name":"n","optional":true}],"effects":[{"kind":"reads","resource":"r","notes":"n"}],
  "transport":"auto","mcpEndpoint":"mcp+http://mcp.example.com/","metadata":{"m":1},"sandbox":"strict",
  "mutating":true,"needsApprovalWhenUnattended":true,"pauses":true,"resultIsOutsideData":true,
  "limits":{"memMB":64,"cpuMs":100},"network":{"kind":"allowlist","hosts":["api.example.com"]},
  "needsSpec":{"env":{"E":{}},"secrets":{"S":{}},"config":{"C":{}},"capabilities":["c"],"bindings":["b"],
    "connections":{"g":{"app":"google","permissions":["mail.send"],"as":"company"}}},
  "codeArtifactRef":{"kind":"oci","imageRef":"ghcr.io/x/y","modulePath":"m","artifactVersion":"1"}}`

// scribble changes every value reachable from v: strings, numbers, bools,
// the bytes of slices, map entries.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			scribble(e)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString(v.String() + "!")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint8:
		v.SetUint(v.Uint() ^ 0xff)
	}
}

// unset lists the exported fields left at their zero value below v.
func unset(v reflect.Value, path string, out *[]string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			*out = append(*out, path)
			return
		}
		unset(v.Elem(), path, out)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				unset(v.Field(i), path+"."+f.Name, out)
			}
		}
	default:
		if v.IsZero() {
			*out = append(*out, path)
		}
	}
}

// TestManifestIsACopy: what Tool.Manifest returns shares nothing with the
// tool, at any depth; nor do Warnings or ToolSchema.
func TestManifestIsACopy(t *testing.T) {
	tool, err := synth.Load([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	m := tool.Manifest()
	var missing []string
	unset(reflect.ValueOf(m), "Manifest", &missing)
	if len(missing) != 1 || missing[0] != "Manifest.Spec" { // a tool with a code handler has no spec
		t.Fatalf("the fixture leaves fields unset, so their copy is untested: %v", missing)
	}
	before, _ := json.Marshal(m)
	scribble(reflect.ValueOf(m))
	if after, _ := json.Marshal(m); bytes.Equal(before, after) {
		t.Fatal("scribble changed nothing")
	}
	if again, _ := json.Marshal(tool.Manifest()); !bytes.Equal(before, again) {
		t.Errorf("changing the copy changed the tool:\nbefore %s\nafter  %s", before, again)
	}
	if !tool.NeedsApproval() || tool.ID() != "x.full" || !tool.OutsideData() {
		t.Error("the tool's own view changed")
	}
	if c, ok := tool.Connection("g"); !ok || c.App != "google" {
		t.Errorf("Connection = %v %v", c, ok)
	} else {
		c.Permissions[0] = "x"
		if c2, _ := tool.Connection("g"); c2.Permissions[0] != "mail.send" {
			t.Error("Connection shares its permissions")
		}
	}

	s := synth.ToolSchema()
	clear(s)
	if _, err := synth.Load([]byte(full)); err != nil {
		t.Errorf("clearing ToolSchema's bytes broke loading: %v", err)
	}
	if !json.Valid(synth.ToolSchema()) {
		t.Error("ToolSchema changed")
	}
}

// TestManifestSpecIsACopy: the spec's raw bytes in the copy are the
// copy's own.
func TestManifestSpecIsACopy(t *testing.T) {
	reg := &synth.Registry{}
	reg.MustRegister("fixed", synth.SynthesizerFunc(func(*synth.Build) synth.Handler { return fixed{nil} }))
	tool, err := (&synth.Loader{Registry: reg}).Load([]byte(`{"id":"x.s","description":"d","version":"1.0.0","input":{"type":"object"},"output":{},"spec":{"kind":"fixed","v":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := tool.Manifest()
	clear(m.Spec.Raw)
	if got := tool.Manifest().Spec.Raw; !json.Valid(got) {
		t.Errorf("spec bytes shared: %q", got)
	}
}
