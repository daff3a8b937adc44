package jsoncheck

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"unicode/utf8"
)

// accepts reports that data certainly passes CheckWith: one well-formed
// value, unique member names, nested at most max levels, its numbers within
// their bounds and, unless lenient, its strings valid UTF-8. It decides
// most documents in one pass of its own, strings read eight bytes at a
// time. What it cannot decide cheaply it declines (false), and CheckWith
// then reads the document as it did before, with jsontext, which also words
// the error: a member name with an escape in it (jsontext compares names
// unescaped), a name that is not valid UTF-8 (jsontext compares those after
// replacing the bad bytes), an escaped surrogate, and anything it refuses.
//
// So it only ever says yes for what the full check says yes to
// (a fuzz test holds it to that); on documents without escapes and with
// valid UTF-8 it says the same as the full check, both ways.
//
// jsontext costs about 47 instructions a byte on an API answer (its
// duplicate-name check included); this costs about half of that (25 on
// the benchmarks' 1 KiB answer).
//
// Its nesting and names start in pooled buffers, not arrays of its own
// frame: a 2 KiB frame made it the deepest point of a REST invoke, and a
// goroutine on a keep-alive connection waits on a stack as big as its
// deepest point ever was.
func accepts(data []byte, max int, lenient bool) bool {
	sc := scratches.Get().(*scratch)
	ok := sc.accepts(data, max, lenient)
	clear(sc.stack[:]) // the duplicate-name maps hold the answer's names
	scratches.Put(sc)
	return ok
}

// scratch is accepts' starting room: 32 levels and 64 names.
type scratch struct {
	stack [32]frame
	names [64]span
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

func (sc *scratch) accepts(data []byte, max int, lenient bool) bool {
	var (
		stack = sc.stack[:0]
		names = sc.names[:0]
		n     = len(data)
		i     = skipSpace(data, 0)
		ok    bool
		s     span // the member name being read
	)

value:
	if i >= n {
		return false
	}
	switch c := data[i]; c {
	case '{':
		if len(stack) >= max {
			return false
		}
		stack = append(stack, frame{obj: true, first: len(names)})
		if i = skipSpace(data, i+1); i < n && data[i] == '}' {
			stack = stack[:len(stack)-1]
			i++
			goto after
		}
		goto name
	case '[':
		if len(stack) >= max {
			return false
		}
		stack = append(stack, frame{})
		if i = skipSpace(data, i+1); i < n && data[i] == ']' {
			stack = stack[:len(stack)-1]
			i++
			goto after
		}
		goto value
	case '"':
		// Most strings end within their first sixteen bytes, without an
		// escape: a word or two looked at, no call.
		if j := i + 1; j+16 <= n {
			m := special(binary.LittleEndian.Uint64(data[j:]))
			if m == 0 {
				j += 8
				m = special(binary.LittleEndian.Uint64(data[j:]))
			}
			if m != 0 {
				if k := j + bits.TrailingZeros64(m)/8; data[k] == '"' {
					i = k + 1
					goto after
				}
			}
		}
		if i, ok = skipValidString(data, i+1, lenient); !ok {
			return false
		}
	case 't':
		if !literal(data, i, "true") {
			return false
		}
		i += 4
	case 'f':
		if !literal(data, i, "false") {
			return false
		}
		i += 5
	case 'n':
		if !literal(data, i, "null") {
			return false
		}
		i += 4
	default:
		// Most numbers are short integers: their digits, then no point
		// and no exponent.
		if c >= '1' && c <= '9' {
			j := i + 1
			for j < n && isDigit(data[j]) {
				j++
			}
			if j-i <= MaxNumberLength && (j == n || data[j] != '.' && data[j]|0x20 != 'e') {
				i = j
				goto after
			}
		}
		if i, ok = number(data, i); !ok {
			return false
		}
	}

after:
	i = skipSpace(data, i)
	if len(stack) == 0 {
		return i == n
	}
	if i >= n {
		return false
	}
	switch top := &stack[len(stack)-1]; data[i] {
	case ',':
		i = skipSpace(data, i+1)
		if top.obj {
			goto name
		}
		goto value
	case '}':
		if !top.obj {
			return false
		}
		names = names[:top.first]
		stack = stack[:len(stack)-1]
		i++
		goto after
	case ']':
		if top.obj {
			return false
		}
		stack = stack[:len(stack)-1]
		i++
		goto after
	}
	return false

name:
	if i >= n || data[i] != '"' {
		return false
	}
	// Most names are short and plain: their end and their key come from
	// one word.
	if start := i + 1; start+8 <= n {
		w := binary.LittleEndian.Uint64(data[start:])
		if m := special(w); m != 0 {
			if k := bits.TrailingZeros64(m) / 8; data[start+k] == '"' {
				s = span{int32(start), int32(start + k), w&(1<<(8*k)-1) ^ uint64(k)<<56}
				goto named
			}
		}
	}
	{
		start := i + 1
		end, ok := nameEnd(data, start)
		if !ok {
			return false
		}
		s = newSpan(data, start, end)
	}
named:
	{
		top := &stack[len(stack)-1]
		if top.seen == nil && len(names)-top.first < manyNames {
			for _, p := range names[top.first:] {
				if p.key == s.key && p.same(data, s) {
					return false
				}
			}
			names = append(names, s)
		} else if names, ok = top.add(data, names, s); !ok {
			return false
		}
		i = skipSpace(data, int(s.end)+1)
	}
	if i >= n || data[i] != ':' {
		return false
	}
	i = skipSpace(data, i+1)
	goto value
}

// frame is an open array or object; an object's member names so far are
// names[first:], and once it has many, also the keys of seen.
type frame struct {
	obj   bool
	first int
	seen  map[string]struct{}
}

// span is a member name, data[start:end] between its quotes, with a key
// made of its length and first eight bytes: two names with different keys
// differ, and most names differ in their keys.
type span struct {
	start, end int32
	key        uint64
}

func newSpan(data []byte, start, end int) span {
	var prefix uint64
	if l := end - start; start+8 <= len(data) {
		prefix = binary.LittleEndian.Uint64(data[start:])
		if l < 8 {
			prefix &= 1<<(8*l) - 1
		}
	} else {
		for k := min(end, start+8) - 1; k >= start; k-- {
			prefix = prefix<<8 | uint64(data[k])
		}
	}
	return span{int32(start), int32(end), prefix ^ uint64(end-start)<<56}
}

func (p span) same(data []byte, s span) bool {
	return p.end-p.start == s.end-s.start && string(data[p.start:p.end]) == string(data[s.start:s.end])
}

// manyNames is the count of names past which an object's names are looked
// up in a map instead of compared one by one.
const manyNames = 16

// add records the name s of f in f's map, made from its names so far when
// it has none yet, or reports false if f has the name already.
func (f *frame) add(data []byte, names []span, s span) ([]span, bool) {
	if f.seen == nil {
		f.seen = make(map[string]struct{}, 2*manyNames)
		for _, p := range names[f.first:] {
			f.seen[string(data[p.start:p.end])] = struct{}{}
		}
		names = names[:f.first]
	}
	name := data[s.start:s.end]
	if _, dup := f.seen[string(name)]; dup {
		return names, false
	}
	f.seen[string(name)] = struct{}{}
	return names, true
}

// skipSpace returns the offset of the first byte at or after i that is not
// white space; compact JSON has none, and is not slowed by a call.
func skipSpace(data []byte, i int) int {
	if i < len(data) && data[i] > ' ' {
		return i
	}
	return skipSpaces(data, i)
}

func skipSpaces(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func literal(data []byte, i int, lit string) bool {
	return len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit
}

// number reads the number at i (RFC 8259's grammar) and returns the offset
// past it; false for a malformed number and for one over its bounds.
func number(data []byte, i int) (int, bool) {
	n, start := len(data), i
	if i < n && data[i] == '-' {
		i++
	}
	switch {
	case i >= n:
		return i, false
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		for i++; i < n && isDigit(data[i]); i++ {
		}
	default:
		return i, false
	}
	if i < n && data[i] == '.' {
		if i++; i >= n || !isDigit(data[i]) {
			return i, false
		}
		for i++; i < n && isDigit(data[i]); i++ {
		}
	}
	if i < n && data[i]|0x20 == 'e' {
		if i++; i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= n || !isDigit(data[i]) {
			return i, false
		}
		for v := 0; i < n && isDigit(data[i]); i++ {
			if v = v*10 + int(data[i]-'0'); v > MaxExponent {
				return i, false
			}
		}
	}
	return i, i-start <= MaxNumberLength
}

// special flags (with its high bit) each byte of w that a string's fast
// path must stop at: a quote, a backslash, a control character or a byte
// of a multi-byte character. The lowest flagged byte is always a true one.
func special(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	lt := (w - ones*0x20) &^ w & highs // bytes below 0x20
	return hasByte(w, '"') | hasByte(w, '\\') | lt | w&highs
}

// nextSpecial returns the offset of the first byte at or after i that
// special flags, reading eight bytes at a time; in the last seven bytes it
// stops at i, for a caller to look at each.
func nextSpecial(data []byte, i int) int {
	for ; i+8 <= len(data); i += 8 {
		if m := special(binary.LittleEndian.Uint64(data[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	return i
}

// skipValidString returns the offset past the closing quote of the string
// whose content starts at i, and whether it is well-formed: escapes as RFC
// 8259 has them (an escaped surrogate is declined), no control character,
// and, unless lenient, valid UTF-8.
func skipValidString(data []byte, i int, lenient bool) (int, bool) {
	n := len(data)
	for {
		if i = nextSpecial(data, i); i >= n {
			return i, false
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= n {
				return i, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(data, i+2)
				if !ok || r >= 0xD800 && r <= 0xDFFF {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		case c >= utf8.RuneSelf:
			if lenient {
				i++
				continue
			}
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		default:
			i++ // a plain byte after the word-at-a-time loop's last word
		}
	}
}

func hex4(data []byte, i int) (rune, bool) {
	if len(data)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			r = r<<4 | rune(c|0x20-'a'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// nameEnd returns the offset of the quote that closes the member name whose
// content starts at i; false for a name this pass declines: one with an
// escape, a control character or bytes that are not UTF-8.
func nameEnd(data []byte, i int) (int, bool) {
	n := len(data)
	for {
		if i = nextSpecial(data, i); i >= n {
			return i, false
		}
		switch c := data[i]; {
		case c == '"':
			return i, true
		case c == '\\' || c < 0x20:
			return i, false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		default:
			i++
		}
	}
}
