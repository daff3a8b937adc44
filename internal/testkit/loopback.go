package testkit

import (
	"net/netip"
	"slices"

	"github.com/httptools/httptools/fetch"
)

// Loopback is the range a test's upstreams listen in (127.0.0.1), which
// the SSRF guard refuses unless a client opens it.
var Loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// LoopbackClient is a fetch client with cfg's settings whose guard also
// lets it reach the test's upstreams on 127.0.0.1, and nothing else the
// guard refuses.
func LoopbackClient(cfg fetch.Config) *fetch.Client {
	cfg.AllowCIDRs = append(slices.Clone(cfg.AllowCIDRs), Loopback...)
	return fetch.NewClient(cfg)
}
