package redact

import (
	"bytes"
	"fmt"
	"io"
)

// JSONWriter masks every secret of a Set in a JSON text written to it in
// pieces of any size, as RedactOutput does the whole text: a secret cut
// across two writes, at any byte, is masked as if it had come in one.
//
// What is outside strings and numbers passes through at once; a string is
// held until it ends, and a long one (past a window) is passed on in
// windows, each holding back its last bytes (enough for the longest
// spelling a match's start can have) and cut only where no match and no
// escape crosses the cut. A member name is held whole.
//
// A JSONWriter belongs to one stream and is not safe for concurrent use.
// Close writes what it still holds; the text must be valid JSON for the
// result to be.
type JSONWriter struct {
	w     io.Writer
	set   *Set
	c     *compiled // nil until the first write; then nil for a set with no secret
	ready bool
	err   error
	// dupNames lets two member names of one object read the same once
	// masked (RedactJSON's texts are the library's own).
	dupNames bool
	changed  bool // something was masked

	state    lexState
	esc      bool // in a string: the byte before was a backslash
	isName   bool // the string being read is a member name
	wantName bool // the next string is a member name
	depth    int
	stack    []frame // the open containers, up to maxTracked deep
	// tok is the string's content (or the number's text) read so far
	// and not yet written, after its first ctx bytes, which were written:
	// the context a long string's next window is decoded with.
	tok    []byte
	ctx    int
	scanAt int // the length of tok at which a long string is next cut
}

type lexState uint8

const (
	outside lexState = iota
	inString
	inNumber
)

// frame is one open object or array; names are its member names that
// hold Mask, to find two that read the same once masked.
type frame struct {
	object bool
	names  map[string]bool
}

// Window sizes of a long string.
const (
	// maxSpread is the most bytes one decoded byte's spelling can take:
	// a JSON \u escape (6 bytes a byte) of an escape of 18 bytes
	// (&NonBreakingSpace;) of an escape of 18: the three depths a string
	// is decoded to (RedactJSON).
	maxSpread = 6 * 18 * 18
	// holdBack is what a window keeps of a string that may hold a
	// match: a match's head (MinPrefix bytes), and the byte after it,
	// at their longest spelling.
	holdBack = (MinPrefix + 2) * maxSpread
	// clearBack is what a window keeps of a string mayHold cleared: a
	// head or an escape that the next bytes may complete.
	clearBack = 64
	// window is the least a string holds before it is cut.
	window = 64 << 10
	// context is what a window keeps of the bytes it wrote, to decode
	// the next one as the whole string would be.
	context = 2 * maxSpread
	// maxTracked bounds the containers whose names are tracked; deeper
	// ones (no answer is: jsoncheck refuses past 128) are not.
	maxTracked = 4096
)

// NameError says two member names of one object read the same once the
// secrets in them were masked.
type NameError struct {
	Name string // the name, masked
}

func (e *NameError) Error() string {
	return fmt.Sprintf("two member names of one object read %q once the credentials in them are masked", e.Name)
}

// JSONWriter returns a writer that passes a JSON text on to w with every
// secret of s masked (RedactOutput). The set is read at the first write:
// secrets added after it are not searched for.
func (s *Set) JSONWriter(w io.Writer) *JSONWriter {
	return &JSONWriter{w: w, set: s}
}

// Write passes p on, holding back what a match may still need.
func (jw *JSONWriter) Write(p []byte) (int, error) {
	if jw.err != nil {
		return 0, jw.err
	}
	if !jw.ready {
		jw.c, jw.ready = jw.set.snapshot(), true
	}
	if jw.c == nil {
		return jw.out(p)
	}
	// A string or number that starts and ends in p needs looking at only
	// when p may hold a secret at all.
	hot := jw.c.mayHoldBytes(p)
	run := 0 // the start of the bytes of p not yet written or held
	for i := 0; i < len(p) && jw.err == nil; {
		switch jw.state {
		case outside:
			for i < len(p) && !startsToken(p[i]) {
				jw.structural(p[i])
				i++
			}
			if i == len(p) {
				break
			}
			if p[i] == '"' {
				i++
				jw.state, jw.isName, jw.wantName = inString, jw.wantName, false
			} else {
				jw.state = inNumber
			}
			jw.write(p[run:i])
			run = i
		case inString:
			end, closed := jw.stringEnd(p, i)
			if !closed {
				jw.hold(p[i:])
				i, run = len(p), len(p)
				break
			}
			jw.endString(p[i:end], hot)
			jw.state = outside
			i, run = end+1, end // the quote goes out with what follows
		case inNumber:
			end := i
			for end < len(p) && numberByte(p[end]) {
				end++
			}
			if end == len(p) {
				jw.tok = append(jw.tok, p[i:]...)
				i, run = len(p), len(p)
				break
			}
			jw.endNumber(p[i:end], hot)
			jw.state = outside
			i, run = end, end
		}
	}
	if jw.state == outside && run < len(p) {
		jw.write(p[run:])
	}
	if jw.err != nil {
		return 0, jw.err
	}
	return len(p), nil
}

// Close writes what the writer holds: a number that ended with the text,
// or the rest of a string the text broke off in. It reports the first
// error of the stream.
func (jw *JSONWriter) Close() error {
	if jw.err != nil || jw.c == nil {
		return jw.err
	}
	switch jw.state {
	case inNumber:
		jw.endNumber(nil, true)
	case inString:
		jw.write(jw.masked(jw.tok, jw.ctx, jw.spans(jw.tok)))
		jw.tok, jw.ctx = jw.tok[:0], 0
	}
	jw.state = outside
	return jw.err
}

func startsToken(c byte) bool { return c == '"' || c == '-' || c >= '0' && c <= '9' }

func numberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// structural follows the containers and where a member name is due.
func (jw *JSONWriter) structural(c byte) {
	switch c {
	case '{', '[':
		jw.depth++
		if len(jw.stack) < maxTracked {
			jw.stack = append(jw.stack, frame{object: c == '{'})
		}
		jw.wantName = c == '{'
	case '}', ']':
		if jw.depth > 0 && jw.depth <= len(jw.stack) {
			jw.stack = jw.stack[:len(jw.stack)-1]
		}
		jw.depth = max(jw.depth-1, 0)
		jw.wantName = false
	case ',':
		jw.wantName = jw.depth > 0 && jw.depth <= len(jw.stack) && jw.stack[jw.depth-1].object
	case ':':
		jw.wantName = false
	}
}

// stringEnd returns the index of the quote that ends the string p[i:] is
// in, and whether p holds it.
func (jw *JSONWriter) stringEnd(p []byte, i int) (int, bool) {
	for i < len(p) {
		if jw.esc {
			jw.esc = false
			i++
			continue
		}
		q := bytes.IndexByte(p[i:], '"')
		if q < 0 {
			q = len(p) - i
		}
		if b := bytes.IndexByte(p[i:i+q], '\\'); b >= 0 {
			jw.esc = true
			i += b + 1
			continue
		}
		if i+q == len(p) {
			return len(p), false
		}
		return i + q, true
	}
	return len(p), false
}

// hold keeps part of a string that goes on past p, and cuts a long value
// string into windows.
func (jw *JSONWriter) hold(part []byte) {
	jw.tok = append(jw.tok, part...)
	if jw.isName || len(jw.tok)-jw.ctx < window || len(jw.tok) < jw.scanAt {
		return
	}
	jw.cut()
}

// cut writes a long string's held bytes up to a point no match and no
// escape crosses, keeping the rest (and context before it).
func (jw *JSONWriter) cut() {
	buf := jw.tok
	var spans []span
	keep := clearBack
	if jw.c.mayHoldBytes(buf) {
		spans, keep = jw.spans(buf), holdBack
	}
	at := jsonBoundary(buf, len(buf)-keep)
	for _, sp := range spans {
		if sp.start < at && at < sp.end {
			at = jsonBoundary(buf, sp.start)
		}
	}
	if at <= jw.ctx {
		// One match longer than a window: wait for more.
		jw.scanAt = len(buf) + window
		return
	}
	jw.write(jw.masked(buf[:at], jw.ctx, spans))
	from := jsonBoundary(buf, max(at-context, 0))
	n := copy(jw.tok, buf[from:])
	jw.tok, jw.ctx = jw.tok[:n], at-from
	jw.scanAt = len(jw.tok) + window/2
}

// jsonBoundary returns the last index at or before i (and at or after 0)
// that no JSON escape of s crosses; s starts at one.
func jsonBoundary(s []byte, i int) int {
	if i <= 0 {
		return 0
	}
	last := 0
	for k := 0; k < len(s); {
		if k >= i {
			if k == i {
				return i
			}
			return last
		}
		last = k
		if s[k] == '\\' {
			if k+1 < len(s) && s[k+1] == 'u' {
				k += 6
			} else {
				k += 2
			}
			continue
		}
		k++
	}
	return last
}

// endString writes a string's content, whose last part is rest, masked.
// hot says rest's write may hold a secret; a string begun in an earlier
// write is always searched.
func (jw *JSONWriter) endString(rest []byte, hot bool) {
	content, ctx := rest, 0
	held := len(jw.tok) > 0 || jw.ctx > 0
	if held {
		jw.tok = append(jw.tok, rest...)
		content, ctx = jw.tok, jw.ctx
	}
	out := content[ctx:]
	if hot || held {
		out = jw.masked(content, ctx, jw.spans(content))
	}
	if jw.isName {
		jw.checkName(out)
	}
	jw.write(out)
	jw.tok, jw.ctx, jw.scanAt = jw.tok[:0], 0, 0
}

// endNumber writes a number, whose last part is rest: as it is, or as the
// string Mask when it holds a secret.
func (jw *JSONWriter) endNumber(rest []byte, hot bool) {
	num := rest
	held := len(jw.tok) > 0
	if held {
		jw.tok = append(jw.tok, rest...)
		num = jw.tok
	}
	if (hot || held) && len(find(string(num), jw.c)) > 0 {
		jw.changed = true
		jw.write([]byte(`"` + Mask + `"`))
	} else {
		jw.write(num)
	}
	jw.tok = jw.tok[:0]
}

// spans are the spans of a string's raw content (JSON-escaped) that hold
// a secret: the content decoded, searched, and mapped back.
func (jw *JSONWriter) spans(content []byte) []span {
	if !jw.c.mayHoldBytes(content) {
		return nil
	}
	inner := string(content)
	v := unescape(inner, nil, jsonEsc)
	if !v.changed {
		return findAll(inner, jw.c.list)
	}
	spans := findAll(v.text, jw.c.list)
	for i, sp := range spans {
		s, e := v.origin(sp.start, sp.end)
		spans[i] = widen(inner, span{s, e})
	}
	return spans
}

// masked returns content[from:] with spans (of content) masked; a span
// that begins before from is masked from it.
func (jw *JSONWriter) masked(content []byte, from int, spans []span) []byte {
	var out []byte
	at := from
	for _, sp := range spans {
		if sp.end <= from || sp.start >= len(content) {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(content)-from)
		}
		start := max(sp.start, at)
		out = append(out, content[at:start]...)
		out = append(out, Mask...)
		at = min(sp.end, len(content))
	}
	if out == nil {
		return content[from:]
	}
	jw.changed = true
	return append(out, content[at:]...)
}

// checkName refuses a member name that, masked, reads as another of its
// object does.
func (jw *JSONWriter) checkName(name []byte) {
	if jw.dupNames || jw.depth == 0 || jw.depth > len(jw.stack) {
		return
	}
	key := name
	if bytes.IndexByte(name, '\\') >= 0 {
		v := unescape(string(name), nil, jsonEsc)
		key = []byte(v.text)
	}
	if !bytes.Contains(key, []byte(Mask)) {
		return
	}
	f := &jw.stack[jw.depth-1]
	if f.names[string(key)] {
		jw.err = &NameError{Name: string(key)}
		return
	}
	if f.names == nil {
		f.names = map[string]bool{}
	}
	f.names[string(key)] = true
}

func (jw *JSONWriter) write(b []byte) {
	if jw.err != nil || len(b) == 0 {
		return
	}
	_, jw.err = jw.w.Write(b)
}

func (jw *JSONWriter) out(p []byte) (int, error) {
	n, err := jw.w.Write(p)
	jw.err = err
	return n, err
}
