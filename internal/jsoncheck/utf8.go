package jsoncheck

import (
	"io"
	"unicode/utf8"
)

// replacement is what an invalid UTF-8 sequence becomes: U+FFFD, as
// encoding/json and every MCP SDK write it.
var replacement = []byte("\uFFFD")

// ValidUTF8 returns doc with every invalid UTF-8 sequence replaced by U+FFFD
// (doc itself when it is valid), byte for byte as appendValid says. In a well-formed JSON document such bytes
// can only sit inside strings, so the result is well-formed too; two member
// names may then read the same, which the caller checks again.
func ValidUTF8(doc []byte) []byte {
	if utf8.Valid(doc) {
		return doc
	}
	return appendValid(make([]byte, 0, len(doc)+16), doc)
}

// appendValid appends b to dst with each byte that does not begin a valid
// UTF-8 sequence replaced by U+FFFD, one for one, as encoding/json and
// jsontext replace them (a run of three bad bytes is three U+FFFD).
func appendValid(dst, b []byte) []byte {
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] < utf8.RuneSelf {
			i++
		}
		dst = append(dst, b[:i]...)
		b = b[i:]
		if len(b) == 0 {
			break
		}
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, replacement...)
		} else {
			dst = append(dst, b[:size]...)
		}
		b = b[size:]
	}
	return dst
}

// ValidUTF8Reader reads r with every invalid UTF-8 sequence replaced by
// U+FFFD, a character split across reads kept whole.
func ValidUTF8Reader(r io.Reader) io.Reader { return &validUTF8{r: r} }

type validUTF8 struct {
	r   io.Reader
	buf [4096]byte
	in  []byte // read, not yet converted: the start of a split character
	out []byte // converted, not yet returned
	err error
}

func (v *validUTF8) Read(p []byte) (int, error) {
	for len(v.out) == 0 {
		if v.err != nil {
			return 0, v.err
		}
		n, err := v.r.Read(v.buf[:])
		v.in = append(v.in, v.buf[:n]...)
		v.err = err
		keep := 0
		if err == nil {
			keep = splitTail(v.in)
		}
		done := v.in[:len(v.in)-keep]
		if utf8.Valid(done) {
			v.out = append(v.out[:0], done...)
		} else {
			v.out = appendValid(v.out[:0], done)
		}
		v.in = append(v.in[:0], v.in[len(v.in)-keep:]...)
		if n == 0 && err == nil && keep == len(v.in) && len(v.out) == 0 {
			return 0, nil // nothing to give yet; the caller reads again
		}
	}
	n := copy(p, v.out)
	v.out = v.out[n:]
	return n, nil
}

// splitTail is how many bytes at the end of b start a character whose
// remaining bytes have not been read yet (0 to 3).
func splitTail(b []byte) int {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return 0 // ASCII: nothing pending
		}
		if c >= 0xC0 { // a leading byte: pending if its character is not whole
			if utf8.FullRune(b[len(b)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}
