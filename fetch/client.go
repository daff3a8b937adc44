package fetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/internal/preformat"
	"github.com/httptools/httptools/redact"
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
	// Logger receives one audit record per call (Request.Logger may
	// replace it for one call); nil means none: a library writes nothing
	// to a program's logs unless asked to.
	Logger *slog.Logger
	// Budget, when set, bounds the bytes of answers being read at once: a
	// call draws on the hold its context carries (budget.NewContext; the
	// bytes are then the caller's to release) or on a hold of its own given
	// back when Do returns. A draw waits within the call's deadline; one
	// that cannot be granted fails the call with a *budget.OverError.
	Budget *budget.Budget
	// MaxConnsPerHost bounds the connections to one upstream host (dialling,
	// in use and idle); calls beyond it wait for one within their deadline.
	// 0 means DefaultMaxConnsPerHost; -1 means no bound.
	MaxConnsPerHost int
	// WrapTransport, when set, wraps the transport every attempt and every
	// redirect hop goes through: tracing middleware, a recorder. It sits
	// above the policy: what the wrapper sends still passes the scheme
	// rule and the tool's allowlist (checked again on the request the
	// wrapper hands down) and is dialled through the SSRF guard, so no
	// wrapper can reach an address the guard refuses.
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
	// pooled wraps transport without CloseIdleConnections, so that a failed
	// call (go-retryablehttp closes idle connections then) does not empty
	// the pool for every other call.
	pooled http.RoundTripper
	// retry is shared by every call; the hooks find the call's own state
	// (method class, deadline, allowlist, attempt count) in the request's
	// context, since go-retryablehttp's CheckRetry does not see the request.
	retry  *retryablehttp.Client
	logger *slog.Logger

	// audits holds, per tool, method, host and decision, the logger's
	// handler with those attributes of the audit record already formatted:
	// they are the same on every call of a tool.
	audits preformat.Handlers[auditKey]
}

type auditKey struct {
	tool, method, host string
	denied             bool
}

// auditHandler is the client's handler with the call's fixed attributes.
func (c *Client) auditHandler(tool, method, host string, denied bool) slog.Handler {
	k := auditKey{tool, method, host, denied}
	if h, ok := c.audits.Get(k); ok {
		return h
	}
	h := c.logger.Handler().WithAttrs([]slog.Attr{slog.String("tool", tool), slog.String("method", method), slog.String("host", host), decisionAttr(denied)})
	c.audits.Put(k, h)
	return h
}

type noCloseIdle struct{ rt http.RoundTripper }

// checked applies the hop rules to a request a WrapTransport hands down:
// the wrapper may have changed its URL.
type checked struct{ rt http.RoundTripper }

func (c checked) RoundTrip(r *http.Request) (*http.Response, error) {
	cl := callOf(r.Context())
	if cl == nil {
		return nil, &DeniedError{Host: r.URL.Hostname(), Why: "the request does not belong to a call of this client"}
	}
	if err := cl.checkHop(r.Context(), r.URL); err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	return c.rt.RoundTrip(r)
}

func (n noCloseIdle) RoundTrip(r *http.Request) (*http.Response, error) { return n.rt.RoundTrip(r) }

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
		Proxy:                  cfg.Proxy,
		DialContext:            c.dialer.DialContext,
		TLSClientConfig:        cfg.TLSClientConfig,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    64,
		MaxConnsPerHost:        cfg.MaxConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: DefaultMaxHeaderBytes,
	}
	c.pooled = noCloseIdle{answers{c.transport}}
	if cfg.WrapTransport != nil {
		c.pooled = cfg.WrapTransport(checked{c.pooled})
	}
	c.pooled = newTraced(c.pooled, cfg.TracerProvider, cfg.Propagator)
	c.retry = &retryablehttp.Client{
		HTTPClient:      &http.Client{Transport: c.pooled, CheckRedirect: checkRedirect},
		Logger:          nil, // the audit record is ours; nothing else logs
		RetryWaitMin:    cfg.RetryWaitMin,
		RetryWaitMax:    cfg.RetryWaitMax,
		RetryMax:        cfg.MaxAttempts - 1,
		RequestLogHook:  startAttempt,
		ResponseLogHook: nil, // responses are read by Do, once, under the cap
		CheckRetry:      checkRetry,
		Backoff:         backoff,
		// Give back the last response (a 503 after 3 attempts becomes an
		// upstream-status error with its body) or the last error.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
		PrepareRetry: nil, // every attempt sends the same headers (Idempotency-Key included) and body
	}
	return c
}

type callKey struct{}

// Value is the call for callKey, else the caller's context's value.
func (cl *call) Value(key any) any {
	if key == (callKey{}) {
		return cl
	}
	return cl.Context.Value(key)
}

// callOf returns the call a request belongs to.
func callOf(ctx context.Context) *call {
	cl, _ := ctx.Value(callKey{}).(*call)
	return cl
}

// startAttempt counts attempts (a go-retryablehttp RequestLogHook).
func startAttempt(_ retryablehttp.Logger, r *http.Request, _ int) {
	if cl := callOf(r.Context()); cl != nil {
		cl.attempts++
		cl.gotConn = false
	}
}

// CloseIdleConnections closes the pool's idle connections.
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// Request is one outbound call.
type Request struct {
	Method string
	URL    string
	// Header is read, never changed: calls may share one.
	Header http.Header
	Body   []byte // nil for none; sent whole on every attempt

	// Allowlist restricts the hosts of the first request and of every
	// redirect hop when Restricted is set (see HostAllowed).
	Allowlist  []string
	Restricted bool
	// AuthHeaders are the headers that carry credentials; they are dropped
	// on a redirect to another host, as is any header holding one of
	// Secrets, in any spelling. Secrets also redacts the audit record.
	AuthHeaders []string
	Secrets     *redact.Set
	// MaxBody caps the response body; 0 means DefaultMaxBodyBytes.
	MaxBody int64
	// SuccessMin and SuccessMax: a status in this range is never retried.
	SuccessMin, SuccessMax int
	// Tool and Tenant label the audit record.
	Tool, Tenant string
	// Logger, when set, takes this call's audit record instead of the
	// client's; LogAttrs are added to it.
	Logger   *slog.Logger
	LogAttrs []slog.Attr
	// Stream, when set, takes a body whose status is in the success range
	// instead of Do reading it: body is capped at MaxBody (past it a read
	// fails with ErrTooLarge) and a body that breaks off fails with a
	// *TruncatedError. What Stream returns is Do's error; the response's
	// Body is then nil and Streamed true. Other statuses are read as usual.
	Stream func(status int, body io.Reader) error
}

// Response is a fully read response.
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte
	Attempts int
	IP       string // the address of the last connection, for the audit
	Streamed bool   // the body went to Request.Stream
}

// call is the state of one Do, and the context of its requests: the
// caller's, with the call as the value of callKey (one allocation less
// than a context.WithValue per call).
type call struct {
	context.Context
	c        *Client
	req      *Request
	host     string // host[:port] of the first request
	hostname string // its name, for the audit record
	attempts int
	gotConn  bool     // the current attempt obtained a connection
	remote   net.Addr // of the last connection
	ip       string   // remote, formatted
	deadline time.Time
	hasKey   bool // the request carries an Idempotency-Key
	trace    httptrace.ClientTrace
}

// Do sends req under ctx's deadline, with retries and redirects as the
// package doc says, and reads the whole body.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {
	start := time.Now()
	cl := &call{c: c, req: req}
	resp, err := cl.do(ctx)
	if cl.remote != nil {
		cl.ip = addrString(cl.remote)
	}
	if resp != nil {
		resp.IP = cl.ip
	}
	c.audit(ctx, cl, resp, err, start)
	// The transport may keep the request's context, and with it the call,
	// a while after this: let go of the request (its headers hold the
	// credential) now.
	cl.req = nil
	return resp, err
}

func (cl *call) do(ctx context.Context) (*Response, error) {
	c, req := cl.c, cl.req
	cl.Context = ctx
	cl.trace.GotConn = cl.gotConnection
	ctx = httptrace.WithClientTrace(cl, &cl.trace)
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, nil)
	if err != nil {
		return nil, err
	}
	err = cl.checkHop(ctx, hr.URL) // rewrites the host to its one form
	cl.host, cl.hostname = hr.URL.Host, hr.URL.Hostname()
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		cl.deadline = dl
	}
	hr.Header = req.Header
	cl.hasKey = len(req.Header["Idempotency-Key"]) > 0 && req.Header["Idempotency-Key"][0] != ""
	if c.cfg.UserAgent != "" && len(hr.Header["User-Agent"]) == 0 {
		// The caller's header may be shared by its calls (httpspec's
		// fixed header): a copy takes the addition.
		hr.Header = hr.Header.Clone()
		if hr.Header == nil {
			hr.Header = make(http.Header, 1)
		}
		hr.Header["User-Agent"] = []string{c.cfg.UserAgent}
	}
	rr, err := retryablehttp.FromRequest(hr)
	if err != nil {
		return nil, err
	}
	if req.Body != nil {
		if err := rr.SetBody(req.Body); err != nil {
			return nil, err
		}
	}
	resp, err := c.retry.Do(rr)
	if err != nil {
		return &Response{Attempts: cl.attempts}, err
	}
	defer resp.Body.Close()
	// A body net/http frames stops at the context's end by itself; one a
	// wrapper hands up may not: closing it ends any read blocked in it, so
	// nothing of the call outlives its deadline.
	defer context.AfterFunc(ctx, func() { resp.Body.Close() })()
	limit := req.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	// The response is not kept in the call: the transport may hold the
	// request's context (and so the call) past the call's end, and must not
	// hold the answer with it.
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Attempts: cl.attempts}
	if req.Stream != nil && resp.StatusCode >= req.SuccessMin && resp.StatusCode <= req.SuccessMax {
		if resp.ContentLength > limit {
			return out, fmt.Errorf("%w: Content-Length %d is over the %d-byte cap", ErrTooLarge, resp.ContentLength, limit)
		}
		out.Streamed = true
		return out, req.Stream(resp.StatusCode, &cappedReader{r: resp.Body, left: limit, limit: limit, want: resp.ContentLength})
	}
	hold := budget.FromContext(ctx)
	if hold == nil && c.cfg.Budget != nil {
		hold = c.cfg.Budget.Hold()
		defer hold.Release()
	}
	var d *drawer
	if hold != nil {
		d = &drawer{ctx: ctx, hold: hold}
	}
	out.Body, err = readCapped(resp.Body, resp.ContentLength, limit, d)
	return out, err
}

func (cl *call) gotConnection(info httptrace.GotConnInfo) {
	cl.gotConn = true
	cl.remote = info.Conn.RemoteAddr()
}

// checkHop applies the scheme rule, the allowlist and, behind a proxy, the
// guard to the host of one hop, before anything is sent to it.
func (cl *call) checkHop(ctx context.Context, u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return &DeniedError{Host: u.Host, Why: fmt.Sprintf("scheme %q is not http or https", u.Scheme)}
	}
	// One form of the host decides the allowlist and is what net/http
	// dials, resolves and names in Host and SNI: the URL is rewritten to it.
	host, err := CanonicalHost(u.Hostname())
	if err != nil {
		return &DeniedError{Host: u.Hostname(), Why: err.Error()}
	}
	if host != u.Hostname() {
		if p := u.Port(); p != "" {
			u.Host = net.JoinHostPort(host, p)
		} else if strings.Contains(host, ":") {
			u.Host = "[" + host + "]"
		} else {
			u.Host = host
		}
	}
	if cl.req.Restricted && !HostAllowed(cl.req.Allowlist, host) {
		return &DeniedError{Host: host, Why: "host is not in the tool's network allowlist"}
	}
	return cl.c.checkTarget(ctx, u)
}

// checkTarget resolves a target that a proxy will connect to and refuses it
// when any of its addresses is refused: the guard must not depend on who
// dials.
func (c *Client) checkTarget(ctx context.Context, u *url.URL) error {
	if c.cfg.Proxy == nil {
		return nil // the dialer checks every address it connects to
	}
	p, err := c.cfg.Proxy(&http.Request{URL: u})
	if err != nil || p == nil {
		return err
	}
	c.dialer.proxies.Store(canonicalAddr(p), true)
	ips, err := c.dialer.resolve(ctx, u.Hostname())
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if err := c.guard.Check(ip); err != nil {
			err.(*DeniedError).Host = u.Hostname()
			return err
		}
	}
	return nil
}

// addrStrings caches the text of upstream addresses: a call on a kept-alive
// connection would otherwise format the same address (three allocations)
// for its response and its audit record. Bounded: past the bound, addresses
// are formatted each time.
var addrStrings struct {
	sync.Map // netip.AddrPort → string
	n        atomic.Int64
}

const maxAddrStrings = 4096

func addrString(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ap := ta.AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()) // 127.0.0.1, as TCPAddr.String says
	if s, ok := addrStrings.Load(ap); ok {
		return s.(string)
	}
	s := ap.String()
	if addrStrings.n.Load() < maxAddrStrings {
		if _, loaded := addrStrings.LoadOrStore(ap, s); !loaded {
			addrStrings.n.Add(1)
		}
	}
	return s
}

func canonicalAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// checkRedirect bounds the hops, applies the allowlist to each, and drops
// credentials when the hop leaves the first host or drops TLS.
func checkRedirect(r *http.Request, via []*http.Request) error {
	cl := callOf(r.Context())
	if cl == nil {
		return errors.New("fetch: request without its call")
	}
	if len(via) > cl.c.cfg.MaxRedirects { // via holds the first request and every hop so far
		return fmt.Errorf("%w: stopped after %d", ErrTooManyRedirects, cl.c.cfg.MaxRedirects)
	}
	if err := cl.checkHop(r.Context(), r.URL); err != nil {
		return err
	}
	prev := via[len(via)-1].URL
	if !strings.EqualFold(r.URL.Host, cl.host) || (prev.Scheme == "https" && r.URL.Scheme != "https") {
		r.Header.Del("Authorization")
		r.Header.Del("Cookie")
		for _, h := range cl.req.AuthHeaders {
			r.Header.Del(h)
		}
		for name, vals := range r.Header {
			for _, v := range vals {
				if cl.req.Secrets.Contains(v) {
					delete(r.Header, name)
					break
				}
			}
		}
	}
	return nil
}

// audit writes the one record of a call: no URL, no header, no body, and
// every string in it redacted with the call's secrets.
func (c *Client) audit(ctx context.Context, cl *call, resp *Response, err error, start time.Time) {
	de := deniedOf(err)
	level := slog.LevelInfo
	if de != nil {
		level = slog.LevelWarn
	}
	logger, own := c.logger, true
	if cl.req.Logger != nil {
		logger, own = cl.req.Logger, false
	}
	// The record is written even when the call's context has ended: slog
	// handlers take the context for its values, not to stop.
	if !logger.Enabled(ctx, level) {
		return
	}
	sec := cl.req.Secrets
	// A record built here and handed to the handler: Logger.LogAttrs would
	// also walk the stack for a source position nobody asked for. The attrs
	// are gathered first and added at once: the record then grows once.
	now := time.Now()
	r := slog.NewRecord(now, level, "outbound call", 0)
	var buf [12]slog.Attr
	attrs := buf[:0]
	var h slog.Handler
	if own {
		// The client's own logger: tool, method, host and the decision
		// come formatted.
		h = c.auditHandler(cl.req.Tool, cl.req.Method, cl.hostname, de != nil)
	} else {
		// A call's logger (InvokeOptions.Logger) may be new on every
		// call: nothing is kept for it.
		h = logger.Handler()
		attrs = append(attrs,
			slog.String("tool", cl.req.Tool),
			slog.String("method", cl.req.Method),
			slog.String("host", cl.hostname), // the template's literal host
			decisionAttr(de != nil),
		)
	}
	attrs = append(attrs,
		slog.String("tenant", cl.req.Tenant),
		slog.String("ip", cl.ip),
		slog.Int("attempts", cl.attempts),
		slog.Int64("duration_ms", now.Sub(start).Milliseconds()),
	)
	if de != nil {
		attrs = append(attrs, slog.String("why", sec.Redact(de.Why)))
		if de.IP.IsValid() {
			attrs = append(attrs, slog.String("denied_ip", de.IP.String()))
		}
	}
	if resp != nil && resp.Status != 0 {
		attrs = append(attrs, slog.Int("status", resp.Status))
	}
	if err != nil && de == nil {
		attrs = append(attrs, slog.String("error", Describe(err, sec)))
	}
	if len(cl.req.LogAttrs) == 0 {
		r.AddAttrs(attrs...)
	} else {
		r.AddAttrs(append(attrs, cl.req.LogAttrs...)...)
	}
	_ = h.Handle(ctx, r)
}

// decisionAttr is the audit record's word for the egress policy's decision.
func decisionAttr(denied bool) slog.Attr {
	if denied {
		return slog.String("decision", "denied")
	}
	return slog.String("decision", "allowed")
}

// deniedOf returns the refusal err holds, if any: apart, so that a call
// without an error allocates nothing to find out.
func deniedOf(err error) *DeniedError {
	if err == nil {
		return nil
	}
	var de *DeniedError
	if errors.As(err, &de) {
		return de
	}
	return nil
}

// Describe words a fetch error without the URL (which may carry query
// credentials) and with every secret of secrets (nil: none) redacted. A
// Location header that is not a URL is named, never quoted: it is the
// upstream's text and may echo anything.
func Describe(err error, secrets *redact.Set) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := err.Error()
	if strings.HasPrefix(s, "failed to parse Location header") {
		return "the redirect's Location header is not a valid URL"
	}
	return secrets.Redact(s)
}
