package fetch

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryableStatus: 502, 503 and 504, retried for requests that are safe to
// repeat (DefaultRetry retries 429 for every method: it was not processed).
func retryableStatus(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// Attempt is what a RetryPolicy and a Backoff see of one finished attempt.
type Attempt struct {
	// N counts the attempts of the call, 1 for the first, and every
	// request the Transport sent again on its own below the attempt loop.
	N       int
	Request *Request
	// Response is the attempt's answer (its body unread), nil when Err is
	// set.
	Response *http.Response
	Err      error
	// Sent says a connection was obtained: the upstream may have received
	// the request. A request that was never sent (DNS, dial or TLS
	// handshake failed) can be sent again whatever its method.
	Sent bool
	// Deadline is the call's, zero when it has none.
	Deadline time.Time
}

// Repeatable says the request may be sent again after the upstream may
// have received it: GET, HEAD, OPTIONS, PUT and DELETE are idempotent, and
// a request with an Idempotency-Key is deduplicated by the upstream.
func (a *Attempt) Repeatable() bool { return repeatable(a.Request.Method, a.Request.Header) }

func repeatable(method string, h http.Header) bool {
	switch method {
	case http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodHead, http.MethodOptions:
		return true
	}
	v := h["Idempotency-Key"]
	return len(v) > 0 && v[0] != ""
}

// RetryPolicy says whether the call tries again after a failed attempt.
// It is asked only while attempts and the call's deadline remain. It must
// be safe for concurrent use.
type RetryPolicy func(a *Attempt) bool

// DefaultRetry is the policy of a Client without one:
//   - a refusal (guard, allowlist, scheme), an answer a call cannot take
//     (ProtocolError), a send the Transport was stopped from making
//     (ResendError) and too many redirects are final;
//   - any other error is retried if the request is repeatable or was never
//     sent;
//   - a status in the request's success range is final;
//   - 429 is retried for every method (the upstream did not process it);
//     502, 503 and 504 for repeatable requests;
//   - a Retry-After that would outlive the call's deadline (or, without
//     one, MaxRetryAfterWithoutDeadline) ends the call now with its status.
func DefaultRetry(a *Attempt) bool {
	if err := a.Err; err != nil {
		var de *DeniedError
		var pe *ProtocolError
		if errors.As(err, &de) || errors.As(err, &pe) || isResend(err) || errors.Is(err, ErrTooManyRedirects) ||
			errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return false
		}
		// A write is repeated only if it certainly never left.
		return a.Repeatable() || !a.Sent
	}
	s := a.Response.StatusCode
	if s >= a.Request.SuccessMin && s <= a.Request.SuccessMax {
		return false
	}
	if s != http.StatusTooManyRequests && !(retryableStatus(s) && a.Repeatable()) {
		return false
	}
	if wait, ok := retryAfter(a.Response.Header.Get("Retry-After"), time.Now()); ok {
		limit := a.Deadline
		if limit.IsZero() {
			// A call without a deadline waits no longer than this for an
			// upstream that asks it to: a Retry-After of a year must not
			// hold it for a year.
			limit = time.Now().Add(MaxRetryAfterWithoutDeadline)
		}
		if time.Now().Add(wait).After(limit) {
			return false // waiting would outlive the call: fail now with the status
		}
	}
	return true
}

// Backoff says how long to wait after attempt a before the next one,
// between min and max (Config.RetryWaitMin and RetryWaitMax). It must be
// safe for concurrent use.
type Backoff func(min, max time.Duration, a *Attempt) time.Duration

// DefaultBackoff honours a Retry-After the policy accepted, else waits a
// jittered exponential time: between half of min·2ⁿ⁻¹ and all of it,
// capped at max.
func DefaultBackoff(min, max time.Duration, a *Attempt) time.Duration {
	if a.Response != nil {
		if wait, ok := retryAfter(a.Response.Header.Get("Retry-After"), time.Now()); ok {
			return wait
		}
	}
	d := min << (a.N - 1)
	if d > max || d <= 0 {
		d = max
	}
	return d/2 + rand.N(d/2+1)
}

// MaxRetryAfterWithoutDeadline is the longest Retry-After a call whose
// context has no deadline waits; a longer one fails the call at once with
// the upstream's status.
const MaxRetryAfterWithoutDeadline = time.Minute

// retryAfter parses a Retry-After value: delay seconds, or an HTTP-date in
// any of the three forms HTTP allows. ok is false for an absent, malformed
// or negative value.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		if n > int64(365*24*time.Hour/time.Second) {
			n = int64(365 * 24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	if d < 0 {
		d = 0
	}
	return d, true
}
