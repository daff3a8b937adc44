package server

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Failed authentication is throttled per client address: each address has
// a bucket of authFailureBurst failures, refilled at authFailureRate a
// second. An address whose bucket is empty gets 429 for any key the replica
// has not verified within its cache window, without the store being asked;
// keys it has verified are never held up. An IPv6 client is its /64.
const (
	authFailureBurst = 20
	authFailureRate  = 2.0
	maxFailureAddrs  = 1 << 16
)

type failureBuckets struct {
	mu sync.Mutex
	m  map[netip.Addr]*failureBucket
}

type failureBucket struct {
	tokens float64
	at     time.Time
}

// clientOf is the client a request's failures count against (clientKey).
func clientOf(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return clientKey(ap.Addr())
}

// refilled refills a's bucket and returns it (nil: a full bucket, kept nowhere).
func (f *failureBuckets) refilled(a netip.Addr, now time.Time) *failureBucket {
	b := f.m[a]
	if b == nil {
		return nil
	}
	b.tokens = math.Min(authFailureBurst, b.tokens+now.Sub(b.at).Seconds()*authFailureRate)
	b.at = now
	if b.tokens >= authFailureBurst {
		delete(f.m, a)
		return nil
	}
	return b
}

// wait is how long a must wait for its next try; 0 when it may try now.
func (f *failureBuckets) wait(a netip.Addr) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.refilled(a, time.Now())
	if b == nil || b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / authFailureRate * float64(time.Second))
}

// fail takes one try from a's bucket.
func (f *failureBuckets) fail(a netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	b := f.refilled(a, now)
	if b == nil {
		if f.m == nil {
			f.m = map[netip.Addr]*failureBucket{}
		}
		if len(f.m) >= maxFailureAddrs {
			for k := range f.m { // make room: any one will do
				delete(f.m, k)
				break
			}
		}
		b = &failureBucket{tokens: authFailureBurst, at: now}
		f.m[a] = b
	}
	b.tokens = math.Max(0, b.tokens-1)
}

// throttled answers 429 and returns true when the request's address has
// used up its failed tries (a caller lets keys it checked lately through
// first: cachedKey).
func (s *Server) throttled(w http.ResponseWriter, r *http.Request) bool {
	d := s.failures.wait(clientOf(r))
	if d == 0 {
		return false
	}
	s.cfg.Metrics.refusals.WithLabelValues("", "auth-failures").Inc()
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusTooManyRequests, "rate-limited", "auth-failures",
		"too many failed authentications from this address: try again after Retry-After seconds")
	return true
}

// failedAuth counts a failed authentication against the request's address.
func (s *Server) failedAuth(r *http.Request) { s.failures.fail(clientOf(r)) }
