package httpspec

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/httptools/httptools/body"
	"github.com/httptools/httptools/synth"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// FuzzTemplate compiles and expands arbitrary templates with arbitrary JSON
// input: no panics, and an expansion never holds a raw space, CR, LF or
// non-ASCII byte.
func FuzzTemplate(f *testing.F) {
	files, _ := filepath.Glob("testdata/uritemplate-test/*.json")
	for _, p := range files {
		src, _ := os.ReadFile(p)
		gjson.ParseBytes(src).ForEach(func(_, g gjson.Result) bool {
			vars := g.Get("variables").Raw
			for _, tc := range g.Get("testcases").Array() {
				f.Add(tc.Get("0").Str, vars)
			}
			return true
		})
	}
	f.Add("https://api.x.test/{id}{?q,page}", `{"id":"a b","q":["x"],"page":2}`)
	f.Fuzz(func(t *testing.T, tmpl, input string) {
		tp, err := ParseTemplate(tmpl)
		if err != nil {
			if _, ok := err.(*TemplateError); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		out, err := tp.Expand(func(v *VarSpec) Value { return toValue(gjson.Get(input, v.Name)) })
		if err != nil {
			return
		}
		if strings.ContainsAny(out, " \r\n\x00") || !utf8.ValidString(out) || strings.IndexFunc(out, func(r rune) bool { return r > 0x7e }) >= 0 {
			t.Fatalf("%q expanded to %q", tmpl, out)
		}
	})
}

// FuzzHeaderFill prepares requests whose header values are filled from
// arbitrary input: either the call is refused as invalid-header, or every
// header value is free of CR, LF and NUL.
func FuzzHeaderFill(f *testing.F) {
	f.Add(`{"a":"x","b":{"c":1}}`, "pre-{a}-{b.c}-{missing}")
	f.Add(`{"a":"x\r\nInjected: 1"}`, "{a}")
	f.Add(`{"a":"\u0000"}`, "v{a}")
	f.Add(`{"a":null}`, "{a}{a}")
	f.Add(`not json`, "{a}")
	f.Fuzz(func(t *testing.T, input, value string) {
		if strings.ContainsAny(value, "\r\n\x00") {
			return // refused at load time
		}
		h := &Handler{spec: &Spec{Method: "GET"}, headers: []header{{name: "X-V", tmpl: body.NewTemplate(value)}}}
		tp, _ := ParseTemplate("https://x.test/")
		h.tmpl, h.origin = tp, origin{scheme: "https", host: "x.test", name: "x.test"}
		r, err := h.planCall(context.Background(), &synth.Call{Input: []byte(input), Context: synth.CallContext{}}, "")
		if err != nil {
			if e, ok := err.(*synth.Error); !ok || e.Reason != ReasonInvalidHeader {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		for _, v := range r.Header["X-V"] {
			if strings.ContainsAny(v, "\r\n\x00") {
				t.Fatalf("header value %q holds CR, LF or NUL", v)
			}
		}
	})
}

// FuzzPathStaysInTheTemplate: whatever a value holds, a URL the handler
// accepts keeps the template's path once a server resolves dot segments
// (decoding percent escapes once and twice, and reading a backslash as a
// slash, as some servers do).
func FuzzPathStaysInTheTemplate(f *testing.F) {
	for _, s := range []string{"..", ".", "a/../b", "%2e%2e", "..;x", "..\\", "%252e%252e", "ok", "..%2f..", "."} {
		f.Add(s, false)
		f.Add(s, true)
	}
	tools := map[bool]*synth.Tool{}
	for _, reserved := range []bool{false, true} {
		x := "{x}"
		if reserved {
			x = "{+x}"
		}
		tool, err := synth.Load([]byte(`{"id":"t.p","description":"d","version":"1.0.0","mutating":false,"input":{"type":"object","properties":{"x":{"type":"string"}}},"output":{},
			"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/api/` + x + `/info"}}`))
		if err != nil {
			f.Fatal(err)
		}
		tools[reserved] = tool
	}
	f.Fuzz(func(t *testing.T, x string, reserved bool) {
		in, _ := json.Marshal(map[string]string{"x": x})
		out, err := tools[reserved].DryRun(context.Background(), synth.CallContext{}, in, synth.InvokeOptions{})
		if err != nil {
			return
		}
		var d struct{ URL string }
		json.Unmarshal(out, &d)
		u, err := url.Parse(d.URL)
		if err != nil {
			return
		}
		for _, p := range []string{u.EscapedPath(), unescapeOnce(u.EscapedPath()), unescapeOnce(unescapeOnce(u.EscapedPath()))} {
			p = strings.ReplaceAll(p, "\\", "/")
			if r := resolve(p); !strings.HasPrefix(r, "/api/") || !strings.HasSuffix(r, "/info") {
				t.Fatalf("x=%q: %s resolves to %s", x, d.URL, r)
			}
		}
	})
}

func unescapeOnce(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// resolve applies RFC 3986 remove_dot_segments, with ;params dropped from
// a segment as Tomcat does before comparing it to "..".
func resolve(p string) string {
	var out []string
	for _, seg := range strings.Split(p, "/") {
		bare, _, _ := strings.Cut(seg, ";")
		switch bare {
		case ".":
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	return strings.Join(out, "/")
}
