package jsoncheck

// The bounds jsontext does not check: nesting depth and the length and
// exponent of numbers, cleared by a quick look or scanned exactly.

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

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
