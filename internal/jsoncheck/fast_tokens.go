package jsoncheck

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// The tokens of accepts: white space, literals, numbers and strings, each
// read from its first byte to the offset past it.

// scalarEnd returns the offset past the string, literal or number at i,
// and whether it is well-formed and within its bounds.
func scalarEnd(data []byte, i int, lenient bool) (int, bool) {
	switch data[i] {
	case '"':
		return stringEnd(data, i, lenient)
	case 't', 'f', 'n':
		return literalEnd(data, i)
	}
	return numberEnd(data, i)
}

// stringEnd returns the offset past the string whose quote is at i, and
// whether it is well-formed (see skipValidString). Most strings end within
// their first sixteen bytes, without an escape: a word or two looked at.
func stringEnd(data []byte, i int, lenient bool) (int, bool) {
	if j := i + 1; j+16 <= len(data) {
		m := special(binary.LittleEndian.Uint64(data[j:]))
		if m == 0 {
			j += 8
			m = special(binary.LittleEndian.Uint64(data[j:]))
		}
		if m != 0 {
			if k := j + bits.TrailingZeros64(m)/8; data[k] == '"' {
				return k + 1, true
			}
		}
	}
	return skipValidString(data, i+1, lenient)
}

// literalEnd returns the offset past true, false or null at i.
func literalEnd(data []byte, i int) (int, bool) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if data[i] == lit[0] {
			return i + len(lit), literal(data, i, lit)
		}
	}
	return i, false
}

// numberEnd returns the offset past the number at i (see number). Most
// numbers are short integers: their digits, then no point and no exponent.
func numberEnd(data []byte, i int) (int, bool) {
	n := len(data)
	if c := data[i]; c >= '1' && c <= '9' {
		j := i + 1
		for j < n && isDigit(data[j]) {
			j++
		}
		if j-i <= MaxNumberLength && (j == n || data[j] != '.' && data[j]|0x20 != 'e') {
			return j, true
		}
	}
	return number(data, i)
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
