package httpspec

import (
	"fmt"
	"net/url"
	"strings"
	"unsafe"

	"github.com/httptools/httptools/synth"
	"github.com/tidwall/gjson"
)

// Expanding the URL template with the input, and refusing what would take
// the path or query out of the template.

// expandURL fills the template after checking the input's values: a simple
// {name} needs a present, primitive value.
func (h *Handler) expandURL(in []byte) (string, error) {
	var bad error
	// The values are copied into the URL as it is built; the view of the
	// input does not outlive this call.
	view := unsafe.String(unsafe.SliceData(in), len(in))
	lookup := func(v *VarSpec) Value {
		r := gjson.Get(view, h.vars[v.Name])
		if v.Operator == 0 && (!r.Exists() || r.Type == gjson.Null || r.IsArray() || r.IsObject()) {
			if bad == nil {
				bad = notPrimitive(v, &r)
			}
			return Value{}
		}
		return toValue(r)
	}
	// Where each value went is needed only to tell which input broke a
	// rule, and for reserved expansion ({+x}, {#x}), whose values may hold
	// delimiters: the plain path costs no spans.
	var u string
	var spans []Span
	var err error
	if h.tmpl.Reserved() {
		u, spans, err = h.tmpl.ExpandSpans(lookup)
	} else {
		u, err = h.tmpl.Expand(lookup)
	}
	if bad != nil {
		return "", bad
	}
	if err != nil {
		return "", synth.HandlerError(ReasonInvalidURL, "URL template: %v", err)
	}
	// The host is literal in the template, and expansion encodes every
	// delimiter in values; check again anyway.
	originLen := len(h.origin.scheme) + 3 + len(h.origin.host)
	if len(u) < originLen || !strings.EqualFold(u[:len(h.origin.scheme)], h.origin.scheme) || u[len(h.origin.scheme):len(h.origin.scheme)+3] != "://" ||
		!strings.EqualFold(u[len(h.origin.scheme)+3:originLen], h.origin.host) {
		return "", synth.HandlerError(ReasonInvalidURL, "the expanded URL left the template's origin %s://%s", h.origin.scheme, h.origin.host)
	}
	if rest := u[originLen:]; rest != "" && !strings.ContainsRune("/?#", rune(rest[0])) {
		return "", synth.HandlerError(ReasonInvalidURL, "the expanded URL left the template's origin %s://%s", h.origin.scheme, h.origin.host)
	}
	if bad := dotSegments(u, originLen); len(bad) > 0 {
		if spans == nil {
			_, spans, _ = h.tmpl.ExpandSpans(lookup)
		}
		return "", h.dotSegmentError(u, bad[0], spans)
	}
	if spans != nil {
		if err := h.delimiterError(u, originLen, spans); err != nil {
			return "", err
		}
	}
	return u, nil
}

// delimiterError refuses a value that would end the URL's path or query
// early: a "?" written by an expression of the path (the rest of the path
// becomes a query), or a "#" written by any expression but a fragment one
// (the rest is never sent). Only reserved expansion ({+x}) lets them
// through unencoded.
func (h *Handler) delimiterError(u string, originLen int, spans []Span) error {
	pathEnd := strings.IndexAny(u[originLen:], "?#")
	for _, sp := range spans {
		op := sp.Var.Operator
		if op == '#' {
			continue
		}
		text := u[sp.Start:sp.End]
		inPath := pathEnd < 0 || sp.Start < originLen+pathEnd || (sp.Start == originLen+pathEnd && op != '?' && op != '&')
		var c string
		switch {
		case strings.Contains(text, "#"):
			c = "#"
		case inPath && strings.Contains(text, "?"):
			c = "?"
		default:
			continue
		}
		part := "query"
		if inPath {
			part = "path"
		}
		return h.inputInvalid(inputPointer(sp.Var.Name), fmt.Sprintf("holds %q, which would end the URL's %s there: the rest of the template would not be sent as written", c, part))
	}
	return nil
}

// dotSegmentError refuses input whose value makes a "." or ".." path
// segment, naming the input that wrote it.
func (h *Handler) dotSegmentError(u string, seg [2]int, spans []Span) error {
	ptr := ""
	for _, sp := range spans {
		if sp.Start < seg[1] && sp.End > seg[0] {
			ptr = inputPointer(sp.Var.Name)
			break
		}
	}
	return h.inputInvalid(ptr, fmt.Sprintf("makes the URL path segment %q, which servers resolve as \".\" or \"..\" and so climb out of the template's path: a value in the path must not be \".\" or \"..\"", u[seg[0]:seg[1]]))
}

// inputPointer is the JSON pointer of a template variable's input ("a.b"
// reads /a/b).
func inputPointer(name string) string {
	var b strings.Builder
	for _, k := range InputKeys(name) {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// InputKeys is the input member a URL template variable reads: a.b is
// member b of member a; a percent-encoded character is the character
// (max%2Dkeys reads "max-keys", %24filter reads "$filter", assignee%2Eany
// reads "assignee.any"), so that a parameter whose name RFC 6570 cannot
// spell is sent under its name (servers decode it) and read from a member
// of that name.
func InputKeys(name string) []string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		if d, err := url.PathUnescape(p); err == nil {
			parts[i] = d
		}
	}
	return parts
}

// inputInvalid refuses input for its structure: input-validation-failed,
// reason input-invalid, one violation at ptr.
func (h *Handler) inputInvalid(ptr, msg string) error {
	where := ptr
	if where == "" {
		where = "/"
	}
	return &synth.Error{
		Code: synth.CodeInputValidationFailed, Reason: synth.ReasonInputInvalid,
		Violations: []synth.Violation{{Pointer: ptr, Message: msg}},
		Message:    fmt.Sprintf("Tool %q input failed validation: %s: %s", h.toolID, where, msg),
	}
}

func kindName(r gjson.Result) string {
	if r.IsArray() {
		return "array"
	}
	return "object"
}

// toValue converts an input value for RFC 6570: strings as they are, numbers
// as their JSON text (42, never 42.0; big integers exact), booleans as
// true/false, arrays and objects as lists and maps of those.
func toValue(r gjson.Result) Value {
	switch {
	case !r.Exists() || r.Type == gjson.Null:
		return Value{}
	case r.IsArray():
		v := Value{Kind: List}
		r.ForEach(func(_, it gjson.Result) bool {
			v.List = append(v.List, scalar(it))
			return true
		})
		return v
	case r.IsObject():
		v := Value{Kind: Map}
		r.ForEach(func(k, it gjson.Result) bool {
			v.Map = append(v.Map, KV{k.Str, scalar(it)})
			return true
		})
		return v
	}
	return Value{Kind: String, Str: scalar(r)}
}

func scalar(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		return r.Str
	case gjson.Null:
		return ""
	}
	return r.Raw
}

// notPrimitive words why a simple placeholder's value cannot be sent. Apart
// from the lookup and never inlined, so that the words' arguments take no
// room in the frame that reads the input: the URL's expansion is the
// deepest point before a call waits, and a goroutine waits on a stack as
// big as its deepest point was.
//
//go:noinline
func notPrimitive(v *VarSpec, r *gjson.Result) error {
	if !r.Exists() || r.Type == gjson.Null {
		return synth.HandlerError(ReasonMissingValue, "URL placeholder {%s} has no value: the input must set %q", v.Name, strings.Join(InputKeys(v.Name), "."))
	}
	return synth.HandlerError(ReasonNotPrimitive, "URL placeholder {%s} must be a primitive (string, number or boolean), not an %s; use an operator form such as {?%s*} for lists and objects", v.Name, kindName(*r), v.Name)
}
