package redact

// RedactJSON returns a JSON document with every secret redacted inside its
// strings (member names included), each string decoded first, so that a
// match never reaches across a quote or an escape and the document stays
// valid JSON. raw must be valid JSON; it is returned as is, without a copy,
// when it holds no secret.
func (s *Set) RedactJSON(raw []byte) []byte {
	ns := s.snapshot()
	if len(ns) == 0 {
		return raw
	}
	var out []byte // nil until the first change
	at := 0
	doc := string(raw)
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(raw) {
			break
		}
		inner := doc[i+1 : j]
		v := unescape(inner, nil, jsonEsc)
		text := inner
		if v.changed {
			text = v.text
		}
		if spans := find(text, ns); len(spans) > 0 {
			if out == nil {
				out = make([]byte, 0, len(raw))
			}
			out = append(out, raw[at:i+1]...)
			pos := 0
			for _, sp := range spans {
				start, end := sp.start, sp.end
				if v.changed {
					start, end = v.origin(start, end)
				}
				out = append(out, inner[pos:start]...)
				out = append(out, Mask...)
				pos = end
			}
			out = append(out, inner[pos:]...)
			at = j
		}
		i = j
	}
	if out == nil {
		return raw
	}
	return append(out, raw[at:]...)
}
