package jsoncheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// fastSeeds are documents at the edges of what the fast pass decides:
// every token kind, each malformation near a word boundary, duplicates
// before and after an object turns to its map, escapes, surrogates, bad
// UTF-8, bounds.
var fastSeeds = []string{
	`{"a":1}`, ` [1, "x", {"b": null}, true, false] `, `""`, `0`, `-0.5e+7`, `[]`, `{}`, `[[],{}]`,
	`{"a":1,"a":2}`, `{"a":{"b":1},"b":2}`, `{"a":{"b":1,"b":2}}`, `{"a":1,"\u0061":2}`, `{"é":1,"é":2}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k3":3}`,
	`{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{"a":}`, `{,}`, `[01]`, `[1.]`, `[.5]`, `[1e]`, `[-]`, `[+1]`, `[1E+]`, `tru`, `nul`, `[true1]`,
	`"\u00e9\n\t\"\\\/\b\f\r"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\x"`, `"\u12"`, "\"a\x01b\"", "\"caf\xe9\"", "{\"caf\xe9\":1}", "\"\xed\xa0\x80\"",
	`"0123456789abcdef\"0123456789abcdef"`, `"0123456\\"`, `"01234567"`, `"0123456789"`, `{"n":1e400}`, `{"n":1e401}`, `{"n":1e0000000400}`,
	`[` + strings.Repeat("9", 128) + `]`, `[` + strings.Repeat("9", 129) + `]`, strings.Repeat("[", 5) + strings.Repeat("]", 5),
	`{"a":1} {"b":2}`, `{"a":1}x`, ``, ` `, `{"a":`, "[1,\n2,\r3,\t4]",
}

// FuzzAcceptsOnlyWhatCheckAccepts: the fast pass never says yes where the
// full check says no, whatever the bytes, the limit or the UTF-8 option;
// and on documents with no backslash and valid UTF-8, which it need not
// decline, it says what the full check says.
func FuzzAcceptsOnlyWhatCheckAccepts(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	for _, name := range realDocuments(f) {
		if b, err := os.ReadFile(name); err == nil && len(b) <= 64<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		exact := bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b)
		for _, max := range []int{4, MaxDepth} {
			for _, lenient := range []bool{false, true} {
				fast := accepts(b, max, lenient)
				full := checkFully(b, max, Options{AllowInvalidUTF8: lenient})
				if fast && full != nil {
					t.Fatalf("accepts(%q, %d, lenient %v) = true, but the full check says %v", b, max, lenient, full)
				}
				if exact && !fast && full == nil {
					t.Fatalf("accepts(%q, %d, lenient %v) = false for a document the full check accepts", b, max, lenient)
				}
			}
		}
	})
}

func TestFastSeeds(t *testing.T) {
	for _, s := range fastSeeds {
		for _, lenient := range []bool{false, true} {
			fast := accepts([]byte(s), MaxDepth, lenient)
			full := checkFully([]byte(s), MaxDepth, Options{AllowInvalidUTF8: lenient})
			if fast && full != nil {
				t.Errorf("accepts(%q, lenient %v) = true, full check: %v", s, lenient, full)
			}
		}
	}
}

// TestDuplicatesInLargeObjects: a name given twice is found however many
// members lie between the two, before the object's names move to a map, at
// the move and after; in nested objects the outer object's names are its
// own; and the error still names the member.
func TestDuplicatesInLargeObjects(t *testing.T) {
	for _, members := range []int{2, manyNames - 1, manyNames, manyNames + 1, manyNames + 2, 200} {
		for _, first := range []int{0, members / 2, members - 2} {
			var b strings.Builder
			b.WriteString(`{"outer":{`)
			for k := range members {
				if k > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"k%d":{"k%d":%d}`, k, k, k)
			}
			doc := b.String()
			if err := Check([]byte(doc+`},"k0":1}`), MaxDepth); err != nil {
				t.Fatalf("%d members: %v", members, err)
			}
			if !accepts([]byte(doc+`},"k0":1}`), MaxDepth, false) {
				t.Errorf("%d members: the fast pass declined a good document", members)
			}
			dup := doc + fmt.Sprintf(`,"k%d":0}}`, first)
			if accepts([]byte(dup), MaxDepth, false) {
				t.Errorf("%d members, k%d twice: the fast pass accepted it", members, first)
			}
			var e *Error
			if err := Check([]byte(dup), MaxDepth); !errors.As(err, &e) || e.Kind != Duplicate || e.Name != fmt.Sprintf("k%d", first) || e.Pointer != "/outer" {
				t.Errorf("%d members, k%d twice: Check = %v", members, first, err)
			}
		}
	}
}

// realDocuments are the JSON files the repository ships: tool manifests,
// OpenAPI documents and golden imports, case files.
func realDocuments(tb testing.TB) []string {
	var files []string
	for _, pat := range []string{"../../fixtures/*/*.json", "../../openapi/testdata/*.json", "../../openapi/testdata/golden/*/*.json", "../../httpspec/testdata/*/*.json"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

// TestFastPassTakesRealDocuments: the documents the repository ships (tool
// manifests, OpenAPI excerpts, case files) are decided by the fast pass,
// not sent to jsontext: it is the common path, not a rare one.
func TestFastPassTakesRealDocuments(t *testing.T) {
	files := realDocuments(t)
	if len(files) < 10 {
		t.Fatalf("found %d documents", len(files))
	}
	taken := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if checkFully(b, MaxDocumentDepth, Options{}) != nil {
			continue // a document made to be refused
		}
		if accepts(b, MaxDocumentDepth, false) {
			taken++
		} else if !bytes.Contains(b, []byte(`\`)) {
			t.Errorf("%s: declined, and it has no escape", f)
		}
	}
	if taken*10 < len(files)*8 {
		t.Errorf("the fast pass took %d of %d documents", taken, len(files))
	}
	t.Logf("the fast pass took %d of %d documents", taken, len(files))
}

func BenchmarkAccepts(b *testing.B) {
	doc := answerDoc()
	b.SetBytes(int64(doc.Len()))
	for b.Loop() {
		if !accepts(doc.Bytes(), MaxDepth, true) {
			b.Fatal("declined")
		}
	}
}

// TestStringsOfEveryLength: strings of 0 to 40 bytes, plain or with one
// escape, control character, multi-byte or broken UTF-8 byte at each
// place, as values and as names, at the end of a document and followed
// by more: around the fast path's one- and two-word reads (bytes 8 and
// 16), the pass agrees with the full check both ways when there is no
// escape and the UTF-8 is valid, and never accepts what it refuses.
func TestStringsOfEveryLength(t *testing.T) {
	odd := []string{`\"`, `\n`, `\u00e9`, "\x01", "é", "\xff", "€"}
	for n := range 41 {
		for at := -1; at < n; at++ {
			for _, o := range odd {
				s := strings.Repeat("a", n)
				if at >= 0 {
					s = s[:at] + o + s[at:]
				}
				for _, doc := range []string{`"` + s + `"`, `["` + s + `"]`, `{"` + s + `":1}`, `{"k":"` + s + `","x":[1,2,3]}`} {
					for _, lenient := range []bool{false, true} {
						fast := accepts([]byte(doc), MaxDepth, lenient)
						full := checkFully([]byte(doc), MaxDepth, Options{AllowInvalidUTF8: lenient})
						if fast && full != nil {
							t.Fatalf("accepts(%q, lenient %v), which the full check refuses: %v", doc, lenient, full)
						}
						if !fast && full == nil && !strings.Contains(doc, `\`) && utf8.ValidString(doc) {
							t.Fatalf("accepts(%q, lenient %v) declined what the full check takes", doc, lenient)
						}
					}
				}
				if at < 0 {
					break
				}
			}
		}
	}
}
