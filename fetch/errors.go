package fetch

import (
	"errors"
	"net/netip"
)

// DeniedError is a call refused by the SSRF guard or the egress allowlist.
// Nothing was sent, and it is never retried.
type DeniedError struct {
	Host string     // the host asked for, when known
	IP   netip.Addr // the address refused, when the guard refused one
	Why  string
}

// Error names the host and why it was refused.
func (e *DeniedError) Error() string {
	s := "egress denied"
	if e.Host != "" {
		s += " to " + e.Host
	}
	return s + ": " + e.Why
}

// ErrTooManyRedirects is returned when a call follows more redirects than
// allowed.
var ErrTooManyRedirects = errors.New("too many redirects")

// ErrTooLarge is returned when a response body passes its cap.
var ErrTooLarge = errors.New("response body too large")
