// Package jsoncheck checks JSON that comes from outside the process — tool
// input, upstream answers, manifests, case files, apps.json, OpenAPI
// documents — before anything else reads it: well-formed, one value, no
// object with the same member name twice (at any depth, after unescaping),
// and no deeper than a nesting limit. The check is one linear pass that
// never recurses more than the limit, so a hostile document costs time in
// proportion to its size and no more stack than the limit, and every later
// reader (the schema validator, the URL template, the body builder) sees a
// document they cannot read differently.
//
// Most documents are cleared by one pass of our own that checks it all at
// once (see accepts). What that pass cannot clear, and every refusal, is
// decided as before it: syntax, UTF-8 and duplicate names by
// github.com/go-json-experiment/json's jsontext (the encoding/json/v2 text
// layer), which words the error; the depth and the numbers' bounds by a
// look of our own ahead of it: counting brackets, probing digit runs and
// looking at each e clears most documents at a fraction of a scan's cost,
// and the rest are scanned exactly.
package jsoncheck

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Nesting limits. A value nested deeper is refused before it is parsed.
const (
	// MaxDepth bounds values: tool input and upstream answers. 128 is the
	// limit serde_json applies by default; real API answers stay far below.
	MaxDepth = 128
	// MaxDocumentDepth bounds documents the project reads: manifests (whose
	// schemas nest two levels per property), case files, apps.json, OpenAPI.
	MaxDocumentDepth = 512
	// MaxNumberLength and MaxExponent bound a number's text: a validator
	// compares numbers exactly (as big.Rat), and 1e999999999 would cost it
	// gigabytes (or crash it). Every float64 and every 128-bit integer fits.
	MaxNumberLength = 128
	MaxExponent     = 400
)

// Options relax a check.
type Options struct {
	// AllowInvalidUTF8 accepts strings that are not valid UTF-8 (upstream
	// answers from servers that send Latin-1). Input never may.
	AllowInvalidUTF8 bool
	// Grow, for CheckReader, is told before the reader's buffer would grow
	// past its largest size yet, with the bytes it grows by (a long string
	// is held whole while it is read); an error stops the check with it.
	Grow func(n int64) error
}

// The parser's options, made once: unique names, and UTF-8 required or not.
var (
	strict  = []jsontext.Options{jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false)}
	lenient = []jsontext.Options{jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(true)}
)

var decoders = sync.Pool{New: func() any { return &pooled{} }}

type pooled struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

// Check reports whether data is one well-formed JSON value, with unique
// member names, nested at most maxDepth levels (a scalar is 0, [] is 1).
// The error is an *Error.
func Check(data []byte, maxDepth int) error { return CheckWith(data, maxDepth, Options{}) }

// CheckWith is Check with options.
func CheckWith(data []byte, maxDepth int, o Options) error {
	if accepts(data, maxDepth, o.AllowInvalidUTF8) {
		return nil
	}
	return checkFully(data, maxDepth, o)
}

// checkFully is CheckWith without its fast pass: the bounds by scan, the
// rest by jsontext, which words the error.
func checkFully(data []byte, maxDepth int, o Options) error {
	if err := scan(data, maxDepth); err != nil {
		return err
	}
	// The common case, a good document, through jsontext's own pooled
	// decoder (one reset, no buffer to wrap); a refused one is read again
	// below for the error's offset and pointer.
	opts := strict
	if o.AllowInvalidUTF8 {
		opts = lenient
	}
	if jsontext.Value(data).IsValid(opts...) {
		return nil
	}
	p := decoders.Get().(*pooled)
	defer decoders.Put(p)
	p.buf = *bytes.NewBuffer(data) // parsed in place: jsontext reads a bytes.Buffer without copying
	p.dec.Reset(&p.buf, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(o.AllowInvalidUTF8))
	defer func() { p.buf = bytes.Buffer{}; p.dec.Reset(&p.buf) }()
	if _, err := p.dec.ReadValue(); err != nil {
		return wrap(err, data)
	}
	if _, err := p.dec.ReadValue(); err == nil {
		return &Error{Kind: Syntax, Offset: p.dec.InputOffset(), Err: errors.New("more than one value")}
	} else if err != io.EOF {
		return wrap(err, data)
	}
	return nil
}

func wrap(err error, data []byte) error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			return &Error{Kind: Syntax, Offset: int64(len(data)), Err: errors.New("unexpected end of input")}
		}
		return &Error{Kind: Syntax, Err: err}
	}
	switch {
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		ptr := se.JSONPointer
		return &Error{Kind: Duplicate, Offset: se.ByteOffset, Pointer: string(ptr.Parent()), Name: ptr.LastToken()}
	case se.Err != nil && se.Err.Error() == "invalid UTF-8": // jsontext does not export the variable
		return &Error{Kind: BadUTF8, Offset: se.ByteOffset, Pointer: string(se.JSONPointer), Err: se}
	}
	return &Error{Kind: Syntax, Offset: se.ByteOffset, Pointer: string(se.JSONPointer), Err: se}
}
