package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/httptools/httptools/budget"
	"github.com/prometheus/client_golang/prometheus"
)

// Limits that keep one process fair to its tenants (README "Limits"):
//   - a per-tenant bound on calls in flight (Config.TenantMaxInflight,
//     Config.TenantLimits): a call over it is refused at once with 429
//     rate-limited / tenant-limit and Retry-After, before any work;
//   - the process's memory budget (Config.Budget) for request bodies,
//     upstream answers and the responses built from them: a call waits for
//     its bytes within its deadline, else 503 overloaded with Retry-After;
//     one tenant's calls together hold at most Config.TenantMaxBytes of it
//     (half by default): past that they wait for the tenant's own calls;
//   - per-upstream-host connections (fetch.Config.MaxConnsPerHost).
// Refusals are counted in /metrics by tenant and reason and logged once per
// burst (per tenant and reason, at most every refusalLogEvery).

// DefaultTenantMaxInflight is the default bound on one tenant's calls in
// flight of a Server built as a library (Config.TenantMaxInflight 0);
// serve's default is CallCapacity's quarter.
const DefaultTenantMaxInflight = 256

// WaitingCallBytes is what one call in flight costs the process while its
// upstream has not answered, rounded up from what bench/slow.sh measures
// (about 100 KiB with HTTP/1.1 on both sides: the goroutines and their
// stacks, the two connections' buffers, the call's state, the heap the
// collector lets grow past it).
const WaitingCallBytes = 128 << 10

// CallCapacity is how many calls the process can hold in flight: each
// holds a client connection (the descriptor limit's half is theirs, as
// --max-conns has it) and, over HTTP/1.1, an upstream one (the other
// half), and WaitingCallBytes of memory out of memory (the budget: a
// quarter of the machine's or container's by default). serve's limits
// are shares of it (README "Limits"): a tenant a quarter, an upstream
// host half.
func CallCapacity(memory int64) int {
	c := defaultMaxConns()
	if memory > 0 {
		c = min(c, max(64, int(memory/WaitingCallBytes)))
	}
	return c
}

// Refusal reasons, as in /metrics and error bodies.
const (
	ReasonTenantLimit  = "tenant-limit"
	ReasonMemoryBudget = "memory-budget"
)

// refusal is a call the service would not start: a 429 or 503 with
// Retry-After, or a tool error the model can read over MCP.
type refusal struct {
	status     int
	code       string
	reason     string
	retryAfter string
	msg        string
	details    map[string]any
}

func (r *refusal) Error() string { return r.code + ": " + r.msg }

func (r *refusal) write(w http.ResponseWriter) {
	w.Header().Set("Retry-After", r.retryAfter)
	writeError(w, r.status, r.code, r.reason, r.msg)
}

// tenantLimits counts each tenant's calls in flight.
type tenantLimits struct {
	def      int
	per      map[string]int
	mu       sync.Mutex
	inflight map[string]int
}

func (l *tenantLimits) limit(tenant string) int {
	if n, ok := l.per[tenant]; ok {
		return n
	}
	return l.def
}

// acquire counts a call of tenant in, or reports false when the tenant is at
// its limit (a limit ≤ 0 is no bound).
func (l *tenantLimits) acquire(tenant string) (int, bool) {
	max := l.limit(tenant)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.inflight[tenant]
	if max > 0 && n >= max {
		return max, false
	}
	l.inflight[tenant] = n + 1
	return max, true
}

func (l *tenantLimits) release(tenant string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.inflight[tenant]; n <= 1 {
		delete(l.inflight, tenant)
	} else {
		l.inflight[tenant] = n - 1
	}
}

// refusalLogEvery is how often a burst of refusals of one tenant and reason
// is logged: the first refusal at once, then one line with the count.
const refusalLogEvery = 10 * time.Second

type burstLog struct {
	mu   sync.Mutex
	seen map[string]*burst
}

type burst struct {
	last       time.Time
	suppressed int
}

// refused counts a refusal and logs it when its burst is new or its last
// line is older than refusalLogEvery.
func (s *Server) refused(tenant, reason, msg string) {
	s.cfg.Metrics.refusals.WithLabelValues(tenant, reason).Inc()
	key := tenant + "\x00" + reason
	now := time.Now()
	s.bursts.mu.Lock()
	if s.bursts.seen == nil {
		s.bursts.seen = map[string]*burst{}
	}
	b := s.bursts.seen[key]
	if b != nil && now.Sub(b.last) < refusalLogEvery {
		b.suppressed++
		s.bursts.mu.Unlock()
		return
	}
	more := 0
	if b != nil {
		more = b.suppressed
	}
	s.bursts.seen[key] = &burst{last: now}
	s.bursts.mu.Unlock()
	s.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn, "refusing calls", slog.String("tenant", tenant), slog.String("reason", reason),
		slog.String("detail", msg), slog.Int("refusedSinceLastLine", more), slog.String("every", refusalLogEvery.String()))
}

// admission is a call counted in by admit.
type admission struct {
	s      *Server
	tenant string
	g      prometheus.Gauge
}

// release counts the call out.
func (a admission) release() { a.g.Dec(); a.s.limits.release(a.tenant) }

// admit counts a call of tenant in; release it when the call is done.
func (s *Server) admit(tenant string) (admission, error) {
	max, ok := s.limits.acquire(tenant)
	if !ok {
		msg := fmt.Sprintf("tenant %q has %d calls in flight, its limit: try again in a second", tenant, max)
		s.refused(tenant, ReasonTenantLimit, msg)
		return admission{}, &refusal{status: http.StatusTooManyRequests, code: "rate-limited", reason: ReasonTenantLimit, retryAfter: "1", msg: msg}
	}
	g := s.cfg.Metrics.tenantGauge(tenant)
	g.Inc()
	return admission{s, tenant, g}, nil
}

// draw takes n bytes of the memory budget for a call's hold, waiting at
// most wait; the refusal is a 503.
func (s *Server) draw(r *http.Request, hold *budget.Hold, n int64, wait time.Duration) error {
	if hold == nil || n <= 0 {
		return nil
	}
	if err := hold.TakeWithin(r.Context(), n, wait); err != nil {
		tenant := tenantOf(r.Context())
		msg := "the service is at its memory budget: try again shortly (" + err.Error() + ")"
		s.refused(tenant, ReasonMemoryBudget, msg)
		return &refusal{status: http.StatusServiceUnavailable, code: "overloaded", reason: ReasonMemoryBudget, retryAfter: retryAfter, msg: msg}
	}
	return nil
}

// bodyDraw is what a request body will take: its announced length, or the
// cap when it announces none.
func (s *Server) bodyDraw(r *http.Request) int64 {
	if r.ContentLength >= 0 && r.ContentLength <= s.cfg.MaxInputBytes {
		return r.ContentLength
	}
	return s.cfg.MaxInputBytes
}

// shareOf is tenant's share of the memory budget (nil without a bound).
func (s *Server) shareOf(tenant string) *budget.Budget {
	if s.cfg.Budget == nil || s.cfg.TenantMaxBytes <= 0 {
		return nil
	}
	if sh, ok := s.shares.Load(tenant); ok {
		return sh.(*budget.Budget)
	}
	sh, _ := s.shares.LoadOrStore(tenant, budget.New(s.cfg.TenantMaxBytes))
	return sh.(*budget.Budget)
}
