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
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
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

// scan reports nesting deeper than max and numbers over their bounds.
// Most documents are first cleared by a cheaper look that cannot miss
// either (see within); the rest are scanned exactly.
func scan(data []byte, max int) error {
	if within(data, max) {
		return nil
	}
	return scanExact(data, max)
}

// within reports that data can hold no nesting deeper than max and no
// number over its bounds, by looking at less than scanExact does; false
// means it may (scanExact then says).
//
//   - Depth: nesting deeper than max needs more than max '[' and '{'.
//     bytes.Count is vectorised.
//   - Length: a number longer than MaxNumberLength has a run of at least
//     minDigitRun digits (its integer, fraction or exponent), and such a run
//     covers a byte at every (minDigitRun-1)th offset: those are probed.
//   - Exponent: one beyond MaxExponent is an e or E right after a digit,
//     then at least three digits (after a sign): each e and E is found
//     eight bytes at a time and looked at.
//
// Strings are not told apart: a string that looks like a number only
// sends the document to the exact scan.
func within(data []byte, max int) bool {
	if bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) > max {
		return false
	}
	n := len(data)
	for i := minDigitRun - 2; i < n; i += minDigitRun - 1 {
		if !isDigit(data[i]) {
			continue
		}
		a, b := i, i+1
		for a > 0 && isDigit(data[a-1]) {
			a--
		}
		for b < n && isDigit(data[b]) {
			b++
		}
		if b-a >= minDigitRun {
			return false
		}
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		// 'E' | 0x20 is 'e', and only 'E' and 'e' become 'e'.
		m := hasByte(binary.LittleEndian.Uint64(data[i:])|0x2020202020202020, 'e')
		for m != 0 {
			// Most e's follow a letter: a digit before it is looked at
			// first, here.
			if k := i + bits.TrailingZeros64(m)/8; k > 0 && data[k-1]-'0' < 10 && data[k]|0x20 == 'e' && bigExponent(data, k) {
				return false
			}
			m &= m - 1
		}
	}
	for ; i < n; i++ {
		if data[i]|0x20 == 'e' && bigExponent(data, i) {
			return false
		}
	}
	return true
}

// minDigitRun is a run of digits every number over MaxNumberLength has one
// at least as long as: its digits number at least MaxNumberLength-3 (a
// sign, a point, an e and the exponent's sign aside), in at most three runs.
const minDigitRun = (MaxNumberLength - 3 + 2) / 3

// bigExponent reports whether the e at k may start an exponent of three or
// more digits.
func bigExponent(data []byte, k int) bool {
	if k == 0 || !isDigit(data[k-1]) {
		return false
	}
	j := k + 1
	if j < len(data) && (data[j] == '+' || data[j] == '-') {
		j++
	}
	return j+3 <= len(data) && isDigit(data[j]) && isDigit(data[j+1]) && isDigit(data[j+2])
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanExact reports nesting deeper than max and numbers over their bounds,
// in one pass without parsing: what is inside strings does not count.
// Malformed input is left to the parser.
func scanExact(data []byte, max int) error {
	depth := 0
	n := len(data)
	for i := 0; i < n; {
		c := data[i]
		switch class[c] {
		case 0:
			i++
		case cQuote:
			i = skipString(data, i+1)
		case cOpen:
			depth++
			if depth > max {
				return &Error{Kind: TooDeep, Offset: int64(i), Limit: max, Pointer: pointerAt(data, int64(i))}
			}
			i++
		case cClose:
			depth--
			i++
		case cNumber:
			end, exp := i+1, -1
		number:
			for ; end < n; end++ {
				switch data[end] {
				case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '-', '+', '.':
				case 'e', 'E':
					if exp < 0 {
						exp = end
					}
				default:
					break number
				}
			}
			if end-i > MaxNumberLength || exp >= 0 && !exponentOK(data[exp+1:end]) {
				return &Error{Kind: BadNumber, Offset: int64(i), Pointer: pointerAt(data, int64(end))}
			}
			i = end
		}
	}
	return nil
}

// skipString returns the offset just past the quote that closes the string
// whose content starts at i, or len(data) if none does. It reads eight
// bytes at a time, looking for a quote or a backslash in each word at once
// (a backslash and the byte it escapes are stepped over).
func skipString(data []byte, i int) int {
	for i+8 <= len(data) {
		w := binary.LittleEndian.Uint64(data[i:])
		m := hasByte(w, '"') | hasByte(w, '\\')
		if m == 0 {
			i += 8
			continue
		}
		// The lowest flagged byte is a true match: the trick's false
		// positives only ever follow a true one.
		j := i + bits.TrailingZeros64(m)/8
		if data[j] == '"' {
			return j + 1
		}
		i = j + 2
	}
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
	return len(data)
}

// hasByte flags (with its high bit) each byte of w equal to b.
func hasByte(w uint64, b byte) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := w ^ (ones * uint64(b))
	return (x - ones) &^ x & highs
}

// Byte classes of scan.
const (
	cQuote = 1 + iota
	cOpen
	cClose
	cNumber
)

var class = func() (t [256]byte) {
	t['"'] = cQuote
	t['['], t['{'] = cOpen, cOpen
	t[']'], t['}'] = cClose, cClose
	t['-'] = cNumber
	for c := '0'; c <= '9'; c++ {
		t[c] = cNumber
	}
	return t
}()

// numberOK bounds a number's length and exponent.
func numberOK(n []byte) bool {
	if len(n) > MaxNumberLength {
		return false
	}
	k := bytes.IndexAny(n, "eE")
	return k < 0 || exponentOK(n[k+1:])
}

// exponentOK bounds the digits after a number's e: a malformed exponent is
// left to the parser.
func exponentOK(exp []byte) bool {
	if len(exp) > 0 && (exp[0] == '+' || exp[0] == '-') {
		exp = exp[1:]
	}
	v := 0
	for _, c := range exp {
		if c < '0' || c > '9' {
			return true // malformed: the parser says so
		}
		v = v*10 + int(c-'0')
		if v > MaxExponent {
			return false
		}
	}
	return true
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

// CheckReader is CheckWith for a value read from r as it arrives (an
// answer being streamed on): it reads r to its end, holding only the token
// being read and the names of the open objects, and reports the first rule
// broken as an *Error, or r's own error.
func CheckReader(r io.Reader, maxDepth int, o Options) error {
	cr := &countingReader{r: r, grow: o.Grow}
	dec := jsontext.NewDecoder(cr, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(o.AllowInvalidUTF8))
	cr.dec = dec
	for {
		if dec.PeekKind() == '0' {
			// A number: its raw text without copying it.
			v, err := dec.ReadValue()
			if err != nil {
				return wrapStream(err)
			}
			if !numberOK(v) {
				return &Error{Kind: BadNumber, Offset: dec.InputOffset(), Pointer: string(dec.StackPointer())}
			}
		} else {
			tok, err := dec.ReadToken()
			if err != nil {
				if err == io.EOF {
					return &Error{Kind: Syntax, Offset: dec.InputOffset(), Err: errors.New("unexpected end of input")}
				}
				return wrapStream(err)
			}
			if k := tok.Kind(); (k == '{' || k == '[') && dec.StackDepth() > maxDepth {
				return &Error{Kind: TooDeep, Offset: dec.InputOffset() - 1, Limit: maxDepth, Pointer: string(dec.StackPointer())}
			}
		}
		if dec.StackDepth() == 0 {
			break
		}
	}
	if _, err := dec.ReadToken(); err == nil {
		return &Error{Kind: Syntax, Offset: dec.InputOffset(), Err: errors.New("more than one value")}
	} else if err != io.EOF {
		return wrapStream(err)
	}
	return nil
}

// wrapStream is wrap for a streaming decoder: a reader's own error (a cap,
// a broken connection) is returned as it is.
func wrapStream(err error) error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	return wrap(err, nil)
}

// countingReader tells Options.Grow how much the decoder may hold: what it
// has read and not yet consumed, plus the room it reads into.
type countingReader struct {
	r          io.Reader
	dec        *jsontext.Decoder
	grow       func(int64) error
	read, high int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.grow != nil {
		if held := c.read - c.dec.InputOffset() + int64(len(p)); held > c.high {
			if err := c.grow(held - c.high); err != nil {
				return 0, err
			}
			c.high = held
		}
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}
