package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/httptools/httptools/redact/redacttest"
)

// writeInPieces passes doc through a JSONWriter of set in pieces cut at
// the given offsets.
func writeInPieces(set *Set, doc []byte, cuts []int) ([]byte, error) {
	var b bytes.Buffer
	jw := set.JSONWriter(&b)
	at := 0
	for _, c := range cuts {
		if c <= at || c >= len(doc) {
			continue
		}
		if _, err := jw.Write(doc[at:c]); err != nil {
			return nil, err
		}
		at = c
	}
	if _, err := jw.Write(doc[at:]); err != nil {
		return nil, err
	}
	err := jw.Close()
	return b.Bytes(), err
}

// TestJSONWriterAgreesAtEverySplit: a document echoing a secret (raw, in
// a long string, in an escaped string, as a number, in a member name) is
// masked by the JSONWriter the same, byte for byte, whether it comes in
// one write or cut in two at any byte: 0 differences over every cut, 0
// secrets left, the output valid JSON.
func TestJSONWriterAgreesAtEverySplit(t *testing.T) {
	const sec = "tok_0123456789abcdef"
	long := strings.Repeat("x", 70<<10)
	docs := []string{
		`{"auth":"Bearer ` + sec + `","n":1}`,
		`{"echo":"` + redacttest.JSONString(`\u0074ok_0123456789abcdef`) + `"}`,
		`{"body":"` + long + sec + long + `","after":[1,2,3]}`,
		`{"` + sec + `":true,"b":"` + sec[:10] + `\u0030123"}`,
		`[12345678901234567890, "x` + sec + `y", {"k":` + "1234567890" + `}]`,
		`"` + strings.ReplaceAll(sec, "_", `\u005f`) + `"`,
	}
	var set Set
	set.Add(sec, "1234567890123")
	diffs, leaks := 0, 0
	for _, d := range docs {
		doc := []byte(d)
		whole, err := set.RedactOutput(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(whole) || bytes.Contains(whole, []byte(sec)) {
			leaks++
			t.Errorf("%.80s: masked whole to %.200s", d, whole)
		}
		step := 1
		if len(doc) > 4096 {
			step = 97 // every cut of the long document would take minutes
		}
		for c := 1; c < len(doc); c += step {
			got, err := writeInPieces(&set, doc, []int{c})
			if err != nil || !bytes.Equal(got, whole) {
				diffs++
				if diffs < 5 {
					t.Errorf("%.60s cut at %d: %v\n%.300s\nwant\n%.300s", d, c, err, got, whole)
				}
			}
		}
	}
	t.Logf("%d documents, %d differences, %d leaks", len(docs), diffs, leaks)
}

// TestRedactOutputRefusesNamesMadeEqual: two member names that read the
// same once masked are an error, not an object with a member twice.
func TestRedactOutputRefusesNamesMadeEqual(t *testing.T) {
	var set Set
	set.Add("tok_aaaaaaaaaaaa", "tok_bbbbbbbbbbbb")
	_, err := set.RedactOutput([]byte(`{"tok_aaaaaaaaaaaa":1,"tok_bbbbbbbbbbbb":2}`))
	var ne *NameError
	if !errors.As(err, &ne) {
		t.Fatalf("got %v; want a *NameError", err)
	}
}

// FuzzJSONWriter: for any JSON document and secret, the masked document
// is valid JSON holding no secret (of MinLength or more), and the writer
// fed in random pieces writes what RedactOutput does.
func FuzzJSONWriter(f *testing.F) {
	f.Add("tok_0123456789", `{"a":"tok_0123456789","b":[1,"x"]}`, uint64(1))
	f.Add("s3cr3t/+=", `["\u0073%33&#99;r3t\/+=", 5]`, uint64(2))
	f.Add("12345678", `{"n":12345678,"m":-1.5e3}`, uint64(3))
	f.Fuzz(func(t *testing.T, sec, doc string, seed uint64) {
		if !json.Valid([]byte(doc)) {
			return
		}
		var set Set
		set.Add(sec)
		whole, err := set.RedactOutput([]byte(doc))
		var ne *NameError
		if errors.As(err, &ne) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(whole) {
			t.Fatalf("%q masked to invalid JSON %q", doc, whole)
		}
		var v any
		json.Unmarshal(whole, &v)
		plain, _ := json.Marshal(v)
		if len(sec) >= MinLength && strings.TrimSpace(sec) == sec && bytes.Contains(plain, []byte(sec)) && !strings.Contains(Mask, sec) {
			t.Fatalf("secret %q left in %q (decoded %s)", sec, whole, plain)
		}
		r := rand.New(rand.NewPCG(seed, 7))
		var cuts []int
		for range r.IntN(6) {
			cuts = append(cuts, r.IntN(len(doc)+1))
		}
		slicesSort(cuts)
		got, err := writeInPieces(&set, []byte(doc), cuts)
		if err != nil || !bytes.Equal(got, whole) {
			t.Fatalf("%q in pieces at %v: %q (%v); whole: %q", doc, cuts, got, err, whole)
		}
	})
}

func slicesSort(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
