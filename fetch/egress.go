package fetch

import (
	"fmt"
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
// international name into punycode; ok is false for a name that is not in
// its one canonical form (see CanonicalHost).
func normHost(h string) (string, bool) {
	h = strings.TrimSuffix(h, ".")
	a, err := CanonicalHost(h)
	if err != nil {
		return "", false
	}
	return a, true
}

// CanonicalHost is the one form of a host name that fetch checks against
// the allowlist and dials: lower case ASCII, an international name in
// punycode. A name that only becomes that form by the mappings of IDNA's
// lookup profile — full-width letters, an ideographic or full-width full
// stop, a soft hyphen or a zero-width character, which net/http, its Host
// header and the resolver would each map differently or not at all — is
// refused: a look-alike of an allowed host is never a way to it.
func CanonicalHost(h string) (string, error) {
	ascii := true
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(h), nil
	}
	lower := strings.ToLower(h)
	mapped, err := idna.Lookup.ToASCII(lower)
	if err != nil {
		return "", fmt.Errorf("host %q is not a valid international name: %v", h, err)
	}
	plain, err := idna.Punycode.ToASCII(lower)
	if err != nil || plain != mapped {
		return "", fmt.Errorf("host %q is not in its canonical form (%s): it holds characters IDNA maps away, such as full-width letters or dots, a soft hyphen or a zero-width character", h, mapped)
	}
	return mapped, nil
}
