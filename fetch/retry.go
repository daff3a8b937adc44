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

// retryableStatus: 502, 503 and 504, retried for methods that are safe to
// repeat (checkRetry retries 429 for every method: it was not processed).
func retryableStatus(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// repeatable reports whether the request may be sent again after the
// upstream may have received it: GET, PUT and DELETE are idempotent, and a
// request with an Idempotency-Key is deduplicated by the upstream.
func (cl *call) repeatable() bool {
	switch cl.req.Method {
	case http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodHead, http.MethodOptions:
		return true
	}
	return cl.hasKey
}

// checkRetry is the retry policy (a go-retryablehttp CheckRetry).
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	cl := callOf(ctx)
	if cl == nil {
		return false, err
	}
	if err != nil {
		var de *DeniedError
		var pe *ProtocolError
		if errors.As(err, &de) || errors.As(err, &pe) || errors.Is(err, ErrTooManyRedirects) {
			return false, err
		}
		// A write is repeated only if it certainly never left: no
		// connection was obtained (DNS, dial or TLS handshake failed).
		return cl.repeatable() || !cl.gotConn, err
	}
	s := resp.StatusCode
	if s >= cl.req.SuccessMin && s <= cl.req.SuccessMax {
		return false, nil
	}
	if s != http.StatusTooManyRequests && !(retryableStatus(s) && cl.repeatable()) {
		return false, nil
	}
	if wait, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		limit := cl.deadline
		if limit.IsZero() {
			// A call without a deadline waits no longer than this for an
			// upstream that asks it to: a Retry-After of a year must not
			// hold it for a year.
			limit = time.Now().Add(MaxRetryAfterWithoutDeadline)
		}
		if time.Now().Add(wait).After(limit) {
			return false, nil // waiting would outlive the call: fail now with the status
		}
	}
	return true, nil
}

// backoff honours a Retry-After that fits (checkRetry refused the others),
// else waits a jittered exponential time, capped.
func backoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil {
		if wait, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return wait
		}
	}
	d := min << attempt
	if d > max || d <= 0 {
		d = max
	}
	// Jittered: a random wait between half of d and d.
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
