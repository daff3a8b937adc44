// Package trim shrinks a JSON document to a size by its structure, for a
// model that cannot read all of it: long arrays and objects keep their
// first items, long strings their first characters followed by how long
// they were, and the depth stays. What it leaves out is listed (Cut), so
// that whoever hands the result on can say so; the shrunk document is
// always valid JSON of the same shape (a string stays a string, an array
// an array), so it still reads against the schema of the whole in all but
// its sizes.
package trim

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// A Cut is one thing left out: at Path (a JSON Pointer, RFC 6901) an
// array or object kept Kept of its Total items, or a string Kept of its
// Total characters.
type Cut struct {
	Path  string `json:"path"`
	Kind  string `json:"kind"` // "array", "object" or "string"
	Kept  int    `json:"kept"`
	Total int    `json:"total"`
}

// A Result is a document shrunk to fit.
type Result struct {
	JSON []byte
	// Cuts are the first MaxCuts things left out: arrays and objects
	// first, then strings, each in document order. CutCount counts them
	// all.
	Cuts     []Cut
	CutCount int
}

// MaxCuts is how many cuts a Result lists.
const MaxCuts = 20

// ErrTooSmall is Fit's error for a size no document fits in.
var ErrTooSmall = errors.New("trim: a document needs at least 2 bytes")

// steps are the sizes tried, most kept first: items per array or object,
// characters per string.
var steps = []struct{ items, chars int }{
	{1000, 8000}, {200, 4000}, {100, 2000}, {50, 1000}, {20, 500}, {10, 200}, {5, 100}, {3, 60}, {1, 40}, {0, 20},
}

// Fit returns doc whole when it is at most max bytes, else doc shrunk to
// at most max bytes, keeping as many items of each array and object and
// as many characters of each string as fit, the same number everywhere.
// max is in bytes, so a text of the result has at most max characters.
// doc must be one valid JSON value.
func Fit(doc []byte, max int) (Result, error) {
	if max < 2 {
		return Result{}, ErrTooSmall
	}
	if len(doc) <= max {
		if !jsontext.Value(doc).IsValid() {
			return Result{}, errors.New("trim: not one valid JSON value")
		}
		return Result{JSON: doc}, nil
	}
	prev := -1
	for i, s := range steps {
		r, err := shrink(doc, s.items, s.chars)
		if err != nil {
			return Result{}, err
		}
		if len(r.JSON) > max {
			prev = i
			continue
		}
		if prev < 0 {
			return r, nil
		}
		// Between the step that fits and the one before, the most items
		// that still fit, at this step's characters.
		lo, hi := s.items, steps[prev].items
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			m, err := shrink(doc, mid, s.chars)
			if err != nil {
				return Result{}, err
			}
			if len(m.JSON) <= max {
				lo, r = mid, m
			} else {
				hi = mid
			}
		}
		return r, nil
	}
	// Nothing fits with every container empty: the top value's kind alone.
	switch jsontext.Value(doc).Kind() {
	case '{':
		return Result{JSON: []byte("{}"), CutCount: 1, Cuts: []Cut{{Path: "", Kind: "object"}}}, nil
	case '[':
		return Result{JSON: []byte("[]"), CutCount: 1, Cuts: []Cut{{Path: "", Kind: "array"}}}, nil
	}
	return Result{JSON: []byte(`""`), CutCount: 1, Cuts: []Cut{{Path: "", Kind: "string"}}}, nil
}

// cutString is s's first chars characters and how long s was.
func cutString(s string, chars, n int) string {
	i, k := 0, 0
	for k < chars && i < len(s) {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i] + "… [" + strconv.Itoa(n) + " characters in all]"
}

// pointer is the JSON Pointer of the value being read under stack (of a
// container just closed, once it is off the stack).
func pointer(stack []*level) string {
	var b strings.Builder
	for _, l := range stack {
		b.WriteByte('/')
		if l.array {
			b.WriteString(strconv.Itoa(l.index))
		} else {
			b.WriteString(escape(l.name))
		}
	}
	return b.String()
}

// escape escapes a member name for a JSON Pointer.
func escape(name string) string {
	if !strings.ContainsAny(name, "~/") {
		return name
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}
