package fetch

import (
	"fmt"
	"net/netip"
	"syscall"
)

// deniedRange is one address range the guard refuses, with why.
type deniedRange struct {
	prefix netip.Prefix
	why    string
}

// deniedRanges are never dialled unless the operator allows them: loopback,
// private, shared, link-local and metadata, documentation, multicast,
// broadcast and reserved space, and every IPv6 form that embeds an IPv4
// address (mapped, compatible, NAT64, 6to4, Teredo), since those can reach
// the refused IPv4 ranges through a translator.
var deniedRanges = func() []deniedRange {
	var out []deniedRange
	for _, r := range []struct{ cidr, why string }{
		{"0.0.0.0/8", "this-network (0.0.0.0/8)"},
		{"10.0.0.0/8", "private (RFC 1918)"},
		{"100.64.0.0/10", "shared CGNAT space (100.64.0.0/10)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local / cloud metadata (169.254.0.0/16)"},
		{"172.16.0.0/12", "private (RFC 1918)"},
		{"192.0.0.0/24", "IETF protocol assignments (192.0.0.0/24)"},
		{"192.0.2.0/24", "documentation (TEST-NET-1)"},
		{"192.88.99.0/24", "6to4 relay anycast"},
		{"192.168.0.0/16", "private (RFC 1918)"},
		{"198.18.0.0/15", "benchmarking (198.18.0.0/15)"},
		{"198.51.100.0/24", "documentation (TEST-NET-2)"},
		{"203.0.113.0/24", "documentation (TEST-NET-3)"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved or broadcast"},
		{"::/96", "unspecified, loopback or IPv4-compatible IPv6"},
		{"::ffff:0:0/96", "IPv4-mapped IPv6"},
		{"64:ff9b::/96", "NAT64 (64:ff9b::/96)"},
		{"64:ff9b:1::/48", "local NAT64 (64:ff9b:1::/48)"},
		{"100::/64", "IPv6 discard (100::/64)"},
		{"2001::/32", "Teredo (2001::/32)"},
		{"2001:10::/28", "ORCHID (2001:10::/28)"},
		{"2001:db8::/32", "IPv6 documentation (2001:db8::/32)"},
		{"2002::/16", "6to4 (2002::/16)"},
		{"fc00::/7", "IPv6 unique local (fc00::/7)"},
		{"fe80::/10", "IPv6 link-local (fe80::/10)"},
		{"fec0::/10", "IPv6 site-local (fec0::/10)"},
		{"ff00::/8", "IPv6 multicast"},
	} {
		out = append(out, deniedRange{netip.MustParsePrefix(r.cidr), r.why})
	}
	return out
}()

// Guard decides which IP addresses outbound calls may dial. The zero value
// refuses every range in the deny list and allows the rest of the Internet.
// It is safe for concurrent use once built.
type Guard struct {
	// Allow lists ranges the operator opens despite the deny list, such as
	// 127.0.0.0/8 for a local upstream. Nothing else switches the guard off.
	Allow []netip.Prefix
}

// Check returns nil when ip may be dialled, or a *DeniedError saying which
// range refused it.
func (g *Guard) Check(ip netip.Addr) error {
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return &DeniedError{Why: "not an IP address"}
	}
	for _, p := range g.Allow {
		if p.Contains(ip) {
			return nil
		}
	}
	for _, r := range deniedRanges {
		if r.prefix.Contains(ip) {
			return &DeniedError{IP: ip, Why: fmt.Sprintf("address %s is %s", ip, r.why)}
		}
	}
	return nil
}

// Control is a net.Dialer.Control function: it checks the address really
// being connected, after any resolution, for every connection.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &DeniedError{Why: fmt.Sprintf("cannot check dial address %q", address)}
	}
	return g.Check(ap.Addr())
}
