package synth_test

import (
	"fmt"
	"testing"

	"github.com/httptools/httptools/synth"
)

// TestCheckSaysWhatLoadSays: Loader.Check with a set of schemas seen
// compile gives every manifest the verdict Load gives it, word for word,
// the first time its schemas are met and every time after — a schema that
// did not compile is compiled again and reported again, a schema that did
// is not compiled again but the manifest's other problems are all still
// reported, and the same bytes at another place (input, output) are
// another schema.
func TestCheckSaysWhatLoadSays(t *testing.T) {
	manifests := map[string][]byte{
		"base":                  []byte(base),
		"bad input schema":      patch(t, `{"input": {"type": "object", "properties": {"id": {"type": "strin"}}}}`),
		"bad pattern":           patch(t, `{"input": {"type": "object", "properties": {"id": {"type": "string", "pattern": "(("}}}}`),
		"good schema, bad spec": patch(t, `{"spec": {"method": "HEAD"}}`),
		"good schema, bad id":   patch(t, `{"id": "-x"}`),
		"input bytes as output": patch(t, `{"output": {"type": "object", "properties": {"id": {"type": "string"}, "q": {"type": "string"}}, "required": ["id"]}}`),
		"bad output":            patch(t, `{"output": {"type": "object", "minProperties": -1}}`),
		"any output":            patch(t, `{"output": {}}`),
	}
	var l synth.Loader
	seen := synth.NewCheckedSchemas()
	for round := range 3 {
		for name, src := range manifests {
			_, lerr := l.Load(src)
			cerr := l.Check(src, seen)
			if fmt.Sprint(lerr) != fmt.Sprint(cerr) {
				t.Errorf("round %d, %s: Check says %v, Load %v", round, name, cerr, lerr)
			}
			if name == "base" || name == "input bytes as output" || name == "any output" {
				if cerr != nil {
					t.Errorf("round %d, %s: %v", round, name, cerr)
				}
			} else if cerr == nil {
				t.Errorf("round %d, %s: Check passed a manifest that does not load", round, name)
			}
		}
	}
	// A nil set checks as Load does.
	for name, src := range manifests {
		_, lerr := l.Load(src)
		if cerr := l.Check(src, nil); fmt.Sprint(lerr) != fmt.Sprint(cerr) {
			t.Errorf("%s, no set: Check says %v, Load %v", name, cerr, lerr)
		}
	}
}
