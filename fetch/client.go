package fetch

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/internal/preformat"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Version is the httptools version, sent in the default User-Agent.
const Version = "0.1.0"

// Defaults of a Config left at zero.
const (
	DefaultMaxBodyBytes   = 10 << 20
	DefaultMaxHeaderBytes = 1 << 20
	DefaultMaxAttempts    = 3
	DefaultMaxRedirects   = 10
	DefaultRetryWaitMin   = 100 * time.Millisecond
	DefaultRetryWaitMax   = 2 * time.Second
)

// Config sets up a Client. The zero value is a safe client: guard on,
// no proxy, 3 attempts, 10 redirects, 10 MiB bodies.
type Config struct {
	// AllowCIDRs opens ranges the guard refuses (127.0.0.0/8 for a local
	// upstream). Nothing else switches the guard off.
	AllowCIDRs []netip.Prefix
	// Proxy picks a proxy per request; nil means none, whatever HTTP_PROXY
	// says. With a proxy, the guard still checks every target's addresses.
	Proxy func(*http.Request) (*url.URL, error)
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// Dial connects to one checked "ip:port"; nil means a net.Dialer whose
	// Control checks the address again. Tests inject one.
	Dial DialFunc
	// TLSClientConfig is used for https; nil means Go's defaults.
	TLSClientConfig *tls.Config
	// UserAgent is sent when a request sets none.
	UserAgent string
	// MaxAttempts bounds attempts per call, first included; 0 means 3.
	MaxAttempts int
	// MaxRedirects bounds redirects per call; 0 means 10.
	MaxRedirects int
	// RetryWaitMin and RetryWaitMax bound the jittered backoff; 0 means
	// 100 ms and 2 s.
	RetryWaitMin, RetryWaitMax time.Duration
	// Retry decides whether a failed attempt is tried again; nil means
	// DefaultRetry, which never repeats a write the upstream may have
	// received. A policy of one's own is asked only while attempts and
	// the deadline remain.
	Retry RetryPolicy
	// Backoff says how long to wait before the next attempt; nil means
	// DefaultBackoff.
	Backoff Backoff
	// Logger receives one audit record per call (Request.Logger may
	// replace it for one call); nil means none: a library writes nothing
	// to a program's logs unless asked to.
	Logger *slog.Logger
	// Budget, when set, bounds the bytes of answers being read at once: a
	// call draws on its Request.Hold (the bytes are then the caller's to
	// release) or on a hold of its own given back when Do returns. A draw
	// waits within the call's deadline; one that cannot be granted fails
	// the call with a *budget.OverError.
	Budget *budget.Budget
	// MaxConnsPerHost bounds the connections to one upstream host (dialling,
	// in use and idle); calls beyond it wait for one within their deadline.
	// 0 means DefaultMaxConnsPerHost; -1 means no bound.
	MaxConnsPerHost int
	// WrapTransport, when set, wraps the transport every attempt and every
	// redirect hop of a call goes through: tracing middleware, a recorder.
	// It is called once per call, with a transport that knows the call:
	// what the wrapper sends still passes the scheme rule and the call's
	// allowlist (checked again on the request the wrapper hands down) and
	// is dialled through the SSRF guard, so no wrapper can reach an
	// address the guard refuses. It must be safe for concurrent use; the
	// RoundTripper it returns serves one call.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// TracerProvider makes a client span of every attempt and redirect hop
	// (method, host, port, status, resend count, tool; never the path, the
	// query or a header), a child of the span in the call's context; nil
	// means otel's global provider, which records nothing until a program
	// sets one.
	TracerProvider trace.TracerProvider
	// Propagator puts the attempt's trace context in its headers; nil
	// means otel's global propagator (W3C traceparent once a program sets
	// one, as serve does).
	Propagator propagation.TextMapPropagator
}

// DefaultMaxConnsPerHost is the default of Config.MaxConnsPerHost.
const DefaultMaxConnsPerHost = 256

// Client sends the requests of declarative tools. It is safe for concurrent
// use and keeps one pool of connections.
type Client struct {
	cfg       Config
	guard     *Guard
	dialer    *dialer
	transport *http.Transport
	// base is what every call's transport ends in: the pool, below the
	// refusal of answers a call cannot take.
	base   http.RoundTripper
	tracer tracer
	logger *slog.Logger

	// audits holds, per tool, method, host and decision, the logger's
	// handler with those attributes of the audit record already formatted:
	// they are the same on every call of a tool.
	audits preformat.Handlers[auditKey]
}

// NewClient builds a client from cfg.
func NewClient(cfg Config) *Client {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.MaxRedirects <= 0 {
		cfg.MaxRedirects = DefaultMaxRedirects
	}
	if cfg.RetryWaitMin <= 0 {
		cfg.RetryWaitMin = DefaultRetryWaitMin
	}
	if cfg.RetryWaitMax < cfg.RetryWaitMin {
		cfg.RetryWaitMax = max(DefaultRetryWaitMax, cfg.RetryWaitMin)
	}
	if cfg.Retry == nil {
		cfg.Retry = DefaultRetry
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	c := &Client{cfg: cfg, guard: &Guard{Allow: cfg.AllowCIDRs}, logger: cfg.Logger}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	c.dialer = newDialer(c.guard, cfg.Resolver, cfg.Dial)
	switch {
	case cfg.MaxConnsPerHost == 0:
		cfg.MaxConnsPerHost = DefaultMaxConnsPerHost
	case cfg.MaxConnsPerHost < 0:
		cfg.MaxConnsPerHost = 0 // net/http: no bound
	}
	c.transport = &http.Transport{
		// Asked for every connection the Transport acquires for a
		// request: where a try of its own is counted (resend.go).
		Proxy:             c.proxy,
		DialContext:       c.dialer.DialContext,
		TLSClientConfig:   cfg.TLSClientConfig,
		ForceAttemptHTTP2: true,
		// Idle connections as many as a host may have: calls to a slow
		// API come in waves of the same size, and a smaller idle pool
		// would close most connections after each wave and dial them
		// again for the next. IdleConnTimeout closes those not used.
		MaxIdleConns:           0,
		MaxIdleConnsPerHost:    idlePerHost(cfg.MaxConnsPerHost),
		MaxConnsPerHost:        cfg.MaxConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: DefaultMaxHeaderBytes,
	}
	c.base = answers{c.transport}
	c.tracer = newTracer(cfg.TracerProvider, cfg.Propagator)
	return c
}

// idlePerHost is the idle connections kept to one host: as many as it may
// have (maxConns 0: no bound, then 1024).
func idlePerHost(maxConns int) int {
	if maxConns <= 0 {
		return 1024
	}
	return max(64, maxConns)
}

// CloseIdleConnections closes the pool's idle connections.
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }
