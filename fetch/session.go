package fetch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/redact"
)

// Session is the scope of a client session that a library runs for one
// tool and whose requests it makes itself: an MCP client's, which sends
// an initialize, notifications and each call as requests of its own.
// Every request of the session obeys the rules of a tool call's: the SSRF
// guard on every address dialled, the allowlist on the first request and
// on every redirect hop, credentials dropped when a hop leaves the host or
// TLS, 101 and raw answers refused, a span and an audit record for each
// request. What differs is the body: the library reads it, so each answer
// is capped and drawn on the memory budget as it is read (an event stream
// is left to the library's own cap per event, since it lives as long as
// the session).
type Session struct {
	// Allowlist restricts the hosts of every request and redirect hop when
	// Restricted is set (see HostAllowed).
	Allowlist  []string
	Restricted bool
	// AuthHeaders are the headers that carry credentials, dropped on a
	// redirect to another host, as is any header holding one of Secrets.
	AuthHeaders []string
	Secrets     *redact.Set
	// MaxBody caps each answer that is not an event stream; 0 means
	// DefaultMaxBodyBytes.
	MaxBody int64
	// Tool and Tenant label the audit records.
	Tool, Tenant string
	// Logger, when set, takes the session's audit records instead of the
	// client's.
	Logger *slog.Logger
}

// SessionClient returns an *http.Client for the requests of one session,
// under the rules Session says. It has no timeout: each request's context
// carries its deadline (a call's timeoutMs).
func (c *Client) SessionClient(s Session) *http.Client {
	st := &sessionTransport{c: c, s: s}
	return &http.Client{Transport: st, CheckRedirect: st.checkRedirect}
}

type sessionTransport struct {
	c *Client
	s Session
}

// request is the Request a session's request is checked and audited as.
func (st *sessionTransport) request(method string) *Request {
	s := &st.s
	return &Request{Method: method, Allowlist: s.Allowlist, Restricted: s.Restricted, AuthHeaders: s.AuthHeaders,
		Secrets: s.Secrets, Tool: s.Tool, Tenant: s.Tenant, Logger: s.Logger}
}

func (st *sessionTransport) checkRedirect(r *http.Request, via []*http.Request) error {
	cl := &call{c: st.c, req: st.request(r.Method), host: via[0].URL.Host}
	return cl.checkRedirect(r, via)
}

func (st *sessionTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	c := st.c
	ctx := r.Context() // the caller's, before the call's own is attached
	cl := &call{c: c, req: st.request(r.Method)}
	cl.rs.init(c.cfg.MaxAttempts, repeatable(r.Method, r.Header))
	cl.rs.begin()
	u := *r.URL
	err := cl.checkHop(ctx, &u)
	cl.host, cl.hostname = u.Host, u.Hostname()
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		c.audit(ctx, cl, nil, err, start)
		return nil, err
	}
	// The request's sends are counted as a call's are (resend.go): net/http
	// sends none again past the client's attempts, and none that is not
	// repeatable once the upstream may have it.
	r2 := r.Clone(cl.attach(ctx))
	r2.URL, r2.Host = &u, ""
	if c.cfg.UserAgent != "" && len(r2.Header["User-Agent"]) == 0 {
		r2.Header["User-Agent"] = []string{c.cfg.UserAgent}
	}
	cl.next = cl.below()
	resp, err := cl.RoundTrip(r2)
	err = c.quiet(cl.resent(ctx, err))
	if cl.remote != nil {
		cl.ip = addrString(cl.remote)
	}
	if err != nil {
		c.audit(ctx, cl, nil, err, start)
		cl.end()
		return nil, err
	}
	c.audit(ctx, cl, &Response{Status: resp.StatusCode}, nil, start)
	limit := st.s.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	events := mt == "text/event-stream"
	if !events && resp.ContentLength > limit {
		resp.Body.Close()
		cl.end()
		return nil, fmt.Errorf("%w: Content-Length %d is over the %d-byte cap", ErrTooLarge, resp.ContentLength, limit)
	}
	sb := &sessionBody{ReadCloser: resp.Body, left: limit, limit: limit, ctx: r.Context(), events: events, end: cl.end, c: c}
	if c.cfg.Budget != nil {
		sb.hold = c.cfg.Budget.Hold()
	}
	resp.Body = sb
	return resp, nil
}

// sessionBody caps an answer the library reads and draws what it reads on
// the memory budget, given back when it is closed. An event stream is
// capped by event instead (the bytes from one blank line to the next),
// and what it drew is given back at each event's end.
//
// It keeps its request's context, as net/http's transportRequest does: it
// is a per-request object living exactly as long as the request, and Read,
// an io.Reader's, has no other way to bound its wait on the budget.
type sessionBody struct {
	io.ReadCloser
	left, limit int64
	hold        *budget.Hold
	ctx         context.Context // the request's: bounds the wait on hold
	events      bool
	nl          bool   // the last byte read ended a line (event streams)
	end         func() // lets go of the request's context
	c           *Client
}

func (b *sessionBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if !b.events {
			var one [1]byte
			if n, err := b.ReadCloser.Read(one[:]); n == 0 && err != nil {
				return 0, err
			}
		}
		what := "an answer"
		if b.events {
			what = "an event"
		}
		return 0, fmt.Errorf("%w: %s of more than %d bytes", ErrTooLarge, what, b.limit)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	if b.hold != nil {
		if err := b.hold.Take(b.ctx, int64(len(p))); err != nil {
			return 0, err
		}
	}
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = b.c.quiet(err) // without this side's addresses
	}
	if b.hold != nil && n < len(p) {
		b.hold.Return(int64(len(p) - n))
	}
	b.left -= int64(n)
	if b.events {
		b.eventEnds(p[:n])
	}
	return n, err
}

// eventEnds starts the cap again after the last blank line in p (an
// event's end), giving back what the events before it drew.
func (b *sessionBody) eventEnds(p []byte) {
	end := -1
	for i, c := range p {
		switch c {
		case '\n':
			if b.nl {
				end = i
			}
			b.nl = true
		case '\r':
		default:
			b.nl = false
		}
	}
	if end >= 0 {
		done := b.limit - b.left - int64(len(p)-end-1)
		b.left += done
		b.hold.Return(done)
	}
}

func (b *sessionBody) Close() error {
	b.hold.Release()
	err := b.ReadCloser.Close()
	b.end()
	return err
}
