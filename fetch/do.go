package fetch

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/httptools/httptools/budget"
)

// One call: its state, the attempts through go-retryablehttp, the body read
// under its cap.

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
	if c.cfg.WrapTransport != nil {
		// A body net/http frames stops at the context's end by itself (and
		// one it would hand over raw is refused below every wrapper); one a
		// wrapper hands up may not: closing it ends any read blocked in
		// it, so nothing of the call outlives its deadline.
		defer context.AfterFunc(ctx, func() { resp.Body.Close() })()
	}
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
