package fetch

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The rules every hop obeys before anything is sent: scheme, host form,
// allowlist, the guard behind a proxy, credentials dropped across hosts.

// belowWrapper is the call's transport under a WrapTransport: it applies
// the hop rules again to the request the wrapper hands down (the wrapper
// may have changed its URL) before the pool sends it.
type belowWrapper call

func (b *belowWrapper) RoundTrip(r *http.Request) (*http.Response, error) {
	cl := (*call)(b)
	if err := cl.checkHop(r.Context(), r.URL); err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	return cl.c.base.RoundTrip(cl.rejoin(r))
}

// below is what the call's span hands each request to: the wrapper of
// Config.WrapTransport over the hop rules and the pool, or the pool.
func (cl *call) below() http.RoundTripper {
	if w := cl.c.cfg.WrapTransport; w != nil {
		return w((*belowWrapper)(cl))
	}
	return cl.c.base
}

// checkHop applies the scheme rule, the allowlist and, behind a proxy, the
// guard to the host of one hop, before anything is sent to it. Behind a
// proxy it resolves the host within ctx.
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
func (cl *call) checkRedirect(r *http.Request, via []*http.Request) error {
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
