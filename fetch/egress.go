package fetch

import (
	"strings"

	"golang.org/x/net/idna"
)

// HostAllowed reports whether host matches one of the allowlist patterns:
// "api.x.com" matches that host exactly, "*.x.com" any subdomain of x.com
// (not x.com itself). Case and a trailing dot are ignored, and international
// names are compared in punycode, so a look-alike (Cyrillic "а" for "a")
// never matches an ASCII pattern.
func HostAllowed(patterns []string, host string) bool {
	host, ok := normHost(host)
	if !ok {
		return false
	}
	for _, p := range patterns {
		wild := strings.HasPrefix(p, "*.")
		if wild {
			p = p[2:]
		}
		p, ok := normHost(p)
		if !ok {
			continue
		}
		if wild && strings.HasSuffix(host, "."+p) || !wild && host == p {
			return true
		}
	}
	return false
}

// normHost lower-cases a host, drops a trailing dot and turns an
// international name into punycode; ok is false for a name IDNA refuses.
func normHost(h string) (string, bool) {
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			a, err := idna.Lookup.ToASCII(h)
			if err != nil {
				return "", false
			}
			return strings.ToLower(a), true
		}
	}
	return strings.ToLower(h), true
}
