package fetch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Resolver looks up the addresses of a host. *net.Resolver implements it;
// tests inject one that makes a name resolve to any address.
// It must be safe for concurrent use: every dial looks up through it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc connects to one "ip:port".
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// dialer resolves a host itself, refuses every address the guard refuses
// before connecting, and dials the others in order. The real dial checks the
// address once more in net.Dialer.Control, on the socket being connected.
type dialer struct {
	guard    *Guard
	resolver Resolver
	dial     DialFunc
	// proxies holds the configured proxies' "host:port" addresses seen so
	// far: dialled without the guard, since the operator chose them. The
	// guard then checks each target before the request is sent (see
	// Client.checkTarget).
	proxies sync.Map
	// direct dials the proxy.
	direct DialFunc
	// peers are the addresses the proxies were reached at, taken out of
	// the errors fetch hands out (scrub.go).
	peers proxyPeerSet
}

func newDialer(g *Guard, r Resolver, dial DialFunc) *dialer {
	if r == nil {
		r = net.DefaultResolver
	}
	d := &dialer{guard: g, resolver: r, dial: dial}
	nd := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	d.direct = nd.DialContext
	if d.dial == nil {
		guarded := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: g.Control}
		d.dial = guarded.DialContext
	}
	return d
}

// DialContext implements http.Transport.DialContext. A connection the
// Transport dials on its own for a call past its attempts is refused
// (resend.go).
func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if cl := callOf(ctx); cl != nil {
		if err := cl.rs.dial(); err != nil {
			return nil, err
		}
	}
	if _, ok := d.proxies.Load(address); ok {
		conn, err := d.direct(ctx, network, address)
		if err != nil {
			return nil, proxyError(err)
		}
		d.peers.add(conn)
		return conn, nil
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	pn, err := portNum(port)
	if err != nil {
		return nil, err
	}
	ips, err := d.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var denied error
	var lastErr error
	for _, ip := range ips {
		if err := d.guard.Check(ip); err != nil {
			if denied == nil {
				de := err.(*DeniedError)
				de.Host = host
				denied = de
			}
			continue
		}
		conn, err := d.dial(ctx, network, netip.AddrPortFrom(ip, pn).String())
		if err == nil {
			return conn, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	if denied != nil {
		return nil, denied
	}
	return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
}

func (d *dialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	ips, err := d.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, lookupError(err, host) // without the resolver's address
	}
	// net.Resolver answers IPv4 in its IPv4-mapped IPv6 form; check and dial
	// the IPv4 address itself. (A literal mapped address in a URL is still
	// refused as such.)
	for i, ip := range ips {
		ips[i] = ip.Unmap()
	}
	return ips, nil
}

// portNum parses a port: 1–65535 in decimal, nothing else (70000 must not
// become 4464).
func portNum(p string) (uint16, error) {
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 || p[0] == '+' {
		return 0, fmt.Errorf("fetch: port %q is not a number from 1 to 65535", p)
	}
	return uint16(n), nil
}
