package jsoncheck

// The error of a refused document: its kind, where it is, and its words
// (with and without what of the document it quotes).

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Kind says what is wrong with a document.
type Kind int

// Kinds of Error.
const (
	Syntax    Kind = iota + 1 // not well-formed JSON, or not one value
	Duplicate                 // an object names a member twice
	TooDeep                   // nested deeper than the limit
	BadUTF8                   // a string is not valid UTF-8
	BadNumber                 // a number too long, or with too large an exponent
)

// Error is a refused document: what is wrong, where (a byte offset and a
// JSON pointer to the value concerned), and for a duplicate the name.
type Error struct {
	Kind    Kind
	Offset  int64
	Pointer string // RFC 6901; "" for the whole document
	Name    string // the duplicated member name
	Limit   int    // the nesting limit, for TooDeep
	Err     error  // the parser's own error, for Syntax and BadUTF8
}

func (e *Error) Error() string {
	switch e.Kind {
	case Duplicate:
		return fmt.Sprintf("has the member %q twice%s: each name may appear once per object", e.Name, e.at())
	case TooDeep:
		return fmt.Sprintf("is nested deeper than %d levels%s", e.Limit, e.at())
	case BadUTF8:
		return fmt.Sprintf("holds text that is not valid UTF-8 at byte %d", e.Offset)
	case BadNumber:
		return fmt.Sprintf("holds a number at byte %d that is longer than %d characters or has an exponent beyond ±%d%s", e.Offset, MaxNumberLength, MaxExponent, e.at())
	}
	return fmt.Sprintf("is not valid JSON at byte %d: %s", e.Offset, describe(e.Err))
}

func (e *Error) at() string {
	if e.Pointer == "" {
		return ""
	}
	return " at " + strconv.Quote(e.Pointer)
}

// describe strips the parser's package prefix from its message.
func describe(err error) string {
	if err == nil {
		return "syntax error"
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) && se.Err != nil {
		return se.Err.Error()
	}
	return err.Error()
}

// pointerAt names the value that holds the bracket at off, for messages: it
// reads tokens up to there, which costs no more than the depth limit allows.
func pointerAt(data []byte, off int64) string {
	dec := jsontext.NewDecoder(bytes.NewReader(data[:off]), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	for {
		if _, err := dec.ReadToken(); err != nil {
			break
		}
	}
	return string(dec.StackPointer())
}

// Tokens returns the reference tokens of the error's pointer, unescaped: the
// member names and array indexes from the root to the value concerned.
func (e *Error) Tokens() []string {
	var out []string
	for t := range jsontext.Pointer(e.Pointer).Tokens() {
		out = append(out, t)
	}
	return out
}

// At is the JSON pointer of what is wrong: for a duplicate, the member named
// twice (its object's pointer and its name); else the value concerned.
func (e *Error) At() string {
	if e.Kind != Duplicate {
		return e.Pointer
	}
	return e.Pointer + "/" + strings.ReplaceAll(strings.ReplaceAll(e.Name, "~", "~0"), "/", "~1")
}

// Detail is the parser's own words for a syntax error, without the offset.
func (e *Error) Detail() string { return describe(e.Err) }

// What words what is wrong without quoting the document: a document from
// outside (an upstream's answer) writes its own member names, so the
// pointer, a duplicate's name and the parser's words are its words, which
// Where gives apart.
func (e *Error) What() string {
	switch e.Kind {
	case Duplicate:
		return "names a member twice in one object (each name may appear once per object)"
	case TooDeep:
		return fmt.Sprintf("is nested deeper than %d levels", e.Limit)
	case BadUTF8:
		return fmt.Sprintf("holds text that is not valid UTF-8 at byte %d", e.Offset)
	case BadNumber:
		return fmt.Sprintf("holds a number at byte %d that is longer than %d characters or has an exponent beyond ±%d", e.Offset, MaxNumberLength, MaxExponent)
	}
	return fmt.Sprintf("is not valid JSON at byte %d", e.Offset)
}

// Where is what of the document the error quotes: where the fault is (a
// duplicate's pointer and name, the value's pointer) or, for a syntax or
// UTF-8 error, the parser's words; "" when nothing.
func (e *Error) Where() string {
	switch e.Kind {
	case Duplicate:
		return fmt.Sprintf("the member %q%s", e.Name, e.at())
	case Syntax, BadUTF8:
		if e.Err == nil {
			return ""
		}
		return describe(e.Err)
	}
	return strings.TrimPrefix(e.at(), " ")
}
