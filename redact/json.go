package redact

import "bytes"

// RedactOutput returns a JSON value with every secret of the set masked,
// as a caller may receive it: inside strings (member names included) each
// match is replaced by Mask, the string decoded first so that a match
// never reaches across a quote or an escape, and widened to whole
// characters; a number that holds a secret becomes the string Mask. The
// result is valid JSON, and valid UTF-8 when raw is. raw must be valid
// JSON; it is returned as it is, without a copy, when it holds no secret
// (the common case costs one scan: mayHold). The error is a *NameError
// when masking made two member names of one object read the same.
func (s *Set) RedactOutput(raw []byte) ([]byte, error) {
	return s.redactJSON(raw, false)
}

// RedactJSON is RedactOutput for a JSON text of the library's own (a dry
// run's): two member names that read the same once masked are left so.
func (s *Set) RedactJSON(raw []byte) []byte {
	out, _ := s.redactJSON(raw, true)
	return out
}

func (s *Set) redactJSON(raw []byte, dupNames bool) ([]byte, error) {
	c := s.snapshot()
	if c == nil || !c.mayHoldBytes(raw) {
		return raw, nil
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	jw := &JSONWriter{w: &b, c: c, ready: true, dupNames: dupNames}
	jw.Write(raw)
	if err := jw.Close(); err != nil {
		return nil, err
	}
	if !jw.changed {
		return raw, nil
	}
	return b.Bytes(), nil
}
