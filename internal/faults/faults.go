// Package faults puts a fault-injecting TCP proxy (Toxiproxy, run in the
// test's own process) on a link a test wants to break: a replica's link to
// PostgreSQL, to an OAuth provider, to an upstream. The test talks to
// Link.Addr instead of the real address and cuts, delays or half-opens the
// link while the real parts on either end run as they do in production.
//
// It is for tests only: every Link binds 127.0.0.1 and is stopped when the
// test ends.
package faults

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

var (
	once   sync.Once
	server *toxiproxy.ApiServer
)

// api is the process's one Toxiproxy server (its API is never listened
// on: links are driven in process).
func api() *toxiproxy.ApiServer {
	once.Do(func() {
		server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	})
	return server
}

// Link is one proxied TCP link: clients connect to Addr, which forwards to
// the upstream address, through the faults currently set.
type Link struct {
	t testing.TB
	p *toxiproxy.Proxy

	mu     sync.Mutex
	toxics []string
	n      int
}

// New starts a link to upstream (host:port) on 127.0.0.1, stopped when t
// ends.
func New(t testing.TB, upstream string) *Link {
	t.Helper()
	p := toxiproxy.NewProxy(api(), fmt.Sprintf("%s-%p", strings.ReplaceAll(t.Name(), "/", "_"), t), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("faults: starting a proxy to %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return &Link{t: t, p: p}
}

// Addr is the address clients dial: host:port on 127.0.0.1.
func (l *Link) Addr() string { return l.p.Listen }

// Port is Addr's port.
func (l *Link) Port() string {
	_, port, _ := net.SplitHostPort(l.p.Listen)
	return port
}

// add sets a toxic of kind on stream ("upstream": what clients send,
// "downstream": what they receive) with attrs (JSON members).
func (l *Link) add(kind, stream, attrs string) {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	name := fmt.Sprintf("%s-%s-%d", kind, stream, l.n)
	js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":{%s}}`, name, kind, stream, attrs)
	if _, err := l.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		l.t.Fatalf("faults: %s: %v", js, err)
	}
	l.toxics = append(l.toxics, name)
}

// Cut partitions the link: nothing passes either way, on the connections
// open and on new ones (which are accepted and then hear nothing, as a
// connection into a partition does once its handshake is done), until
// Heal. What was sent meanwhile is lost.
func (l *Link) Cut() {
	l.add("timeout", "upstream", `"timeout":0`)
	l.add("timeout", "downstream", `"timeout":0`)
}

// HalfOpen lets what clients send through and nothing back: the far end
// gets the requests and its answers are lost, until Heal.
func (l *Link) HalfOpen() {
	l.add("timeout", "downstream", `"timeout":0`)
}

// Latency delays each piece of data either way by ms ± jitter
// milliseconds, until Heal.
func (l *Link) Latency(ms, jitter int) {
	attrs := fmt.Sprintf(`"latency":%d,"jitter":%d`, ms, jitter)
	l.add("latency", "upstream", attrs)
	l.add("latency", "downstream", attrs)
}

// ResetPeer resets every connection (TCP RST) as data arrives, until Heal.
func (l *Link) ResetPeer() {
	l.add("reset_peer", "upstream", `"timeout":0`)
}

// Heal removes every fault: the link passes data again. A connection a Cut
// or HalfOpen held is closed as it heals (as one that outlived a long
// partition is reset): its client must connect again.
func (l *Link) Heal() {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range l.toxics {
		if err := l.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
			l.t.Errorf("faults: removing %s: %v", name, err)
		}
	}
	l.toxics = nil
}
