package httpspec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

// TestRFC6570Conformance runs every case of the uritemplate-test suite
// (testdata/uritemplate-test, with its LICENSE): 270 cases in four files.
func TestRFC6570Conformance(t *testing.T) {
	files, err := filepath.Glob("testdata/uritemplate-test/*.json")
	if err != nil || len(files) != 4 {
		t.Fatalf("want 4 suite files, got %v (%v)", files, err)
	}
	total, failed := 0, 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		gjson.ParseBytes(src).ForEach(func(group, g gjson.Result) bool {
			vars := map[string]Value{}
			g.Get("variables").ForEach(func(k, v gjson.Result) bool {
				vars[k.Str] = toValue(v) // the handler's own conversion
				return true
			})
			for _, tc := range g.Get("testcases").Array() {
				total++
				tmpl, want := tc.Get("0").Str, tc.Get("1")
				name := filepath.Base(f) + "/" + group.Str + "/" + tmpl
				got, err := expandSuite(tmpl, vars)
				ok := false
				switch {
				case want.Type == gjson.False:
					ok = err != nil
				case want.IsArray():
					for _, w := range want.Array() {
						ok = ok || (err == nil && got == w.Str)
					}
				default:
					ok = err == nil && got == want.Str
				}
				if !ok {
					failed++
					t.Errorf("%s: got %q, err %v; want %s", name, got, err, want.Raw)
				}
			}
			return true
		})
	}
	if total != 270 {
		t.Errorf("ran %d cases, want the suite's 270", total)
	}
	t.Logf("RFC 6570 suite: %d passed, %d failed", total-failed, failed)
}

func expandSuite(tmpl string, vars map[string]Value) (string, error) {
	tp, err := ParseTemplate(tmpl)
	if err != nil {
		return "", err
	}
	return tp.Expand(func(v *VarSpec) Value { return vars[v.Name] })
}

func TestTemplateEncodesUTF8(t *testing.T) {
	for _, tc := range []struct{ tmpl, word, want string }{
		{"{?word}", "drücken", "?word=dr%C3%BCcken"},
		{"{?word}", "東京", "?word=%E6%9D%B1%E4%BA%AC"},
		{"{word:1}", "東京", "%E6%9D%B1"},
		{"/{word}", "a/b?c", "/a%2Fb%3Fc"},
		{"/{word}", "claude code", "/claude%20code"},
	} {
		got, err := expandSuite(tc.tmpl, map[string]Value{"word": {Kind: String, Str: tc.word}})
		if err != nil || got != tc.want {
			t.Errorf("%s with %q: got %q, %v; want %q", tc.tmpl, tc.word, got, err, tc.want)
		}
	}
}

func TestTemplateErrorsHaveOffsets(t *testing.T) {
	for _, tc := range []struct {
		tmpl   string
		offset int
	}{
		{"/x/{id", 3},
		{"/x/id}", 5},
		{"/x y", 2},
		{"/{}", 2},
		{"/%zz", 1},
	} {
		_, err := ParseTemplate(tc.tmpl)
		te, ok := err.(*TemplateError)
		if !ok || te.Offset != tc.offset {
			t.Errorf("%q: got %v, want a TemplateError at offset %d", tc.tmpl, err, tc.offset)
		}
	}
}
