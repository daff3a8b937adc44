package fetch

import (
	"errors"
	"fmt"
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

// ResendError ends a call that net/http's Transport would have sent again
// on its own, below the attempt loop, when it may not: after the upstream
// refused or dropped the request before answering (an HTTP/2 stream
// refused, a GOAWAY, a connection closed under it), the call's attempts
// were spent, or the request is not repeatable and the upstream may have
// received it. Every send of the Transport's counts as an attempt. The
// call is not retried.
type ResendError struct {
	// Attempts counts the call's attempts, the Transport's sends included.
	Attempts int
	// Unrepeatable: the request is not repeatable (see
	// Attempt.Repeatable) and its headers had been written.
	Unrepeatable bool
}

// Error says why the request was not sent again.
func (e *ResendError) Error() string {
	const what = "the upstream refused or dropped the request before answering (an HTTP/2 stream refused or reset, a GOAWAY, or the connection closed under it)"
	if e.Unrepeatable {
		return what + " after it may have received it, and a request that is not repeatable (no Idempotency-Key) is not sent again"
	}
	return fmt.Sprintf("%s, and the call's %d attempts are spent", what, e.Attempts)
}
