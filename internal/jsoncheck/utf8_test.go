package jsoncheck

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// FuzzValidUTF8Reader: read in pieces of any size, the reader gives what
// ValidUTF8 gives for the whole, and that is valid UTF-8.
func FuzzValidUTF8Reader(f *testing.F) {
	for _, s := range []string{"", "plain", "caf\xc3\xa9", "\xff\xfe", "a\xe2\x82", "\xed\xa0\x80", "\xc0\xaf", "€€€", "x\xf0\x9f\x98"} {
		f.Add([]byte(s), uint8(1))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, piece uint8) {
		want := ValidUTF8(b)
		if !utf8.Valid(want) {
			t.Fatalf("ValidUTF8(%q) = %q, not valid", b, want)
		}
		var r io.Reader = bytes.NewReader(b)
		if piece%2 == 1 {
			r = iotest.OneByteReader(r)
		} else {
			r = iotest.HalfReader(r)
		}
		got, err := io.ReadAll(ValidUTF8Reader(r))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("reader gave %q, %v; want %q", got, err, want)
		}
	})
}
