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
func (m mode) triggers() string {
	t := ""
	if m&jsonEsc != 0 {
		t += `\`
	}
	if m&pctEsc != 0 {
		t += "%"
	}
	if m&plusEsc != 0 {
		t += "+"
	}
	if m&htmlEsc != 0 {
		t += "&"
	}
	return t
}

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
		if _, n := escapeAt(s, i, m); n > 0 {
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
		out, n := escapeAt(s, i, m)
		if n == 0 {
			i++
			continue
		}
		b = append(b, s[run:i]...)
		d.segs = append(d.segs, seg{at: len(b), n: len(out), from: i, to: i + n})
		b = append(b, out...)
		i += n
		run = i
	}
	b = append(b, s[run:]...)
	d.text = string(b)
	return d
}

// escapeAt decodes the escape at s[i:], returning what it stands for and its
// length in s, or 0 when there is none.
func escapeAt(s string, i int, m mode) (string, int) {
	switch s[i] {
	case '+':
		if m&plusEsc != 0 {
			return " ", 1
		}
	case '%':
		if m&pctEsc != 0 && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			return string([]byte{unhex(s[i+1])<<4 | unhex(s[i+2])}), 3
		}
	case '\\':
		if m&jsonEsc == 0 || i+1 >= len(s) {
			return "", 0
		}
		switch c := s[i+1]; c {
		case '"', '\\', '/', '\'':
			return string(c), 2
		case 'b':
			return "\b", 2
		case 'f':
			return "\f", 2
		case 'n':
			return "\n", 2
		case 'r':
			return "\r", 2
		case 't':
			return "\t", 2
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				return "", 0
			}
			if utf16.IsSurrogate(r) {
				if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
					if r2, ok := hex4(s, i+8); ok {
						if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
							return string(c), 12
						}
					}
				}
				return "", 0
			}
			return string(r), 6
		case 'x':
			if i+3 < len(s) && isHex(s[i+2]) && isHex(s[i+3]) {
				return string([]byte{unhex(s[i+2])<<4 | unhex(s[i+3])}), 4
			}
		}
	case '&':
		if m&htmlEsc != 0 {
			return entityAt(s, i)
		}
	}
	return "", 0
}

// entityAt decodes an HTML character reference: &#DDD; &#xHH; or a named
// one of the ASCII punctuation and space (HTML5 names), the ; optional for
// numeric ones.
func entityAt(s string, i int) (string, int) {
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
			return "", 0
		}
		if j < len(s) && s[j] == ';' {
			j++
		}
		return string(rune(n)), j - i
	}
	end := strings.IndexByte(s[j:min(len(s), j+10)], ';')
	if end < 0 {
		return "", 0
	}
	if v, ok := entities[s[j:j+end]]; ok {
		return v, end + 2
	}
	return "", 0
}

var entities = map[string]string{
	"amp": "&", "AMP": "&", "lt": "<", "LT": "<", "gt": ">", "GT": ">", "quot": `"`, "QUOT": `"`, "apos": "'",
	"sol": "/", "bsol": `\`, "colon": ":", "equals": "=", "plus": "+", "percnt": "%", "num": "#", "excl": "!",
	"dollar": "$", "lpar": "(", "rpar": ")", "ast": "*", "midast": "*", "comma": ",", "period": ".", "semi": ";",
	"quest": "?", "commat": "@", "lsqb": "[", "lbrack": "[", "rsqb": "]", "rbrack": "]", "lowbar": "_", "UnderBar": "_",
	"grave": "`", "lcub": "{", "lbrace": "{", "rcub": "}", "rbrace": "}", "verbar": "|", "vert": "|", "VerticalLine": "|",
	"tilde": "~", "Hat": "^", "Tab": "\t", "NewLine": "\n", "nbsp": "\u00a0", "NonBreakingSpace": "\u00a0",
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		if !isHex(c) {
			return 0, false
		}
		r = r<<4 | rune(unhex(c))
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
