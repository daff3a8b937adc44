// Package redacttest holds what tests of redaction share: the spellings an
// upstream may echo a secret in, and random secrets to try them on.
package redacttest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"math/rand/v2"
	"net/url"
	"strings"
)

// minPrefix is redact.MinPrefix (not imported, so that redact's own tests
// can use this package).
const minPrefix = 8

// Encodings returns the spellings an upstream may echo a secret in, by
// name: each takes the secret and returns how it appears in text. The map
// is new on each call.
func Encodings() map[string]func(string) string { return maps.Clone(encodings) }

var encodings = map[string]func(string) string{
	"raw":           func(s string) string { return s },
	"query-escape":  url.QueryEscape,
	"path-escape":   url.PathEscape,
	"percent-lower": func(s string) string { return lowerEscapes(url.QueryEscape(s)) },
	"percent-every": func(s string) string { return pctAll(s, true) },
	"percent-twice": func(s string) string { return url.QueryEscape(url.QueryEscape(s)) },
	"json":          JSONString,
	"json-slash":    func(s string) string { return strings.ReplaceAll(JSONString(s), "/", `\/`) },
	"json-u00XX":    jsonEvery,
	"html-escape":   html.EscapeString,
	"html-decimal":  func(s string) string { return entityEvery(s, "&#%d;") },
	"html-hex":      func(s string) string { return entityEvery(s, "&#x%X;") },
	"html-named": func(s string) string {
		return strings.NewReplacer("/", "&sol;", ":", "&colon;", "=", "&equals;", "+", "&plus;").Replace(html.EscapeString(s))
	},
	"base64":          func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
	"base64-url-raw":  func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) },
	"base64-bearer":   func(s string) string { return base64.StdEncoding.EncodeToString([]byte("Bearer " + s)) },
	"base64-basic":    func(s string) string { return base64.StdEncoding.EncodeToString([]byte("api:" + s)) },
	"base64-url-auth": func(s string) string { return base64.URLEncoding.EncodeToString([]byte("Authorization: Bearer " + s)) },
	"prefix-60":       func(s string) string { return s[:max(minPrefix, len(s)*6/10)] },
	"json-of-query":   func(s string) string { return JSONString(url.QueryEscape(s)) },
	"html-of-json":    func(s string) string { return html.EscapeString(JSONString(s)) },
}

// JSONString is s as it appears inside a JSON string.
func JSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func jsonEvery(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > 0xFFFF {
			r1, r2 := surrogates(r)
			fmt.Fprintf(&b, `\u%04X\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

func surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

func entityEvery(s, format string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, format, r)
	}
	return b.String()
}

// lowerEscapes writes the hex digits of percent escapes in lower case.
func lowerEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lower(b[i+1]), lower(b[i+2])
		}
	}
	return string(b)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// pctAll percent-encodes every byte.
func pctAll(s string, _ bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~+/=:@!$&'()*,;%\"\\<> é東😀"

// RandomSecret returns a secret of 8 to 48 characters drawn from letters,
// digits, URL and JSON specials and non-ASCII.
func RandomSecret(r *rand.Rand) string {
	chars := []rune(alphabet)
	n := 8 + r.IntN(41)
	var b strings.Builder
	for range n {
		b.WriteRune(chars[r.IntN(len(chars))])
	}
	return b.String()
}
