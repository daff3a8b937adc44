package body

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

func TestJSONWithout(t *testing.T) {
	for _, tc := range []struct {
		in       string
		consumed []string
		want     string
	}{
		{`{"a":1,"b":2}`, nil, `{"a":1,"b":2}`},
		{`{}`, nil, ""},
		{` { } `, nil, ""},
		{`{"owner":"o","id":9007199254740993,"f":1.0,"s":"\u00e9"}`, []string{"owner"}, `{"id":9007199254740993,"f":1.0,"s":"\u00e9"}`},
		{`{"z":1,"a":{"y":2,"x":[3]},"m":null}`, []string{"m"}, `{"z":1,"a":{"y":2,"x":[3]}}`},
		{`{"a":1}`, []string{"a"}, ""},
	} {
		consumed := map[string]bool{}
		for _, c := range tc.consumed {
			consumed[c] = true
		}
		if got := string(JSONWithout([]byte(tc.in), consumed)); got != tc.want {
			t.Errorf("%s minus %v: got %s, want %s", tc.in, tc.consumed, got, tc.want)
		}
	}
}

func TestTemplateFill(t *testing.T) {
	in := []byte(`{"name":"Ann","n":9007199254740993,"ok":false,"nil":null,"obj":{"k":"v"},"list":[1,"a"],"a.b":"flat","weird*key":"w"}`)
	for tmpl, want := range map[string]string{
		"plain":           "plain",
		"{name}":          "Ann",
		"Hi {name}!":      "Hi Ann!",
		"{n}/{ok}":        "9007199254740993/false",
		"[{nil}]":         "[]",
		"{missing}":       "{missing}",
		"{obj}":           `{"k":"v"}`,
		"{obj.k}":         "v",
		"{list}":          `[1,"a"]`,
		"{}{":             "{}{",
		"{ {name}":        "{ Ann",
		"a{name}b{name}c": "aAnnbAnnc",
		"{weird*key}":     "w",
		"{name":           "{name",
		"}{name}{":        "}Ann{",
	} {
		if got := NewTemplate(tmpl).Fill(in); got != want {
			t.Errorf("%q: got %q, want %q", tmpl, got, want)
		}
	}
}

// FuzzTemplateFill fills arbitrary templates from arbitrary input: it must
// never panic, and a template without braces comes back unchanged.
func FuzzTemplateFill(f *testing.F) {
	f.Add("Bearer {token}", `{"token":"x"}`)
	f.Add("{a.b}{c}", `{"a":{"b":1},"c":null}`)
	f.Add("{", `[]`)
	f.Add("{\\.}", `{".":1}`)
	f.Fuzz(func(t *testing.T, tmpl, input string) {
		got := NewTemplate(tmpl).Fill([]byte(input))
		if !containsBrace(tmpl) && got != tmpl {
			t.Fatalf("%q changed to %q", tmpl, got)
		}
	})
}

func containsBrace(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '{' || s[i] == '}' {
			return true
		}
	}
	return false
}

// TestPathReadsEveryKeyExactly: a key made of gjson syntax is read as the
// key it is, never as a multipath, a query or a modifier.
func TestPathReadsEveryKeyExactly(t *testing.T) {
	keys := []string{"[a,b]", "{a,b}", "a.b", "#", "#(x==1)", "@this", "@reverse", "a|b", "a*", "a?", "!true", "=", "<>", "%", `"q"`, `back\slash`, "comma,", "colon:", "sp ace", "é", "0", "-1", "", "[", "]", "{", "}", ",", "a]b", "\x00"}
	for _, k := range keys {
		doc, _ := json.Marshal(map[string]any{k: 1, "a": 2, "b": 3, "x": []any{map[string]any{"x": 1}}})
		got := gjson.GetBytes(doc, Path([]string{k}))
		if got.Raw != "1" {
			t.Errorf("Path(%q) = %q reads %q, want 1", k, Path([]string{k}), got.Raw)
		}
		nested, _ := json.Marshal(map[string]any{"outer": map[string]any{k: map[string]any{k: 1}}})
		if got := gjson.GetBytes(nested, Path([]string{"outer", k, k})); got.Raw != "1" {
			t.Errorf("nested Path(%q) reads %q", k, got.Raw)
		}
	}
}
