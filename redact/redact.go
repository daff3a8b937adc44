// Package redact removes secret values from text that leaves the process:
// error messages and their details, log records, tool outputs, dry runs.
//
// A secret can come back from an upstream in many spellings, so a Set finds
// it in each of them:
//
//   - as it is, and any prefix of it of at least MinPrefix bytes (an excerpt
//     cut in the middle of a token still leaks its start);
//   - escaped, in any mix: JSON (\/, \u00XX, surrogate pairs), percent
//     encoding in either case (%2f, %2F, + for a space), HTML character
//     references (&#47;, &#x2F;, &sol;, &amp;), and twice over (%252F);
//   - base64 (standard and URL alphabets, padded or not) of the secret at
//     any alignment, which covers "Bearer <secret>" and "user:<secret>"
//     encoded whole.
//
// Each match is replaced by Mask in the original text, escape sequences and
// all, so JSON stays JSON. A secret shorter than MinLength is replaced only
// where it stands alone between non-word characters: one that short cannot
// be searched for without mangling unrelated text.
package redact

import (
	"encoding/base64"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// Limits of the matching.
const (
	// MinPrefix is the shortest prefix of a secret that is redacted on its
	// own.
	MinPrefix = 8
	// MinLength is the shortest secret searched for inside words.
	MinLength = 4
)

// Set holds secret values and redacts them. The zero value is an empty set;
// a Set is safe for concurrent use.
type Set struct {
	mu      sync.RWMutex
	secrets []string
	inline  [2]string // the first secrets' storage: most calls have one
	needles *compiled // built on first use after an Add
}

type needle struct {
	text     string
	min      int  // the shortest prefix of text that counts; len(text) for whole-only
	wordOnly bool // match only between non-word characters
}

// Add registers secret values; empty ones are ignored.
func (s *Set) Add(secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range secrets {
		if v != "" && !slices.Contains(s.secrets, v) {
			if s.secrets == nil {
				s.secrets = s.inline[:0]
			}
			s.secrets = append(s.secrets, v)
			s.needles = nil
		}
	}
}

// Secrets returns the values added, as they are.
func (s *Set) Secrets() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.secrets)
}

// Empty reports whether the set holds no secret.
func (s *Set) Empty() bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.secrets) == 0
}

func (s *Set) needlesLocked() *compiled {
	if s.needles != nil || len(s.secrets) == 0 {
		return s.needles
	}
	var out []needle
	for _, sec := range s.secrets {
		if len(sec) < MinLength {
			out = append(out, needle{text: sec, min: len(sec), wordOnly: true})
			continue
		}
		out = append(out, needle{text: sec, min: min(len(sec), MinPrefix)})
		for _, core := range base64Cores(sec) {
			out = append(out, needle{text: core, min: min(len(core), MinPrefix)})
		}
	}
	// Longest first, so that a secret holding another is replaced whole.
	slices.SortStableFunc(out, func(a, b needle) int { return len(b.text) - len(a.text) })
	s.needles = compile(out)
	return s.needles
}

// snapshot returns the set's needles, nil when it holds no secret.
func (s *Set) snapshot() *compiled {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	n := s.needles
	empty := len(s.secrets) == 0
	s.mu.RUnlock()
	if n != nil || empty {
		return n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.needlesLocked()
}

// Redact returns text with every secret of the set, in every spelling the
// package lists, replaced by Mask.
//
// It is not a strings.Replacer of the spellings, which is wrong here
// (the package's tests show one missing every such text): a Replacer replaces
// whole known strings, but a secret is also found by any prefix of
// MinPrefix bytes or more (an excerpt cut inside it) and in decoded views
// of the text (mixed and double escapes) whose matches map back to spans
// of the original; those spans, merged, are what is masked.
func (s *Set) Redact(text string) string {
	ns := s.snapshot()
	if ns == nil || text == "" {
		return text
	}
	spans := find(text, ns)
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	at := 0
	for _, sp := range spans {
		b.WriteString(text[at:sp.start])
		b.WriteString(Mask)
		at = sp.end
	}
	b.WriteString(text[at:])
	return b.String()
}

// Contains reports whether text holds any secret of the set in any
// spelling.
func (s *Set) Contains(text string) bool {
	ns := s.snapshot()
	return ns != nil && len(find(text, ns)) > 0
}

type span struct{ start, end int }

// find returns the merged, sorted spans of text that hold a needle, in the
// text itself and in its decoded views, each widened to whole UTF-8
// characters. A text that mayHold clears is not decoded at all.
func find(text string, c *compiled) []span {
	if !c.mayHold(text) {
		return nil
	}
	return findAll(text, c.list)
}

// findAll is find without the scan that clears a text.
func findAll(text string, ns []needle) []span {
	var spans []span
	search(text, nil, ns, &spans)
	if strings.ContainsAny(text, `\%&+`) {
		// Each kind of escape alone (a secret may hold what looks like
		// another kind's escape), every kind at once (a mix), then each
		// of those views decoded again (twice-encoded text).
		for _, m := range []mode{jsonEsc, pctEsc, pctEsc | plusEsc, htmlEsc, allEsc, allEsc | plusEsc} {
			if !strings.ContainsAny(text, m.triggers()) {
				continue
			}
			v := unescape(text, nil, m)
			if !v.changed {
				continue
			}
			search(v.text, &v, ns, &spans)
			if strings.ContainsAny(v.text, allEsc.triggers()) {
				if v2 := unescape(v.text, &v, allEsc|m&plusEsc); v2.changed {
					search(v2.text, &v2, ns, &spans)
				}
			}
		}
	}
	if len(spans) == 0 {
		return nil
	}
	for i, sp := range spans {
		spans[i] = widen(text, sp)
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start <= last.end {
			last.end = max(last.end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// search adds the spans of view (mapped to the original text through v,
// nil when view is the text itself) where a needle, or a long enough prefix
// of one, is.
func search(view string, v *decoded, ns []needle, spans *[]span) {
	for _, n := range ns {
		head := n.text[:n.min]
		for from := 0; from <= len(view)-n.min; {
			i := strings.Index(view[from:], head)
			if i < 0 {
				break
			}
			i += from
			j := i + n.min
			for j < len(view) && j-i < len(n.text) && view[j] == n.text[j-i] {
				j++
			}
			if !n.wordOnly || (!wordByte(view, i-1) && !wordByte(view, j)) {
				if v == nil {
					*spans = append(*spans, span{i, j})
				} else {
					s, e := v.origin(i, j)
					*spans = append(*spans, span{s, e})
				}
			}
			from = j
		}
	}
}

// widen extends sp to whole UTF-8 characters of s, so that a mask never
// leaves a piece of one (a secret's prefix may end inside a character of
// the text). It looks at most three bytes either way: in text that is not
// UTF-8 there is no character to keep whole.
func widen(s string, sp span) span {
	for k := 0; k < utf8.UTFMax-1 && sp.start > 0 && sp.start < len(s) && !utf8.RuneStart(s[sp.start]); k++ {
		sp.start--
	}
	for k := 0; k < utf8.UTFMax-1 && sp.end < len(s) && !utf8.RuneStart(s[sp.end]); k++ {
		sp.end++
	}
	return sp
}

func wordByte(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// base64Cores returns, for each of the three alignments a secret can have
// inside a longer base64-encoded text and each alphabet, the run of base64
// characters that only the secret's bytes determine.
func base64Cores(sec string) []string {
	var out []string
	for a := range 3 {
		enc := base64.StdEncoding.EncodeToString(append(make([]byte, a), sec...))
		// Drop the characters the a leading bytes touch, and the last
		// group, which the bytes after the secret touch.
		// Character k holds bits [6k, 6k+6); it is the secret's alone
		// when they lie within the secret's bits [8a, 8(a+len)).
		start := (8*a + 5) / 6
		end := 8 * (a + len(sec)) / 6
		if end-start < MinPrefix {
			continue
		}
		core := enc[start:end]
		out = append(out, core)
		if url := strings.NewReplacer("+", "-", "/", "_").Replace(core); url != core {
			out = append(out, url)
		}
	}
	return out
}

// Long returns a set of the secrets that are at least MinLength long: for
// texts such as a dry run's URL, where a shorter secret, searched for even
// as a whole word, would rewrite what the request really holds. (The dry run
// shows the credential itself as its variable, by position.)
func (s *Set) Long() *Set {
	out := &Set{}
	for _, v := range s.Secrets() {
		if len(v) >= MinLength {
			out.Add(v)
		}
	}
	return out
}
