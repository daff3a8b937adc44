package body

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Template is text with {name} placeholders filled from the input without any
// encoding: header values and text bodies. {a.b} reads a nested input value.
// A placeholder whose key is absent from the input stays as written; null
// becomes empty; strings are inserted as is, numbers and booleans as their
// JSON text, objects and arrays as their JSON. Compile once, fill per call;
// a Template is safe for concurrent use.
type Template struct {
	parts []tpart
}

type tpart struct {
	lit  string
	name string // placeholder, without braces
	path string // gjson path of name
}

// NewTemplate compiles s. Text that does not look like a placeholder
// ({ without a closing }, or {} ) is kept literally.
func NewTemplate(s string) *Template {
	t := &Template{}
	for s != "" {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i+1:], '}')
		if j < 0 {
			break
		}
		name := s[i+1 : i+1+j]
		if name == "" || strings.ContainsAny(name, "{\r\n") {
			t.parts = append(t.parts, tpart{lit: s[:i+1]})
			s = s[i+1:]
			continue
		}
		if i > 0 {
			t.parts = append(t.parts, tpart{lit: s[:i]})
		}
		t.parts = append(t.parts, tpart{name: name, path: Path(strings.Split(name, "."))})
		s = s[i+2+j:]
	}
	if s != "" {
		t.parts = append(t.parts, tpart{lit: s})
	}
	return t
}

// Names returns the placeholders, in order.
func (t *Template) Names() []string {
	var out []string
	for _, p := range t.parts {
		if p.path != "" {
			out = append(out, p.name)
		}
	}
	return out
}

// Static reports whether the template has no placeholders.
func (t *Template) Static() bool {
	for _, p := range t.parts {
		if p.path != "" {
			return false
		}
	}
	return true
}

// Fill returns the text with the input's values in place.
func (t *Template) Fill(input []byte) string {
	s, _ := t.FillOptional(input)
	return s
}

// FillOptional is Fill, and reports whether the template is one
// placeholder and nothing else whose value the input lacks (absent or
// null): a header of such a value is left out instead of sent as written
// or empty. The input is read once.
func (t *Template) FillOptional(input []byte) (text string, absent bool) {
	if len(t.parts) == 1 && t.parts[0].path == "" {
		return t.parts[0].lit, false
	}
	lone := len(t.parts) == 1
	var b strings.Builder
	for _, p := range t.parts {
		if p.path == "" {
			b.WriteString(p.lit)
			continue
		}
		v := gjson.GetBytes(input, p.path)
		switch {
		case !v.Exists():
			b.WriteByte('{')
			b.WriteString(p.name)
			b.WriteByte('}')
			absent = lone
		case v.Type == gjson.Null:
			absent = lone
		case v.Type == gjson.String:
			b.WriteString(v.Str)
		default:
			b.WriteString(v.Raw)
		}
	}
	return b.String(), absent
}

// Path makes a gjson path that reads the nested keys exactly: each key
// escaped by gjson.Escape, so that no key is read as gjson syntax (a
// multipath "[a,b]", a query "#(…)", a modifier "@this").
func Path(keys []string) string {
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(gjson.Escape(k))
	}
	return b.String()
}
