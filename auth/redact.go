package auth

import (
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// Redacted replaces every secret value in text.
const Redacted = "[REDACTED]"

// Redactor removes resolved secret values from text. It matches each value
// as is, URL-encoded and JSON-escaped, so an upstream that echoes a token in
// any of those forms does not leak it. The zero value redacts nothing.
type Redactor struct {
	values []string
}

// Add registers a secret value. Empty values are ignored.
func (r *Redactor) Add(secret string) {
	if secret == "" {
		return
	}
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}
	if b, err := json.Marshal(secret); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	for _, f := range forms {
		if !contains(r.values, f) {
			r.values = append(r.values, f)
		}
	}
	// Longest first, so a secret that contains another is replaced whole.
	sort.SliceStable(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
}

// Empty reports whether no secret was added.
func (r *Redactor) Empty() bool { return r == nil || len(r.values) == 0 }

// Redact returns s with every registered secret replaced by [REDACTED].
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	for _, v := range r.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}

// Contains reports whether s holds any registered secret.
func (r *Redactor) Contains(s string) bool {
	if r == nil {
		return false
	}
	for _, v := range r.values {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
