package synth_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/httptools/httptools/synth"
)

// TestToolIDs: an id that could not be served as it is (a tab, a newline, a
// NUL, U+202E, a zero-width space, a slash, a dot segment, markup, a space,
// 5,000 characters, a leading dot or dash) is refused at load with one
// problem at "id"; ids of letters, digits, '.', '_' and '-' load.
func TestToolIDs(t *testing.T) {
	bad := []string{"a\tb", "a\nb", "a\x00b", "a\u202eb", "a\u200bb", "a/b", "../x", "<b>x</b>", "a b", strings.Repeat("a", 5000),
		".a", "-a", "_a", "a:b", "ä", "a%2fb", "a?b", "a#b", `a"b`, strings.Repeat("a", synth.MaxIDLength+1)}
	for _, id := range bad {
		idJSON, _ := json.Marshal(id)
		_, err := synth.Load(patch(t, `{"id":`+string(idJSON)+`}`))
		var e *synth.Error
		if !errors.As(err, &e) {
			t.Errorf("%.40q loaded", id)
			continue
		}
		n := 0
		for _, p := range e.Problems {
			if p.Path == "id" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%.40q: %d problems at id; want 1: %v", id, n, e.Problems)
		}
	}
	for _, id := range []string{"a", "acme.get-item", "A_1.b-c", "9", strings.Repeat("a", synth.MaxIDLength), "github.get-issue"} {
		if _, err := synth.Load(patch(t, `{"id":"`+id+`"}`)); err != nil {
			t.Errorf("%.40q: %v", id, err)
		}
	}
}
