package redact

import (
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decoded is a view of a text with its escapes decoded. It keeps only the
// escapes it decoded (segs); every other byte maps one to one, so a view
// costs what its escapes cost, not what its text does.
type decoded struct {
	text    string
	segs    []seg
	prev    *decoded // the view this one decoded; nil: the original text
	changed bool     // some escape was decoded
}

// seg is one decoded escape: bytes [at, at+n) of the view came from bytes
// [from, to) of the text it decoded.
type seg struct{ at, n, from, to int }

// src returns the range of the decoded text that byte i of the view came
// from.
func (d *decoded) src(i int) (int, int) {
	k := sort.Search(len(d.segs), func(k int) bool { return d.segs[k].at > i }) - 1
	if k < 0 {
		return i, i + 1
	}
	sg := d.segs[k]
	if i < sg.at+sg.n {
		return sg.from, sg.to
	}
	o := sg.to + i - (sg.at + sg.n)
	return o, o + 1
}

// origin returns the range of the original text that bytes [i, j) of the
// view came from.
func (d *decoded) origin(i, j int) (int, int) {
	s, _ := d.src(i)
	_, e := d.src(j - 1)
	if d.prev != nil {
		return d.prev.origin(s, e)
	}
	return s, e
}

// Escape kinds a view decodes.
type mode uint8

const (
	jsonEsc mode = 1 << iota // \/ \" \uXXXX …
	pctEsc                   // %2F %2f
	plusEsc                  // + as a space
	htmlEsc                  // &#47; &#x2F; &sol;
	allEsc  = jsonEsc | pctEsc | htmlEsc
)

// triggers are the bytes that start an escape of each kind.
func (m mode) triggers() string { return triggerSets[m&(allEsc|plusEsc)] }

// triggerSets are the triggers of every mode, made once: triggers is on
// the path of every view.
var triggerSets = func() (t [16]string) {
	for m := range mode(16) {
		if m&jsonEsc != 0 {
			t[m] += `\`
		}
		if m&pctEsc != 0 {
			t[m] += "%"
		}
		if m&plusEsc != 0 {
			t[m] += "+"
		}
		if m&htmlEsc != 0 {
			t[m] += "&"
		}
	}
	return t
}()

// unescape decodes, in one pass, the escapes of the kinds m names, in any
// mix. prev maps s to the original text; nil means s is the original. A view
// with nothing to decode costs one scan and no allocation.
func unescape(s string, prev *decoded, m mode) decoded {
	trig := m.triggers()
	first := -1
	for i := 0; i < len(s); i++ {
		k := strings.IndexAny(s[i:], trig)
		if k < 0 {
			break
		}
		i += k
		if escapeAt(s, i, m).n > 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return decoded{}
	}
	b := make([]byte, 0, len(s))
	d := decoded{prev: prev, changed: true}
	run := 0 // start of the plain run not yet copied
	for i := first; i < len(s); {
		k := strings.IndexAny(s[i:], trig)
		if k < 0 {
			break
		}
		i += k
		e := escapeAt(s, i, m)
		if e.n == 0 {
			i++
			continue
		}
		b = append(b, s[run:i]...)
		at := len(b)
		b = e.appendTo(b)
		d.segs = append(d.segs, seg{at: at, n: len(b) - at, from: i, to: i + e.n})
		i += e.n
		run = i
	}
	b = append(b, s[run:]...)
	d.text = string(b)
	return d
}

// text is what an escape is read from: a string or its bytes.
type text interface{ ~string | ~[]byte }

// escape is one escape found in a text: what it stands for, and its length.
type escape struct {
	r   rune // the character it stands for; or the byte, when one
	one bool // r is a single byte (a percent or \x escape), not a character
	n   int  // its length in the text; 0 when there is no escape
}

// appendTo appends what e stands for to b.
func (e escape) appendTo(b []byte) []byte {
	if e.one {
		return append(b, byte(e.r))
	}
	return utf8.AppendRune(b, e.r)
}

// escapeAt decodes the escape at s[i:]: what it stands for and its length
// in s (n == 0 when there is none). It allocates nothing.
func escapeAt[T text](s T, i int, m mode) escape {
	switch s[i] {
	case '+':
		if m&plusEsc != 0 {
			return escape{r: ' ', n: 1}
		}
	case '%':
		if m&pctEsc != 0 && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			return escape{r: rune(unhex(s[i+1])<<4 | unhex(s[i+2])), one: true, n: 3}
		}
	case '\\':
		if m&jsonEsc != 0 && i+1 < len(s) {
			return jsonEscapeAt(s, i)
		}
	case '&':
		if m&htmlEsc != 0 {
			return entityAt(s, i)
		}
	}
	return escape{}
}

// jsonEscapeAt decodes the backslash escape at s[i:] (JSON's, and \' and
// \xHH besides).
func jsonEscapeAt[T text](s T, i int) escape {
	switch c := s[i+1]; c {
	case '"', '\\', '/', '\'':
		return escape{r: rune(c), n: 2}
	case 'b':
		return escape{r: '\b', n: 2}
	case 'f':
		return escape{r: '\f', n: 2}
	case 'n':
		return escape{r: '\n', n: 2}
	case 'r':
		return escape{r: '\r', n: 2}
	case 't':
		return escape{r: '\t', n: 2}
	case 'u':
		r, ok := hex4(s, i+2)
		if !ok {
			return escape{}
		}
		if utf16.IsSurrogate(r) {
			if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if r2, ok := hex4(s, i+8); ok {
					if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
						return escape{r: c, n: 12}
					}
				}
			}
			return escape{}
		}
		return escape{r: r, n: 6}
	case 'x':
		if i+3 < len(s) && isHex(s[i+2]) && isHex(s[i+3]) {
			return escape{r: rune(unhex(s[i+2])<<4 | unhex(s[i+3])), one: true, n: 4}
		}
	}
	return escape{}
}

// entityAt decodes an HTML character reference: &#DDD; &#xHH; or a named
// one of the ASCII punctuation and space (HTML5 names), the ; optional for
// numeric ones.
func entityAt[T text](s T, i int) escape {
	j := i + 1
	if j < len(s) && s[j] == '#' {
		j++
		hex := j < len(s) && (s[j] == 'x' || s[j] == 'X')
		if hex {
			j++
		}
		n, digits := 0, 0
		for j < len(s) && digits < 7 && (hex && isHex(s[j]) || !hex && s[j] >= '0' && s[j] <= '9') {
			if hex {
				n = n<<4 | int(unhex(s[j]))
			} else {
				n = n*10 + int(s[j]-'0')
			}
			j++
			digits++
		}
		if digits == 0 || n > utf8.MaxRune {
			return escape{}
		}
		if j < len(s) && s[j] == ';' {
			j++
		}
		return escape{r: rune(n), n: j - i}
	}
	// A name is at most 16 letters (NonBreakingSpace) and its ;.
	end := -1
	for k := j; k < len(s) && k < j+17; k++ {
		if s[k] == ';' {
			end = k
			break
		}
	}
	if end < 0 {
		return escape{}
	}
	if r, ok := entities[string(s[j:end])]; ok {
		return escape{r: r, n: end + 1 - i}
	}
	return escape{}
}

var entities = map[string]rune{
	"amp": '&', "AMP": '&', "lt": '<', "LT": '<', "gt": '>', "GT": '>', "quot": '"', "QUOT": '"', "apos": '\'',
	"sol": '/', "bsol": '\\', "colon": ':', "equals": '=', "plus": '+', "percnt": '%', "num": '#', "excl": '!',
	"dollar": '$', "lpar": '(', "rpar": ')', "ast": '*', "midast": '*', "comma": ',', "period": '.', "semi": ';',
	"quest": '?', "commat": '@', "lsqb": '[', "lbrack": '[', "rsqb": ']', "rbrack": ']', "lowbar": '_', "UnderBar": '_',
	"grave": '`', "lcub": '{', "lbrace": '{', "rcub": '}', "rbrace": '}', "verbar": '|', "vert": '|', "VerticalLine": '|',
	"tilde": '~', "Hat": '^', "Tab": '\t', "NewLine": '\n', "nbsp": '\u00a0', "NonBreakingSpace": '\u00a0',
}

func hex4[T text](s T, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		if !isHex(s[k]) {
			return 0, false
		}
		r = r<<4 | rune(unhex(s[k]))
	}
	return r, true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
