package server

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// markerRE finds a boundary's marker in a result's text.
var markerRE = regexp.MustCompile(`(outside data )([0-9a-f]{32})(\])`)

// unmark is v (a decoded MCP answer) with every boundary marker replaced
// by one word: two answers to one call differ in nothing else.
func unmark(v any) any {
	b, _ := json.Marshal(v)
	b = markerRE.ReplaceAll(b, []byte("${1}MARKER${3}"))
	var out any
	json.Unmarshal(b, &out)
	return out
}

// unframe is the text inside the boundary of an outside-data result, the
// text itself when it has none; it fails t when the boundary is malformed
// (markers that differ, a marker missing).
func unframe(t testing.TB, text string) string {
	t.Helper()
	head, rest, ok := strings.Cut(text, "\n")
	if !ok || !strings.HasPrefix(head, "[outside data ") {
		return text
	}
	m := markerRE.FindStringSubmatch(head)
	if m == nil {
		t.Fatalf("a boundary without its marker: %q", head)
	}
	end := "\n[end of outside data " + m[2] + "]"
	inner, ok := strings.CutSuffix(rest, end)
	if !ok {
		t.Fatalf("the boundary of %s does not end the text: %q", m[2], text)
	}
	return inner
}
