package fetch

import (
	"fmt"
	"io"
	"net/http"
)

// MaxOwnBody caps the answers to httptools' own requests (OAuth token
// requests, OpenID Connect discovery and keys): none is near it.
const MaxOwnBody = 1 << 20

// HTTPClient returns an *http.Client for the requests httptools makes on
// its own account rather than a tool's — OAuth token and code exchanges,
// OpenID Connect discovery and keys — through the same guard as every tool
// call: the SSRF guard on every address dialled (AllowCIDRs opens ranges),
// no proxy from the environment, one form of each host, 101 and raw
// connections refused, and answers capped at MaxOwnBody. With follow
// false no redirect is followed (the 3xx is the answer): a token request
// carries the client secret and the code, and a 307 would post them again
// to wherever it points. With follow true, at most the client's
// MaxRedirects are followed, each hop dialled through the guard. Set a
// deadline on each request's context; the client has no timeout of its own.
func (c *Client) HTTPClient(follow bool) *http.Client {
	hc := &http.Client{Transport: ownTransport{c}}
	if !follow {
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	} else {
		hc.CheckRedirect = func(r *http.Request, via []*http.Request) error {
			if len(via) > c.cfg.MaxRedirects {
				return fmt.Errorf("%w: stopped after %d", ErrTooManyRedirects, c.cfg.MaxRedirects)
			}
			return nil
		}
	}
	return hc
}

// ownTransport applies the hop rules of a request without a tool (no
// allowlist) and caps what it reads.
type ownTransport struct{ c *Client }

func (t ownTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context() // the caller's, before the call's own is attached
	cl := &call{c: t.c, req: &Request{}}
	u := *r.URL
	if err := cl.checkHop(ctx, &u); err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	// Its sends are counted as a call's are (resend.go): a token request
	// is a POST, and net/http sends none again once the upstream may
	// have it.
	cl.rs.init(t.c.cfg.MaxAttempts, repeatable(r.Method, r.Header))
	cl.rs.begin()
	cl.rs.hop()
	r = r.WithContext(cl.attach(ctx))
	if u.Host != r.URL.Host {
		r.URL = &u
		r.Host = ""
	}
	resp, err := t.c.base.RoundTrip(r)
	if err != nil {
		cl.end()
		return nil, t.c.quiet(cl.resent(ctx, err))
	}
	resp.Body = &ownBody{ReadCloser: resp.Body, left: MaxOwnBody, end: cl.end, c: t.c}
	return resp, nil
}

// ownBody fails a read past its cap instead of handing over more.
type ownBody struct {
	io.ReadCloser
	left int64
	end  func() // lets go of the request's context
	c    *Client
}

func (b *ownBody) Close() error {
	err := b.ReadCloser.Close()
	b.end()
	return err
}

func (b *ownBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 && err != nil {
			return 0, err // the end (or a break) right at the cap
		}
		return 0, fmt.Errorf("%w: an answer of more than %d bytes to a request of httptools' own", ErrTooLarge, MaxOwnBody)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = b.c.quiet(err) // without this side's addresses
	}
	b.left -= int64(n)
	return n, err
}
