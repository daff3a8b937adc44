package redact

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/httptools/httptools/redact/redacttest"
)

// TestEveryEncodingIsRedacted: 300 random secrets × every encoding, echoed
// inside JSON and plain text: 0 occurrences of the encoded form (or, for a
// prefix, of the prefix) after redaction, and the text around survives.
func TestEveryEncodingIsRedacted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	leaks := 0
	for range 300 {
		sec := redacttest.RandomSecret(r)
		var set Set
		set.Add(sec)
		for name, enc := range redacttest.Encodings() {
			form := enc(sec)
			for _, text := range []string{
				"before " + form + " after",
				`{"echo":"` + redacttest.JSONString(form) + `","n":1}`,
				form,
			} {
				got := set.Redact(text)
				if text[0] == '{' {
					got = string(set.RedactJSON([]byte(text)))
				}
				if strings.Contains(got, form) || strings.Contains(got, sec) {
					leaks++
					if leaks < 10 {
						t.Errorf("%s of %q: %q redacted to %q", name, sec, text, got)
					}
				}
				if strings.HasPrefix(text, "before ") && (!strings.HasPrefix(got, "before") || !strings.HasSuffix(got, "after")) {
					t.Errorf("%s: the text around was lost: %q", name, got)
				}
				if text[0] == '{' && !json.Valid([]byte(got)) {
					t.Errorf("%s: JSON %s redacted to invalid %s", name, text, got)
				}
			}
		}
	}
	if leaks > 0 {
		t.Errorf("%d leaks", leaks)
	}
}

func TestShortSecretsOnlyAlone(t *testing.T) {
	var set Set
	set.Add("x", "ab")
	for in, want := range map[string]string{
		"https://api.example.com/x": "https://api.example.com/[REDACTED]",
		"token=x&other=xylophone":   "token=[REDACTED]&other=xylophone",
		"Bearer ab":                 "Bearer [REDACTED]",
		"cabbage":                   "cabbage",
	} {
		if got := set.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNothingElseIsTouched(t *testing.T) {
	var set Set
	set.Add("tok_0123456789abcdef")
	for _, s := range []string{`{"a":"b\n\u00e9%41&amp;"}`, "plain text", "tok_ short", "%zz &bogus; \\q"} {
		if got := set.Redact(s); got != s {
			t.Errorf("Redact(%q) = %q", s, got)
		}
	}
	if got := (*Set)(nil).Redact("x"); got != "x" {
		t.Errorf("nil set changed text")
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("tok_0123456789", `{"a":"tok_0123456789"}`)
	f.Add("s3cr3t/+=", `\u0073%33&#99;r3t\/+=`)
	f.Fuzz(func(t *testing.T, sec, text string) {
		var set Set
		set.Add(sec)
		got := set.Redact(text)
		if len(sec) >= MinLength && strings.Contains(got, sec) {
			t.Fatalf("secret %q left in %q", sec, got)
		}
		if !set.Contains(text) && got != text {
			t.Fatalf("Contains false but Redact changed %q to %q", text, got)
		}
	})
}

func BenchmarkRedact(b *testing.B) {
	var set Set
	set.Add("ghp_0123456789abcdefghijABCDEFGHIJ")
	text := strings.Repeat(`{"id":1,"url":"https:\/\/api.github.com\/repos\/x\/y?page=2&per_page=10","title":"a b%20c"},`, 10)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		set.Redact(text)
	}
}

func BenchmarkRedactJSON(b *testing.B) {
	var set Set
	set.Add("ghp_0123456789abcdefghijABCDEFGHIJ")
	text := []byte("[" + strings.Repeat(`{"id":1,"url":"https:\/\/api.github.com\/repos\/x\/y?page=2&per_page=10","title":"a b%20c"},`, 10) + "{}]")
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		set.RedactJSON(text)
	}
}

func TestRedactForms(t *testing.T) {
	var r Set
	if r.Redact("abc") != "abc" || !r.Empty() {
		t.Error("the zero Set must change nothing")
	}
	r.Add("")
	r.Add("tok/+en \"q\"")
	r.Add("tok")
	for _, tc := range []struct{ in, want string }{
		{`raw tok/+en "q" end`, "raw [REDACTED] end"},
		{"query tok%2F%2Ben+%22q%22 end", "query [REDACTED] end"},
		{"path tok%2F+en%20%22q%22 end", "path [REDACTED] end"},
		{`json "tok/+en \"q\"" end`, `json "[REDACTED]" end`},
		{"short tok alone", "short [REDACTED] alone"},
		{"nothing here", "nothing here"},
	} {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
	if !r.Contains("x tok y") || r.Contains("nothing") {
		t.Error("Contains")
	}
}

// TestNotAReplacer is why Redact is not a strings.Replacer of a secret's
// spellings: each text below holds the secret in a form a Replacer of the
// raw, JSON-escaped and percent-encoded spellings leaves in place (a
// prefix cut in an excerpt, a mixed or double escape, base64), and the Set
// masks every one.
func TestNotAReplacer(t *testing.T) {
	secret := "s3cr/t+token-42"
	spellings := []string{secret, `s3cr\/t+token-42`, url.QueryEscape(secret), url.PathEscape(secret)}
	var pairs []string
	for _, sp := range spellings {
		pairs = append(pairs, sp, Mask)
	}
	replacer := strings.NewReplacer(pairs...)
	set := &Set{}
	set.Add(secret)
	missed := 0
	for _, text := range []string{
		"an excerpt cut at s3cr/t+tok",                                         // a prefix of the secret
		"double: " + url.QueryEscape(url.QueryEscape(secret)),                  // encoded twice
		`mixed: s3cr\/t%2Btoken-42`,                                            // JSON and percent at once
		"base64: " + base64.StdEncoding.EncodeToString([]byte("x"+secret+"y")), // inside base64
		"html: s3cr/t&#43;token-42",                                            // an HTML entity
	} {
		if replacer.Replace(text) == text {
			missed++
		}
		if got := set.Redact(text); strings.Contains(got, "token-42") || got == text {
			t.Errorf("Set left %q as %q", text, got)
		}
	}
	if missed != 5 {
		t.Errorf("the Replacer missed %d of 5; the test no longer shows why Redact is not one", missed)
	}
}
