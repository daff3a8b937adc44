package fetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"time"
)

// One call, read top to bottom: the first hop's rules (scheme, host form,
// allowlist, the guard behind a proxy), the attempts under the retry policy
// and one deadline, each attempt through this call's transport (its span,
// the hop rules again below a wrapper, the refusal of raw answers, the pool
// whose dialer is the guard), redirects under the hop rules, and the body
// read under its cap and the memory budget.

// call is the state of one Do. Its transport and redirect rule are methods
// of it, so nothing of the call travels in a context. It keeps no context
// either: the steps of Do take the caller's ctx as their first argument, and
// the transport's steps the request's.
type call struct {
	c        *Client
	req      *Request
	host     string   // host[:port] of the first request
	hostname string   // its name, for the audit record
	rs       resends  // the attempts, the Transport's own sends among them
	cancel   func()   // of the context of the call's requests
	gotConn  bool     // the current attempt obtained a connection
	remote   net.Addr // of the last connection
	ip       string   // remote, formatted
	deadline time.Time
	next     http.RoundTripper // below this call's span: the wrapper, or the pool
	trace    httptrace.ClientTrace
}

// Do sends req under ctx's deadline, with retries and redirects as the
// package doc says, and reads the whole body.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {
	start := time.Now()
	cl := &call{c: c, req: req}
	cl.rs.init(c.cfg.MaxAttempts, repeatable(req.Method, req.Header))
	resp, err := cl.do(ctx)
	err = c.quiet(err)
	if cl.remote != nil {
		cl.ip = addrString(cl.remote)
	}
	if resp != nil {
		resp.IP = cl.ip
	}
	c.audit(ctx, cl, resp, err, start)
	cl.end()
	// The transport may keep the request's context, and with it the call's
	// trace hooks, a while after this: let go of the request (its headers
	// hold the credential) now.
	cl.req = nil
	return resp, err
}

func (cl *call) do(ctx context.Context) (*Response, error) {
	// The request is made and the answer read in calls of their own:
	// while the upstream answers, only this frame of do's is on the stack.
	hr, err := cl.request(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := cl.attempt(ctx, hr)
	if err != nil {
		return &Response{Attempts: cl.rs.count()}, err
	}
	return cl.answer(ctx, resp)
}

// request makes the call's first request, under the first hop's rules.
//
//go:noinline
func (cl *call) request(parent context.Context) (*http.Request, error) {
	c, req := cl.c, cl.req
	ctx := cl.attach(parent)
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body) // NewRequest sets GetBody: every attempt sends it whole
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, body)
	if err != nil {
		return nil, err
	}
	err = cl.checkHop(parent, hr.URL) // rewrites the host to its one form
	cl.host, cl.hostname = hr.URL.Host, hr.URL.Hostname()
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		cl.deadline = dl
	}
	hr.Header = req.Header
	if c.cfg.UserAgent != "" && len(hr.Header["User-Agent"]) == 0 {
		// The caller's header may be shared by its calls (httpspec's
		// fixed header): a copy takes the addition.
		hr.Header = hr.Header.Clone()
		if hr.Header == nil {
			hr.Header = make(http.Header, 1)
		}
		hr.Header["User-Agent"] = []string{c.cfg.UserAgent}
	}
	cl.next = cl.below()
	return hr, nil
}

// answer reads the final answer.
//
//go:noinline
func (cl *call) answer(ctx context.Context, resp *http.Response) (*Response, error) {
	defer resp.Body.Close()
	if cl.c.cfg.WrapTransport != nil {
		// A body net/http frames stops at the context's end by itself (and
		// one it would hand over raw is refused below every wrapper); one a
		// wrapper hands up may not: closing it ends any read blocked in
		// it, so nothing of the call outlives its deadline.
		defer context.AfterFunc(ctx, func() { resp.Body.Close() })()
	}
	return cl.read(ctx, resp)
}

// attempt sends hr until an attempt is final: the policy says so, the
// attempts run out (the Transport's own sends among them, see resend.go),
// the Transport was stopped from sending again, or the context ends. The
// last answer is returned with its body unread, whatever its status.
func (cl *call) attempt(ctx context.Context, hr *http.Request) (*http.Response, error) {
	c := cl.c
	a := Attempt{Request: cl.req, Deadline: cl.deadline}
	for {
		cl.rs.begin()
		cl.gotConn = false
		resp, err := cl.follow(hr)
		err = cl.resent(ctx, err)
		if cerr := ctx.Err(); cerr != nil {
			if resp != nil {
				resp.Body.Close()
			}
			return nil, cerr
		}
		n := cl.rs.count()
		a.N, a.Response, a.Err, a.Sent = n, resp, err, cl.gotConn
		if n >= c.cfg.MaxAttempts || err != nil && isResend(err) || !c.cfg.Retry(&a) {
			return resp, err
		}
		wait := c.cfg.Backoff(c.cfg.RetryWaitMin, c.cfg.RetryWaitMax, &a)
		if resp != nil {
			// Read a little of the refused answer so that its
			// connection can serve the next attempt.
			io.CopyN(io.Discard, resp.Body, 4<<10)
			resp.Body.Close()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		// A new request for the next attempt: the transport may still
		// close the last one's body. Its body starts again from the top.
		next := *hr
		hr = &next
		if hr.GetBody != nil {
			if hr.Body, err = hr.GetBody(); err != nil {
				return nil, err
			}
		}
	}
}

// read reads the final answer's body under its cap: to Request.Stream when
// it takes a success, else whole, drawn on the memory budget.
func (cl *call) read(ctx context.Context, resp *http.Response) (*Response, error) {
	c, req := cl.c, cl.req
	limit := req.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	// The response is not kept in the call: the transport may hold the
	// request's context (and so the call's trace hooks) past the call's
	// end, and must not hold the answer with it.
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Attempts: cl.rs.count()}
	if req.Method == http.MethodHead {
		// A HEAD answer's Content-Length is the GET's: it has no body.
		resp.ContentLength = 0
	}
	if req.Stream != nil && resp.StatusCode >= req.SuccessMin && resp.StatusCode <= req.SuccessMax &&
		(req.StreamsType == nil || req.StreamsType(resp.Header.Get("Content-Type"))) {
		if resp.ContentLength > limit {
			return out, fmt.Errorf("%w: Content-Length %d is over the %d-byte cap", ErrTooLarge, resp.ContentLength, limit)
		}
		out.Streamed = true
		return out, req.Stream(resp.StatusCode, &cappedReader{r: resp.Body, left: limit, limit: limit, want: resp.ContentLength})
	}
	hold := req.Hold
	if hold == nil && c.cfg.Budget != nil {
		hold = c.cfg.Budget.Hold()
		defer hold.Release()
	}
	var err error
	out.Body, err = readCapped(ctx, resp.Body, resp.ContentLength, limit, hold)
	return out, err
}
