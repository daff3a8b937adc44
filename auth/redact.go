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
// any of those forms does not leak it. The zero value redacts nothing. A
// Redactor is used by one call at a time; it is not safe for concurrent use.
type Redactor struct {
	secrets []string
	values  []string // every form of every secret, longest first; built on first use
}

// Add registers a secret value. Empty values are ignored. Adding is cheap:
// the encoded forms are computed only when text is redacted, which on the
// success path never happens.
func (r *Redactor) Add(secret string) {
	if secret != "" {
		r.secrets = append(r.secrets, secret)
		r.values = nil
	}
}

func (r *Redactor) forms() []string {
	if r.values != nil || len(r.secrets) == 0 {
		return r.values
	}
	for _, secret := range r.secrets {
		forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}
		if b, err := json.Marshal(secret); err == nil {
			forms = append(forms, string(b[1:len(b)-1]))
		}
		for _, f := range forms {
			if !contains(r.values, f) {
				r.values = append(r.values, f)
			}
		}
	}
	// Longest first, so a secret that contains another is replaced whole.
	sort.SliceStable(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
	return r.values
}

// Secrets returns the secret values added, as they are.
func (r *Redactor) Secrets() []string { return r.secrets }

// Empty reports whether no secret was added.
func (r *Redactor) Empty() bool { return r == nil || len(r.secrets) == 0 }

// Redact returns s with every registered secret replaced by [REDACTED].
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	for _, v := range r.forms() {
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
	for _, v := range r.forms() {
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
