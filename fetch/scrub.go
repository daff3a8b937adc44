package fetch

import (
	"context"
	"errors"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// Errors say nothing of this side's network: the text of a network error
// names addresses of the service's, not the upstream's — the resolver a
// look-up asked ("lookup api.x.com on 10.255.255.53:53: no such host"),
// the local end of a connection ("read tcp 10.0.0.5:41234->…"), the proxy
// the operator configured — and a call's error reaches its caller, the
// model, the history and the audit record. Each is taken out where fetch
// makes the error (a look-up's, a proxy's dial) and, for what net/http
// words itself, from the text of every error fetch hands out (Client.quiet)
// and of every description (Describe).

var (
	// localEnd is the local end of a connection in a net.OpError's text:
	// "10.0.0.5:41234->" or "[fd00::5]:41234->".
	localEnd = regexp.MustCompile(`(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+(?:%[^\]\s]*)?\]):\d{1,5}->`)
	// resolverOn is the resolver a look-up asked, in a net.DNSError's
	// text: "lookup api.x.com on 10.255.255.53:53: ".
	resolverOn = regexp.MustCompile(`(lookup \S+) on \S+?:\d{1,5}: `)
	// udpPeer is a socket's peer on UDP, which fetch speaks to resolvers
	// only: "dial udp 10.255.255.53:53", "read udp [::1]:53".
	udpPeer = regexp.MustCompile(`\b(dial|read|write) udp[46]? \S+?:\d{1,5}\b`)
)

// scrubText takes this side's addresses out of an error's text: local
// ends of connections, resolvers, and the addresses in others (a proxy's).
func scrubText(s string, others ...string) string {
	if strings.Contains(s, "->") {
		s = localEnd.ReplaceAllString(s, "")
	}
	if strings.Contains(s, " on ") {
		s = resolverOn.ReplaceAllString(s, "$1: ")
	}
	if strings.Contains(s, " udp") {
		s = udpPeer.ReplaceAllStringFunc(s, func(m string) string {
			switch {
			case strings.HasPrefix(m, "dial"):
				return "dial the resolver"
			case strings.HasPrefix(m, "read"):
				return "read from the resolver"
			}
			return "write to the resolver"
		})
	}
	for _, o := range others {
		if o != "" {
			s = strings.ReplaceAll(s, o, "the proxy")
		}
	}
	return s
}

// lookupError is a failed look-up of host as a *net.DNSError without the
// resolver's address: Go's resolver names it in Server and, after a
// socket error, in the text (Err) too. Its flags and a context error it
// wraps are kept.
func lookupError(err error, host string) *net.DNSError {
	var de *net.DNSError
	if !errors.As(err, &de) {
		out := &net.DNSError{Err: scrubText(err.Error()), Name: host}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			out.UnwrapErr = err
		}
		return out
	}
	out := *de // a copy: a look-up's error is shared by the calls that waited on it
	text := scrubText(de.Err)
	if de.Server != "" {
		text = strings.ReplaceAll(text, de.Server, "the resolver")
		if h, _, err := net.SplitHostPort(de.Server); err == nil && h != "" {
			text = strings.ReplaceAll(text, h, "the resolver")
		}
	}
	out.Err, out.Server = text, ""
	if out.Name == "" {
		out.Name = host
	}
	return &out
}

// proxyError is a failed dial of the configured proxy without its
// address, which is the operator's.
func proxyError(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		e := *oe
		e.Source, e.Addr = nil, nil
		err = &e
	}
	return &quietError{msg: "the configured proxy: " + scrubText(err.Error()), err: err}
}

// quietError is an error whose text had this side's addresses taken out;
// what it wraps is unchanged, for errors.Is and errors.As.
type quietError struct {
	msg string
	err error
}

func (e *quietError) Error() string { return e.msg }
func (e *quietError) Unwrap() error { return e.err }

// quiet is err as fetch hands it out: its text without this side's
// addresses (a *url.Error keeps its type, with the error it wraps quiet).
func (c *Client) quiet(err error) error {
	if err == nil {
		return nil
	}
	var te *TruncatedError
	if errors.As(err, &te) && te.Err != nil {
		te.Err = c.quiet(te.Err) // the call's own, made by its read
	}
	if ue, ok := err.(*url.Error); ok {
		inner := c.quiet(ue.Err)
		if inner == ue.Err {
			return err
		}
		u := *ue
		u.Err = inner
		return &u
	}
	s := err.Error()
	q := scrubText(s, c.dialer.proxyPeers()...)
	if q == s {
		return err
	}
	return &quietError{msg: q, err: err}
}

// proxyPeerSet remembers the addresses the configured proxies were
// reached at (net/http names them in the errors of proxied connections),
// up to maxProxyPeers of them.
type proxyPeerSet struct {
	m sync.Map // "ip:port" → true
	n atomic.Int64
}

const maxProxyPeers = 64

func (s *proxyPeerSet) add(conn net.Conn) {
	a := conn.RemoteAddr().String()
	if _, ok := s.m.Load(a); ok || s.n.Load() >= maxProxyPeers {
		return
	}
	if _, loaded := s.m.LoadOrStore(a, true); !loaded {
		s.n.Add(1)
	}
}

// proxyPeers are the configured proxies' addresses, as configured and as
// reached.
func (d *dialer) proxyPeers() []string {
	var out []string
	d.proxies.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		if h, _, err := net.SplitHostPort(k.(string)); err == nil && strings.ContainsAny(h, ".:") {
			out = append(out, h)
		}
		return true
	})
	if d.peers.n.Load() == 0 {
		return out
	}
	d.peers.m.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	return out
}
