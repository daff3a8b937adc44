package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
)

// TestGuardRefusesWithoutConnecting: every refused range, as an IP literal in
// the URL, fails with a DeniedError after one attempt and zero dials.
func TestGuardRefusesWithoutConnecting(t *testing.T) {
	for _, host := range []string{
		"127.0.0.1", "[::1]", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1",
		"169.254.169.254", "0.0.0.0", "224.0.0.1", "255.255.255.255",
		"[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "[64:ff9b::7f00:1]",
		"[fe80::1]", "[fc00::1]", "[2002:7f00:1::1]", "[2001::1]", "[::]",
	} {
		t.Run(host, func(t *testing.T) {
			h := newHarness(t, fetch.Config{})
			resp, err := h.get(context.Background(), "http://"+host+"/latest/meta-data/")
			var de *fetch.DeniedError
			if !errors.As(err, &de) || !de.IP.IsValid() {
				t.Fatalf("got %v, want a DeniedError naming the address", err)
			}
			if n := len(h.dialed()); n != 0 {
				t.Errorf("%d dials, want 0", n)
			}
			if resp.Attempts != 1 {
				t.Errorf("%d attempts, want 1 (a refusal is never retried)", resp.Attempts)
			}
			// The second line: the dialer's Control refuses the same
			// address on the socket itself.
			ap := netip.AddrPortFrom(de.IP, 80)
			if err := (&fetch.Guard{}).Control("tcp", ap.String(), nil); err == nil {
				t.Errorf("Control(%s) allowed it", ap)
			}
		})
	}
}

// TestGuardNameResolution: names are checked on every address they resolve
// to, at every dial.
func TestGuardNameResolution(t *testing.T) {
	srv := newCounter(t, status(200))
	t.Run("rebinding: public then 127.0.0.1 never dials 127.0.0.1", func(t *testing.T) {
		h := newHarness(t, fetch.Config{})
		h.name("rebind.test", []netip.Addr{public}, []netip.Addr{netip.MustParseAddr("127.0.0.1")})
		h.route(public, srv.port(), srv.Server)
		url := fmt.Sprintf("http://rebind.test:%d/", srv.port())
		if _, err := h.get(context.Background(), url); err != nil {
			t.Fatal(err)
		}
		h.client.CloseIdleConnections() // force a new dial and a new look-up
		_, err := h.get(context.Background(), url)
		var de *fetch.DeniedError
		if !errors.As(err, &de) || de.IP.String() != "127.0.0.1" {
			t.Fatalf("second call: got %v", err)
		}
		want := fmt.Sprintf("93.184.216.34:%d", srv.port())
		if d := h.dialed(); len(d) != 1 || d[0] != want {
			t.Errorf("dials %v, want only %s", d, want)
		}
		if n := h.lookupsOf("rebind.test"); n != 2 {
			t.Errorf("%d look-ups, want 2", n)
		}
	})
	t.Run("private and public answers: only the public is dialled", func(t *testing.T) {
		h := newHarness(t, fetch.Config{})
		h.name("mixed.test", []netip.Addr{netip.MustParseAddr("10.0.0.1"), public})
		h.route(public, srv.port(), srv.Server)
		resp, err := h.get(context.Background(), fmt.Sprintf("http://mixed.test:%d/", srv.port()))
		if err != nil || resp.Status != 200 {
			t.Fatalf("got %v", err)
		}
		for _, d := range h.dialed() {
			if strings.HasPrefix(d, "10.") {
				t.Errorf("dialled %s", d)
			}
		}
	})
	t.Run("a name with only refused answers", func(t *testing.T) {
		h := newHarness(t, fetch.Config{})
		h.name("metadata.internal.test", []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00::1")})
		_, err := h.get(context.Background(), "http://metadata.internal.test/")
		var de *fetch.DeniedError
		if !errors.As(err, &de) || de.Host != "metadata.internal.test" || len(h.dialed()) != 0 {
			t.Fatalf("got %v after %d dials", err, len(h.dialed()))
		}
	})
	t.Run("operator allows a range", func(t *testing.T) {
		h := newHarness(t, fetch.Config{AllowCIDRs: testkit.Loopback})
		if _, err := h.get(context.Background(), srv.URL); err != nil {
			t.Fatal(err)
		}
		// Allowing IPv4 loopback does not open its IPv4-mapped IPv6 form.
		_, err := h.get(context.Background(), fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", srv.port()))
		var de *fetch.DeniedError
		if !errors.As(err, &de) {
			t.Fatalf("mapped form: got %v", err)
		}
	})
	t.Run("only http and https", func(t *testing.T) {
		h := newHarness(t, fetch.Config{})
		for _, u := range []string{"ftp://example.test/x", "file:///etc/passwd", "gopher://example.test/"} {
			_, err := h.get(context.Background(), u)
			var de *fetch.DeniedError
			if !errors.As(err, &de) || len(h.dialed()) != 0 {
				t.Errorf("%s: got %v", u, err)
			}
		}
	})
}

// TestEnvironmentProxyIgnored: HTTP_PROXY in the environment changes
// nothing: the guard still refuses, and allowed calls go direct.
func TestEnvironmentProxyIgnored(t *testing.T) {
	proxy := newCounter(t, status(200))
	srv := newCounter(t, status(200))
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	h := newHarness(t, fetch.Config{})
	_, err := h.get(context.Background(), "http://10.1.2.3/")
	var de *fetch.DeniedError
	if !errors.As(err, &de) {
		t.Fatalf("got %v", err)
	}
	h.name("api.public.test", []netip.Addr{public})
	h.route(public, srv.port(), srv.Server)
	if _, err := h.get(context.Background(), fmt.Sprintf("http://api.public.test:%d/", srv.port())); err != nil {
		t.Fatal(err)
	}
	if n, _ := proxy.counts(); n != 0 {
		t.Errorf("the environment proxy got %d requests, want 0", n)
	}
	if n, _ := srv.counts(); n != 1 {
		t.Errorf("the upstream got %d requests, want 1", n)
	}
}

// TestConfiguredProxyKeepsGuard: with a proxy configured, the guard checks
// the target's addresses before anything goes to the proxy.
func TestConfiguredProxyKeepsGuard(t *testing.T) {
	proxy := newCounter(t, status(200))
	h := newHarness(t, fetch.Config{Proxy: func(*http.Request) (*urlURL, error) { return parseURL(proxy.URL) }})
	h.name("inside.test", []netip.Addr{netip.MustParseAddr("10.9.9.9")})
	h.name("outside.test", []netip.Addr{public})
	for _, u := range []string{"http://10.1.2.3/", "http://inside.test/", "http://169.254.169.254/"} {
		_, err := h.get(context.Background(), u)
		var de *fetch.DeniedError
		if !errors.As(err, &de) {
			t.Errorf("%s: got %v", u, err)
		}
	}
	if n, _ := proxy.counts(); n != 0 {
		t.Fatalf("the proxy got %d requests for refused targets, want 0", n)
	}
	if _, err := h.get(context.Background(), "http://outside.test/"); err != nil {
		t.Fatal(err)
	}
	if n, _ := proxy.counts(); n != 1 {
		t.Errorf("the proxy got %d requests, want 1 for the allowed target", n)
	}
}

// TestResolverMappedAnswers: resolvers may answer IPv4 in IPv4-mapped form
// (net.Resolver does); such answers are judged as the IPv4 address they are.
func TestResolverMappedAnswers(t *testing.T) {
	srv := newCounter(t, status(200))
	h := newHarness(t, fetch.Config{})
	h.name("mapped-public.test", []netip.Addr{netip.AddrFrom16(public.As16())})
	h.name("mapped-metadata.test", []netip.Addr{netip.MustParseAddr("::ffff:169.254.169.254")})
	h.route(public, srv.port(), srv.Server)
	if _, err := h.get(context.Background(), fmt.Sprintf("http://mapped-public.test:%d/", srv.port())); err != nil {
		t.Errorf("mapped public answer: %v", err)
	}
	_, err := h.get(context.Background(), "http://mapped-metadata.test/")
	var de *fetch.DeniedError
	if !errors.As(err, &de) || de.IP.String() != "169.254.169.254" {
		t.Errorf("mapped metadata answer: %v", err)
	}
}
