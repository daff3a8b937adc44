package fetch_test

import (
	"net/netip"
	"testing"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
)

// BenchmarkGuardCheck times the check made on every dial: an address that
// passes walks the whole deny list.
func BenchmarkGuardCheck(b *testing.B) {
	g := &fetch.Guard{Allow: testkit.Loopback}
	for _, a := range []string{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "169.254.169.254"} {
		ip := netip.MustParseAddr(a)
		b.Run(a, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = g.Check(ip)
			}
		})
	}
}

// BenchmarkHostAllowed times the allowlist check made on the first request
// and on every redirect hop.
func BenchmarkHostAllowed(b *testing.B) {
	hosts := []string{"api.github.com", "*.slack.com", "gmail.googleapis.com"}
	b.ReportAllocs()
	for b.Loop() {
		if !fetch.HostAllowed(hosts, "files.slack.com") {
			b.Fatal("not allowed")
		}
	}
}
