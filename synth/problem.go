package synth

import (
	"sort"
	"strconv"
	"strings"
)

// Severity says whether a problem refuses the manifest.
type Severity int

// Severities.
const (
	SeverityError Severity = iota
	SeverityWarning
)

// Problem is one load-time finding: the dotted field path it is about
// ("spec.headers[2].value", "" for the whole document) and a message that says
// what to change.
type Problem struct {
	Path     string
	Message  string
	Severity Severity
}

// String renders the problem as validate prints it, without the file name.
func (p Problem) String() string {
	var b strings.Builder
	if p.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems collects findings; the zero value is ready to use. Synthesizers
// receive one to add their own.
type Problems struct {
	list        []Problem
	schemaPaths []string // paths the manifest schema refused
	compileErrs int      // errors from compiling input/output schemas
}

// Error adds an error at path. An error at a path the manifest schema already
// refused (or inside it) is dropped: the schema's message comes first and one
// message per mistake is enough.
func (ps *Problems) Error(path, msg string) {
	if ps.underSchemaError(path) {
		return
	}
	ps.list = append(ps.list, Problem{Path: path, Message: msg})
}

func (ps *Problems) schemaError(path, msg string) {
	ps.list = append(ps.list, Problem{Path: path, Message: msg})
	ps.schemaPaths = append(ps.schemaPaths, path)
}

func (ps *Problems) compileError(path, msg string) {
	ps.list = append(ps.list, Problem{Path: path, Message: msg})
	ps.compileErrs++
}

// Warn adds a warning at path.
func (ps *Problems) Warn(path, msg string) {
	ps.list = append(ps.list, Problem{Path: path, Message: msg, Severity: SeverityWarning})
}

// HasErrors reports whether any error (not warning) was added.
func (ps *Problems) HasErrors() bool {
	for _, p := range ps.list {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

// underSchemaError reports whether the manifest schema refused path or a
// field containing it.
func (ps *Problems) underSchemaError(path string) bool {
	for _, s := range ps.schemaPaths {
		if s == path || s == "" || within(path, s) {
			return true
		}
	}
	return false
}

// SchemaRefused reports whether the manifest schema refused anything at path,
// inside it or around it; synthesizers use it to skip rules on fields whose
// shape is already known to be wrong.
func (ps *Problems) SchemaRefused(path string) bool {
	for _, s := range ps.schemaPaths {
		if s == path || s == "" || path == "" || within(path, s) || within(s, path) {
			return true
		}
	}
	return false
}

func within(inner, outer string) bool {
	return strings.HasPrefix(inner, outer) && (inner[len(outer)] == '.' || inner[len(outer)] == '[')
}

// List returns the findings, errors first, each group in path order, stable
// for problems at the same path.
func (ps *Problems) List() []Problem {
	out := append([]Problem(nil), ps.list...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Severity != out[j].Severity {
			return out[i].Severity < out[j].Severity
		}
		return pathLess(out[i].Path, out[j].Path)
	})
	return out
}

// pathLess orders field paths naturally: items[2] before items[10].
func pathLess(a, b string) bool {
	for a != "" && b != "" {
		ia, ib := strings.IndexAny(a, "0123456789"), strings.IndexAny(b, "0123456789")
		if ia != ib || ia < 0 {
			return a < b
		}
		if a[:ia] != b[:ib] {
			return a < b
		}
		a, b = a[ia:], b[ib:]
		na, nb := digits(a), digits(b)
		x, _ := strconv.Atoi(a[:na])
		y, _ := strconv.Atoi(b[:nb])
		if x != y {
			return x < y
		}
		a, b = a[na:], b[nb:]
	}
	return a < b
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// JoinPath appends a JSON object key or array index to a dotted field path.
func JoinPath(base string, key any) string {
	switch k := key.(type) {
	case int:
		return base + "[" + strconv.Itoa(k) + "]"
	case string:
		if !plainKey(k) {
			k = strconv.Quote(k)
			return base + "[" + k + "]"
		}
		if base == "" {
			return k
		}
		return base + "." + k
	}
	panic("synth.JoinPath: key must be int or string")
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
