// Package body builds request bodies from a tool's JSON input without
// decoding it: the caller's key order and number text go out exactly as they
// came in ({"id": 9007199254740993} stays so).
package body

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// Kinds of request body.
const (
	JSONInput        = "json-input"
	InputPassthrough = "input-passthrough"
	Text             = "text"
)

// Content types the builders set.
const (
	ContentTypeJSON = "application/json"
	ContentTypeText = "text/plain"
)

// JSONWithout returns the input object minus the top-level keys in consumed,
// keeping the other members byte for byte and in order. It returns nil when
// nothing is left, so that no body (and no content type) is sent.
func JSONWithout(input []byte, consumed map[string]bool) []byte {
	if len(consumed) == 0 {
		if isEmptyObject(input) {
			return nil
		}
		return input
	}
	var b bytes.Buffer
	n := 0
	gjson.ParseBytes(input).ForEach(func(k, v gjson.Result) bool {
		if consumed[k.Str] {
			return true
		}
		if n == 0 {
			b.Grow(len(input))
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		n++
		b.WriteString(k.Raw)
		b.WriteByte(':')
		b.WriteString(v.Raw)
		return true
	})
	if n == 0 {
		return nil
	}
	b.WriteByte('}')
	return b.Bytes()
}

func isEmptyObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return false
	}
	return len(bytes.TrimSpace(b[1:len(b)-1])) == 0
}
