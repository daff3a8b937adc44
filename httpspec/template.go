package httpspec

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Template is a compiled RFC 6570 URI Template, complete to Level 4. It is
// immutable and safe for concurrent use.
type Template struct {
	raw      string
	parts    []part
	vars     []*VarSpec
	reserved bool // some expression keeps reserved characters ({+x}, {#x})
}

type part struct {
	lit  string // pre-encoded literal text, when expr is nil
	expr *expression
}

type expression struct {
	op   operator
	vars []*VarSpec
}

// VarSpec is one variable of an expression: its name, the prefix length
// (0 for none) and the explode modifier.
type VarSpec struct {
	Name    string
	Prefix  int
	Explode bool
	// Operator is the expression's operator: 0 for a simple expression, or
	// one of + # . / ; ? &.
	Operator byte
}

type operator struct {
	char          byte
	first, sep    string
	named         bool
	ifemp         string
	allowReserved bool
}

var operators = map[byte]operator{
	0:   {0, "", ",", false, "", false},
	'+': {'+', "", ",", false, "", true},
	'.': {'.', ".", ".", false, "", false},
	'/': {'/', "/", "/", false, "", false},
	';': {';', ";", ";", true, "", false},
	'?': {'?', "?", "&", true, "=", false},
	'&': {'&', "&", "&", true, "=", false},
	'#': {'#', "#", ",", false, "", true},
}

// TemplateError is a syntax error in a template, with the byte offset of the
// offending character.
type TemplateError struct {
	Template string
	Offset   int
	Msg      string
}

// Error gives the 1-based character position and the problem.
func (e *TemplateError) Error() string {
	return fmt.Sprintf("invalid URI template at character %d: %s", e.Offset+1, e.Msg)
}

// ParseTemplate compiles an RFC 6570 template. Literal characters outside
// the URI character set (such as é) are percent-encoded as UTF-8; characters
// RFC 6570 forbids in literals (space, ", <, >, \, ^, `, {, |, }) are errors.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{raw: s}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, &TemplateError{s, i, "an expression opened with { is never closed with }"}
			}
			if open := strings.IndexByte(s[i+1:i+end], '{'); open >= 0 {
				return nil, &TemplateError{s, i + 1 + open, "{ inside an expression"}
			}
			e, err := parseExpression(s, i+1, s[i+1:i+end])
			if err != nil {
				return nil, err
			}
			flush()
			t.parts = append(t.parts, part{expr: e})
			t.vars = append(t.vars, e.vars...)
			t.reserved = t.reserved || e.op.allowReserved
			i += end + 1
		case c == '}':
			return nil, &TemplateError{s, i, "} without an opening {"}
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return nil, &TemplateError{s, i, "% must start a percent-encoded triplet such as %20"}
			}
			lit.WriteString(s[i : i+3])
			i += 3
		case c < 0x80:
			if c <= ' ' || c == 0x7f || strings.IndexByte("\"<>\\^`|", c) >= 0 {
				return nil, &TemplateError{s, i, fmt.Sprintf("%q is not allowed in a URI template: percent-encode it", c)}
			}
			lit.WriteByte(c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, &TemplateError{s, i, "invalid UTF-8"}
			}
			for j := 0; j < n; j++ {
				pctEncode(&lit, s[i+j])
			}
			i += n
		}
	}
	flush()
	return t, nil
}

func parseExpression(tmpl string, off int, body string) (*expression, error) {
	if body == "" {
		return nil, &TemplateError{tmpl, off, "empty expression {}"}
	}
	op, ok := operators[body[0]]
	start := 0
	if ok {
		start = 1
	} else if strings.IndexByte("=,!@|", body[0]) >= 0 {
		return nil, &TemplateError{tmpl, off, fmt.Sprintf("operator %q is reserved by RFC 6570 and has no meaning", body[0])}
	} else {
		op = operators[0]
	}
	e := &expression{op: op}
	for _, spec := range strings.Split(body[start:], ",") {
		v, err := parseVarSpec(spec)
		if err != nil {
			return nil, &TemplateError{tmpl, off + start, fmt.Sprintf("%s in {%s}", err, body)}
		}
		v.Operator = op.char
		e.vars = append(e.vars, v)
	}
	return e, nil
}

func parseVarSpec(s string) (*VarSpec, error) {
	v := &VarSpec{}
	name := s
	if strings.HasSuffix(s, "*") {
		v.Explode, name = true, s[:len(s)-1]
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		name = s[:i]
		p := s[i+1:]
		if p == "" || len(p) > 4 || p[0] == '0' {
			return nil, fmt.Errorf("prefix %q must be a number from 1 to 9999", p)
		}
		for _, c := range []byte(p) {
			if c < '0' || c > '9' {
				return nil, fmt.Errorf("prefix %q must be a number from 1 to 9999", p)
			}
			v.Prefix = v.Prefix*10 + int(c-'0')
		}
	}
	if err := checkVarName(name); err != nil {
		return nil, err
	}
	v.Name = name
	return v, nil
}

// checkVarName accepts varname = varchar *( ["."] varchar ), varchar = ALPHA /
// DIGIT / "_" / pct-encoded.
func checkVarName(n string) error {
	if n == "" {
		return fmt.Errorf("empty variable name")
	}
	prevDot := true
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch {
		case c == '.':
			if prevDot || i == len(n)-1 {
				return fmt.Errorf("variable name %q has a misplaced dot", n)
			}
			prevDot = true
			continue
		case c == '%':
			if i+2 >= len(n) || !isHex(n[i+1]) || !isHex(n[i+2]) {
				return fmt.Errorf("variable name %q has a bad percent-encoding", n)
			}
			i += 2
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
		default:
			return fmt.Errorf("variable name %q may hold only letters, digits, _, . and %%XX", n)
		}
		prevDot = false
	}
	return nil
}

// String returns the template as written.
func (t *Template) String() string { return t.raw }

// Reserved reports whether some expression keeps reserved characters
// unencoded ({+x}, {#x}), so that a value may carry "/", "?" or "#".
func (t *Template) Reserved() bool { return t.reserved }

// Vars returns the template's variables in order of appearance.
func (t *Template) Vars() []*VarSpec { return t.vars }

// Literal returns the template text before its first expression,
// percent-encoded as it will be sent.
func (t *Template) Literal() string {
	if len(t.parts) > 0 && t.parts[0].expr == nil {
		return t.parts[0].lit
	}
	return ""
}

// ValueKind says what a Value holds.
type ValueKind uint8

// Value kinds. Undefined covers missing, null, an empty list and an empty
// map, which RFC 6570 all skip.
const (
	Undefined ValueKind = iota
	String
	List
	Map
)

// Value is a variable's value for expansion. Numbers and booleans are passed
// as their JSON text in Str.
type Value struct {
	Kind ValueKind
	Str  string
	List []string
	Map  []KV // in order
}

// KV is one member of a Map value.
type KV struct{ Key, Value string }

// ExpandError is an expansion that RFC 6570 forbids, such as a prefix on a
// list.
type ExpandError struct {
	Var string
	Msg string
}

// Error names the variable and the problem.
func (e *ExpandError) Error() string { return fmt.Sprintf("{%s}: %s", e.Var, e.Msg) }

// Expand fills the template with the values lookup gives.
func (t *Template) Expand(lookup func(v *VarSpec) Value) (string, error) {
	return t.expand(lookup, nil)
}

// Span is the part of an expansion that one variable wrote: bytes
// [Start, End) of the result, its name and separators included.
type Span struct {
	Var        *VarSpec
	Start, End int
}

// ExpandSpans is Expand that also reports where each defined variable's
// value went, in order, so that a caller can tell which input produced a
// part of the URL.
func (t *Template) ExpandSpans(lookup func(v *VarSpec) Value) (string, []Span, error) {
	var spans []Span
	s, err := t.expand(lookup, &spans)
	return s, spans, err
}

func (t *Template) expand(lookup func(v *VarSpec) Value, spans *[]Span) (string, error) {
	var b strings.Builder
	b.Grow(len(t.raw) + 32)
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
			continue
		}
		if err := p.expr.expand(&b, lookup, spans); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func (e *expression) expand(b *strings.Builder, lookup func(v *VarSpec) Value, spans *[]Span) error {
	op := e.op
	first := true
	for _, v := range e.vars {
		val := lookup(v)
		switch val.Kind {
		case Undefined:
			continue
		case List:
			if len(val.List) == 0 {
				continue
			}
		case Map:
			if len(val.Map) == 0 {
				continue
			}
		}
		if first {
			b.WriteString(op.first)
			first = false
		} else {
			b.WriteString(op.sep)
		}
		start := b.Len()
		if err := expandValue(b, op, v, val); err != nil {
			return err
		}
		if spans != nil {
			*spans = append(*spans, Span{Var: v, Start: start, End: b.Len()})
		}
	}
	return nil
}

// expandValue writes one defined variable's value as its operator says.
// Never inlined: its room would be in expand's frame, which is on the
// stack while lookup reads the input.
//
//go:noinline
func expandValue(b *strings.Builder, op operator, v *VarSpec, val Value) error {
	switch val.Kind {
	case String:
		s := val.Str
		if v.Prefix > 0 {
			s = prefix(s, v.Prefix)
		}
		if op.named {
			encode(b, v.Name, true)
			if s == "" {
				b.WriteString(op.ifemp)
				return nil
			}
			b.WriteByte('=')
		}
		encode(b, s, op.allowReserved)
	case List, Map:
		if v.Prefix > 0 {
			return &ExpandError{v.Name, "a prefix modifier applies only to a string, not a list or an object"}
		}
		if !v.Explode {
			if op.named {
				encode(b, v.Name, true)
				b.WriteByte('=')
			}
			if val.Kind == List {
				for i, s := range val.List {
					if i > 0 {
						b.WriteByte(',')
					}
					encode(b, s, op.allowReserved)
				}
			} else {
				for i, kv := range val.Map {
					if i > 0 {
						b.WriteByte(',')
					}
					encode(b, kv.Key, op.allowReserved)
					b.WriteByte(',')
					encode(b, kv.Value, op.allowReserved)
				}
			}
			return nil
		}
		if val.Kind == List {
			for i, s := range val.List {
				if i > 0 {
					b.WriteString(op.sep)
				}
				if op.named {
					encode(b, v.Name, true)
					if s == "" {
						b.WriteString(op.ifemp)
						continue
					}
					b.WriteByte('=')
				}
				encode(b, s, op.allowReserved)
			}
		} else {
			for i, kv := range val.Map {
				if i > 0 {
					b.WriteString(op.sep)
				}
				encode(b, kv.Key, op.allowReserved)
				if op.named && kv.Value == "" {
					b.WriteString(op.ifemp)
					continue
				}
				b.WriteByte('=')
				encode(b, kv.Value, op.allowReserved)
			}
		}
	}
	return nil
}

// prefix returns the first n characters (code points) of s.
func prefix(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

const upperHex = "0123456789ABCDEF"

func pctEncode(b *strings.Builder, c byte) {
	b.WriteByte('%')
	b.WriteByte(upperHex[c>>4])
	b.WriteByte(upperHex[c&15])
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isReserved(c byte) bool {
	return strings.IndexByte(":/?#[]@!$&'()*+,;=", c) >= 0
}

// encode writes s percent-encoded as UTF-8: only unreserved characters pass,
// or with allowReserved also reserved characters and existing %XX triplets.
func encode(b *strings.Builder, s string, allowReserved bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isUnreserved(c):
			b.WriteByte(c)
		case allowReserved && isReserved(c):
			b.WriteByte(c)
		case allowReserved && c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteString(s[i : i+3])
			i += 2
		default:
			pctEncode(b, c)
		}
	}
}
