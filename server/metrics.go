package server

import (
	"sync"
	"sync/atomic"

	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/history"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the service's Prometheus series. Labels never hold a secret,
// a URL or an input value: only tool ids, outcomes and reasons.
type Metrics struct {
	Registry  *prometheus.Registry
	calls     *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	retries   *prometheus.CounterVec
	denials   *prometheus.CounterVec
	refreshes *prometheus.CounterVec
	inflight  prometheus.Gauge

	refusals       *prometheus.CounterVec
	policyDenials  *prometheus.CounterVec
	tenantInflight *prometheus.GaugeVec
	budgetOnce     sync.Once
	historyOnce    sync.Once
	fastOnce       sync.Once

	// The series every call touches, by tool id and by tenant: found once
	// instead of hashing and checking the label values on every call. Their
	// keys are those the vectors hold anyway (tools that were called,
	// tenants with keys), so they grow no further than the vectors.
	tools   sync.Map // tool id → *toolSeries
	tenants sync.Map // tenant → prometheus.Gauge
}

// toolSeries are a tool's series of every call.
type toolSeries struct {
	latency prometheus.Observer
	ok      prometheus.Counter
}

// tool returns the series of the tool id.
func (m *Metrics) tool(id string) *toolSeries {
	return kept(&m.tools, id, func() *toolSeries {
		return &toolSeries{latency: m.latency.WithLabelValues(id), ok: m.calls.WithLabelValues(id, "ok")}
	})
}

// tenantGauge returns the in-flight gauge of tenant.
func (m *Metrics) tenantGauge(tenant string) prometheus.Gauge {
	return kept(&m.tenants, tenant, func() prometheus.Gauge { return m.tenantInflight.WithLabelValues(tenant) })
}

// kept returns the value cache keeps for key, made by find the first time.
func kept[V any](cache *sync.Map, key string, find func() V) V {
	if v, ok := cache.Load(key); ok {
		return v.(V)
	}
	v, _ := cache.LoadOrStore(key, find())
	return v.(V)
}

// NewMetrics registers the series in a new registry, with Go and process
// collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "httptools_calls_total",
			Help: "Tool calls by tool and outcome (ok or the error code)."}, []string{"tool", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "httptools_call_duration_seconds",
			Help: "Tool call latency.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}, []string{"tool"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "httptools_retries_total",
			Help: "Upstream attempts beyond the first."}, []string{"tool"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "httptools_egress_denials_total",
			Help: "Calls refused by the SSRF guard or the egress allowlist."}, []string{"tool"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "httptools_token_refreshes_total",
			Help: "OAuth token refreshes by outcome."}, []string{"outcome"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "httptools_inflight_calls", Help: "Tool calls in flight."}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "httptools_refusals_total",
			Help: "Calls refused for load, by tenant and reason (tenant-limit: 429; memory-budget: 503)."}, []string{"tenant", "reason"}),
		policyDenials: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "httptools_policy_denials_total",
			Help: "Calls and look-ups of a tool that a policy denied to the caller (answered as for an unknown tool), by the rule that decided."}, []string{"rule"}),
		tenantInflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "httptools_tenant_inflight_calls",
			Help: "Tool calls in flight by tenant."}, []string{"tenant"}),
	}
	m.Registry.MustRegister(m.calls, m.latency, m.retries, m.denials, m.refreshes, m.inflight, m.refusals, m.policyDenials, m.tenantInflight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watchBudget adds the memory budget's gauges: its size and the bytes held.
func (m *Metrics) watchBudget(b *budget.Budget) {
	if b == nil {
		return
	}
	m.budgetOnce.Do(func() {
		m.Registry.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "httptools_inflight_bytes",
				Help: "Bytes of request bodies, upstream answers and responses held by calls in flight (drawn on the memory budget)."},
				func() float64 { return float64(b.InUse()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "httptools_memory_budget_bytes",
				Help: "The memory budget for bodies in flight (--max-inflight-bytes)."},
				func() float64 { return float64(b.Size()) }))
	})
}

// Refreshed counts a token refresh: set it as the connections.Manager's
// OnRefresh (serve does; New leaves the caller's Manager as it is).
func (m *Metrics) Refreshed(outcome string) { m.refreshes.WithLabelValues(outcome).Inc() }

// watchHistory exports the call history's written and dropped records.
func (m *Metrics) watchHistory(h *history.Recorder) {
	if h == nil {
		return
	}
	m.historyOnce.Do(func() {
		m.Registry.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "httptools_history_written_total",
				Help: "Call records the history wrote to the store."}, func() float64 { return float64(h.Written()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "httptools_history_dropped_total",
				Help: "Call records the history dropped: its queue was full (the store, or the writer's share of the machine, fell behind the calls) or the store refused them."}, func() float64 { return float64(h.Dropped()) }))
	})
}

// watchFastPath exports how many MCP requests the fast path answered (the
// rest went through the SDK): an operator, and the interop suite, can see
// which path a client's requests take.
func (m *Metrics) watchFastPath(n *atomic.Int64) {
	m.fastOnce.Do(func() {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "httptools_mcp_fast_total",
			Help: "MCP tools/call, tools/list and server/discover requests answered by the fast path rather than the MCP SDK's handler (docs/design.md)."},
			func() float64 { return float64(n.Load()) }))
	})
}
