package jsoncheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/go-json-experiment/json/jsontext"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		kind    Kind
		pointer string
		name    string
	}{
		{doc: `{"a":1}`},
		{doc: ` [1, "x", {"b": null}, true] `},
		{doc: `"[[[[{{{{"`},
		{doc: `{"name":"Ann&amount=1","name":"Ann"}`, kind: Duplicate, name: "name"},
		{doc: `{"a":{"id":"../../admin","id":"ok"}}`, kind: Duplicate, pointer: "/a", name: "id"},
		{doc: `[0,{"x":[{"k":1,"k":2}]}]`, kind: Duplicate, pointer: "/1/x/0", name: "k"},
		{doc: `{"a":1,"\u0061":2}`, kind: Duplicate, name: "a"},
		{doc: `{"a":1} {"b":2}`, kind: Syntax},
		{doc: `{"a":1,}`, kind: Syntax},
		{doc: ``, kind: Syntax},
		{doc: `{"a":`, kind: Syntax},
		{doc: "\"\xff\"", kind: BadUTF8},
		{doc: strings.Repeat("[", 129) + strings.Repeat("]", 129), kind: TooDeep, pointer: strings.Repeat("/0", 127)},
		{doc: strings.Repeat("[", 128) + strings.Repeat("]", 128)},
		{doc: `{"n":1e999999}`, kind: BadNumber, pointer: "/n"},
		{doc: `[1,-1E-401]`, kind: BadNumber, pointer: "/1"},
		{doc: `{"n":` + strings.Repeat("9", 129) + `}`, kind: BadNumber, pointer: "/n"},
		{doc: `{"n":1e400,"m":9007199254740993,"f":-1.5e-300,"s":"1e99999999"}`},
		{doc: `{"a":{"b":` + strings.Repeat("[", 127) + strings.Repeat("]", 127) + `}}`, kind: TooDeep, pointer: "/a/b" + strings.Repeat("/0", 125)},
	} {
		err := Check([]byte(tc.doc), MaxDepth)
		if tc.kind == 0 {
			if err != nil {
				t.Errorf("Check(%.40q) = %v, want nil", tc.doc, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Check(%.40q) = %v, want a *Error", tc.doc, err)
			continue
		}
		if e.Kind != tc.kind || (tc.pointer != "" && e.Pointer != tc.pointer) || e.Name != tc.name {
			t.Errorf("Check(%.40q) = kind %d pointer %q name %q (%v), want kind %d pointer %q name %q", tc.doc, e.Kind, e.Pointer, e.Name, e, tc.kind, tc.pointer, tc.name)
		}
		if _, err := Decode(context.Background(), []byte(tc.doc), MaxDepth, Options{}); err == nil {
			t.Errorf("Decode(%.40q) accepted what Check refused", tc.doc)
		}
	}
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		`{"a":1,"b":[1,2,{"c":"d\u00e9"}],"e":null,"f":true,"g":false,"h":9007199254740993,"i":1.5e3}`,
		`[]`, `{}`, `"x"`, `12`, `[[],[{}],{"":""}]`, `{"k":{"k":{"k":[]}}}`,
	} {
		got, err := Decode(context.Background(), []byte(doc), MaxDepth, Options{})
		if err != nil {
			t.Fatalf("Decode(%s): %v", doc, err)
		}
		if want := stdDecode(t, []byte(doc)); !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%s) = %#v, want %#v", doc, got, want)
		}
	}
}

func stdDecode(t testing.TB, b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestHostileNestingIsCheap: 10 MiB of "[" is refused at the limit, with no
// more memory than a few kilobytes, and no recursion to overflow a stack.
func TestHostileNestingIsCheap(t *testing.T) {
	for _, doc := range [][]byte{
		bytes.Repeat([]byte("["), 10<<20),
		bytes.Repeat([]byte(`{"a":`), 2<<20),
		[]byte(strings.Repeat("[", 40000) + strings.Repeat("]", 40000)),
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := Check(doc, MaxDepth)
		_, derr := Decode(context.Background(), doc, MaxDepth, Options{})
		runtime.ReadMemStats(&after)
		var e *Error
		if !errors.As(err, &e) || e.Kind != TooDeep || !errors.As(derr, &e) || e.Kind != TooDeep {
			t.Fatalf("Check = %v, Decode = %v; want too deep", err, derr)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<10 {
			t.Errorf("refusing %d bytes allocated %d bytes; want under 256 KiB", len(doc), alloc)
		}
	}
}

func TestDecodeStopsWithItsContext(t *testing.T) {
	doc := []byte("[" + strings.Repeat(`1,`, 1<<20) + "1]")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Decode(ctx, doc, MaxDepth, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Decode with an ended context = %v, want context.Canceled", err)
	}
}

func TestInvalidUTF8Allowed(t *testing.T) {
	if err := CheckWith([]byte("\"caf\xe9\""), MaxDepth, Options{AllowInvalidUTF8: true}); err != nil {
		t.Fatalf("AllowInvalidUTF8: %v", err)
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,[2,[3]]]`, `{"a":1,"a":2}`, `"\u0000"`, `[`, `{"a":"\"}"}`, `1 2`, `{"\u00e9":1,"é":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Check(b, 16)
		v, derr := Decode(context.Background(), b, 16, Options{})
		if (err == nil) != (derr == nil) {
			t.Fatalf("Check = %v but Decode = %v", err, derr)
		}
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("Check accepted what encoding/json refuses: %q", b)
		}
		if want := stdDecode(t, b); !reflect.DeepEqual(v, want) {
			t.Fatalf("Decode = %#v, encoding/json = %#v", v, want)
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	doc := []byte(`{"owner":"golang","repo":"go","issue_number":1,"labels":["bug","help wanted"],"body":"a \"quoted\" text"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(doc, MaxDepth); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	doc := []byte(`{"owner":"golang","repo":"go","issue_number":1,"labels":["bug","help wanted"],"body":"a \"quoted\" text"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(context.Background(), doc, MaxDepth, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzCheckReaderAgrees: checking a value as it is read gives the verdict
// of checking it whole, in small reads too.
func FuzzCheckReaderAgrees(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,[2,[3]]]`, `{"a":1,"a":2}`, `"\u0000"`, `[`, `{"a":"\"}"}`, `1 2`, `{"\u00e9":1,"é":2}`, `1e999`, ` [] `, `[[[[[]]]]]`, ``, `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		whole := CheckWith(b, 4, Options{AllowInvalidUTF8: true})
		streamed := CheckReader(iotest.OneByteReader(bytes.NewReader(b)), 4, Options{AllowInvalidUTF8: true})
		if (whole == nil) != (streamed == nil) {
			t.Fatalf("%q: whole %v, streamed %v", b, whole, streamed)
		}
	})
}

// BenchmarkCheckAnswer checks a 1 KiB answer (an object with a list of 30
// small objects), beside encoding/json.Valid on the same bytes: the check
// does more (duplicate names, depth, number bounds) and should cost no more.
func BenchmarkCheckAnswer(b *testing.B) {
	doc := answerDoc()
	b.Run("jsoncheck", func(b *testing.B) {
		b.SetBytes(int64(doc.Len()))
		for b.Loop() {
			if err := CheckWith(doc.Bytes(), MaxDepth, Options{AllowInvalidUTF8: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsoncheck-without-fast-pass", func(b *testing.B) {
		b.SetBytes(int64(doc.Len()))
		for b.Loop() {
			if err := checkFully(doc.Bytes(), MaxDepth, Options{AllowInvalidUTF8: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(doc.Len()))
		for b.Loop() {
			if err := scan(doc.Bytes(), MaxDepth); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json-Valid", func(b *testing.B) {
		b.SetBytes(int64(doc.Len()))
		for b.Loop() {
			if !json.Valid(doc.Bytes()) {
				b.Fatal("invalid")
			}
		}
	})
}

// answerDoc is the benchmarks' 1 KiB answer: an object with a list of
// small objects, one escaped quote, integers and floats.
func answerDoc() *bytes.Buffer {
	var doc bytes.Buffer
	doc.WriteString(`{"id":9007199254740993,"title":"benchmark \"issue\"","labels":[`)
	for i := 0; doc.Len() < 1000; i++ {
		if i > 0 {
			doc.WriteByte(',')
		}
		fmt.Fprintf(&doc, `{"id":%d,"name":"label-%d","score":%d.5e-3}`, i, i, i)
	}
	doc.WriteString(`]}`)
	return &doc
}

// TestScanSkipsStrings: brackets inside strings never count toward the
// depth, however the string's quotes are escaped, in short strings (read a
// byte at a time) and long ones (searched for their quote), and a quote
// after an even run of backslashes closes its string.
func TestScanSkipsStrings(t *testing.T) {
	long := strings.Repeat("x", 40)
	for _, c := range []struct {
		doc  string
		deep bool // deeper than 2
	}{
		{`[["[[[["]]`, false},
		{`[["` + long + `[[[["]]`, false},
		{`[["` + long + `\"[[[["]]`, false},
		{`[["` + long + `\\\"[[[["]]`, false},
		{`[["` + long + `\\"]]`, false},
		{`[["` + long + `\\",[[]]]]`, true},
		{`[["\\",[[]]]]`, true},
		{`[["\"",[[]]]]`, true},
		{`[["` + long + `\\\\",[[]]]]`, true},
		{`[["` + strings.Repeat(`\\`, 30) + `",[[]]]]`, true},
		{`[["` + strings.Repeat(`\\`, 30) + `\"",[[]]]]`, true},
		{`[["` + long, false}, // unterminated: the parser's to refuse
	} {
		err := scan([]byte(c.doc), 2)
		if got := err != nil; got != c.deep {
			t.Errorf("%s: scan says too deep %v, want %v (%v)", c.doc, got, c.deep, err)
		}
		whole := CheckWith([]byte(c.doc), 2, Options{})
		streamed := CheckReader(strings.NewReader(c.doc), 2, Options{})
		if (whole == nil) != (streamed == nil) {
			t.Errorf("%s: whole %v, streamed %v", c.doc, whole, streamed)
		}
	}
}

// TestNumberBoundsAtEveryOffset: a number one character over the length
// bound, or with an exponent one over its bound, is refused wherever it
// sits (the quick look probes every 41st byte), and one at the bounds is
// not.
func TestNumberBoundsAtEveryOffset(t *testing.T) {
	for pad := 0; pad < 130; pad++ {
		for _, c := range []struct {
			num string
			bad bool
		}{
			{strings.Repeat("1", 128), false},
			{strings.Repeat("1", 129), true},
			{strings.Repeat("1", 63) + "." + strings.Repeat("1", 64), false},
			{strings.Repeat("1", 64) + "." + strings.Repeat("1", 64), true},
			{"-" + strings.Repeat("1", 42) + "." + strings.Repeat("1", 42) + "e+" + strings.Repeat("0", 40), false},
			{"-" + strings.Repeat("1", 42) + "." + strings.Repeat("1", 42) + "e+" + strings.Repeat("0", 41), true},
			// The shortest digit runs a number over the bound can have.
			{strings.Repeat("1", 62) + "." + strings.Repeat("1", 63) + "e1", false},
			{strings.Repeat("1", 63) + "." + strings.Repeat("1", 63) + "e1", true},
			{"-" + strings.Repeat("1", 62) + "." + strings.Repeat("1", 62) + "E-1", true},
			{"1e400", false}, {"1e401", true}, {"1E+0401", true}, {"2.5e-401", true}, {"2.5E-400", false},
			{"1e99", false},
		} {
			doc := strings.Repeat(" ", pad) + `{"a":[` + c.num + `]}`
			err := Check([]byte(doc), MaxDepth)
			var je *Error
			if got := errors.As(err, &je) && je.Kind == BadNumber; got != c.bad {
				t.Fatalf("pad %d, %s: refused as a bad number %v, want %v (%v)", pad, c.num, got, c.bad, err)
			}
			// At the very end of the input too.
			if err := scan([]byte(strings.Repeat(" ", pad)+c.num), MaxDepth); (err != nil) != c.bad {
				t.Fatalf("pad %d, bare %s: scan %v, want bad %v", pad, c.num, err, c.bad)
			}
		}
	}
}

// FuzzQuickLookMissesNothing: whatever the quick look clears, the exact
// scan clears too, or the parser refuses the document anyway. (The scan
// looks at text that is no JSON number, like -E700, which the quick look
// need not: an exponent's e follows a digit in every well-formed number.)
func FuzzQuickLookMissesNothing(f *testing.F) {
	for _, s := range []string{`-E700`, `[-E700]`, `{"a":1}`, `[1e401]`, `[[[[1]]]]`, `["1e401"]`, `[` + strings.Repeat("9", 130) + `]`, `{"e":"E","x":1E+999}`} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, depth uint8) {
		max := int(depth%8) + 1
		if within(b, max) {
			if err := scanExact(b, max); err != nil && jsontext.Value(b).IsValid(lenient...) {
				t.Fatalf("%q (depth %d): the quick look cleared a well-formed document the scan refuses: %v", b, max, err)
			}
		}
	})
}
