package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listChangedCounter is a client that counts the tools/list_changed
// notifications it gets.
type listChangedCounter struct{ n atomic.Int64 }

func (c *listChangedCounter) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.n.Add(1) },
	})
}

// listenHTTP is a 2026-07-28 session of the Go SDK's client
// with key, listening for tool list changes (subscriptions/listen) at
// endpoint.
func (c *listChangedCounter) listenHTTP(t *testing.T, endpoint, key string) *mcp.ClientSession {
	t.Helper()
	cs, err := c.client().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: keyTransport{key: key}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s", v)
	}
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Fatalf("server/discover capabilities %+v: want tools.listChanged", caps.Tools)
	}
	return cs
}

// listenStdio is a 2025-11-25 session with srv (a long-lived server, as
// on stdio).
func (c *listChangedCounter) listenStdio(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := c.client().Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("negotiated %s", v)
	}
	return cs
}

func (s *Server) listenerCount() int {
	s.listeners.mu.Lock()
	defer s.listeners.mu.Unlock()
	return len(s.listeners.m)
}

// told is how many notifications s sent, by tenant and door ("tenant-a
// http", "tenant-b stdio"), once every view was checked again.
func (s *Server) told() map[string]int64 {
	s.recheckViews()
	s.listeners.mu.Lock()
	defer s.listeners.mu.Unlock()
	out := map[string]int64{}
	for l := range s.listeners.m {
		door := "http"
		if l.key == nil {
			door = "stdio"
		}
		out[l.tenant+" "+door] += l.told.Load()
	}
	return out
}

// TestListChangedPerTenant: MCP clients of two tenants listen for tool
// list changes, each tenant through a 2026-07-28 subscriptions/listen at
// the HTTP door and a 2025-11-25 stdio-like session, and one more of
// tenant A's through another replica on the same store. A policy put for
// tenant A notifies A's three listeners once each and none of B's; the
// same policy put again notifies no one; then one for B notifies B's two
// once each and no more of A's; a policy that changes nothing A sees
// notifies no one; a reload that changes a tool notifies all five.
func TestListChangedPerTenant(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Policies = c.Store.(PolicyStore); c.PolicyTTL = 100 * time.Millisecond })
	other, err := New(Config{Store: r.store, Keys: r.store, Policies: r.store, PolicyTTL: 100 * time.Millisecond, ToolsDir: r.srv.cfg.ToolsDir,
		Loader: r.srv.cfg.Loader, Logger: r.srv.cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	otherHTTP := httptest.NewServer(other.Handler())
	t.Cleanup(otherHTTP.Close)

	var a26, a25, aOther, b26, b25 listChangedCounter
	a26.listenHTTP(t, r.http.URL+"/mcp", r.keyA)
	b26.listenHTTP(t, r.http.URL+"/mcp", r.keyB)
	aOther.listenHTTP(t, otherHTTP.URL+"/mcp", r.keyA)
	a25.listenStdio(t, r.srv.MCPServer("tenant-a", nil))
	b25.listenStdio(t, r.srv.MCPServer("tenant-b", nil))
	if n := r.srv.listenerCount(); n != 4 {
		t.Fatalf("%d listeners on the first replica, want 4", n)
	}
	if n := other.listenerCount(); n != 1 {
		t.Fatalf("%d listeners on the other replica, want 1", n)
	}
	counts := func() [5]int64 {
		return [5]int64{a26.n.Load(), a25.n.Load(), aOther.n.Load(), b26.n.Load(), b25.n.Load()}
	}
	put := func(key, doc string) {
		t.Helper()
		if st := r.do(t, key, "PUT", "/v1/policy", doc); st.status != 200 {
			t.Fatalf("policy: %d %s", st.status, st.raw)
		}
	}
	const noEcho = `{"rules":[{"name":"no-echo","effect":"deny","tools":{"ids":["t.echo"]}}]}`

	put(r.keyA, noEcho)
	testkit.WaitFor(t, "tenant A's listeners to be notified", func() bool { return a26.n.Load() >= 1 && a25.n.Load() >= 1 && aOther.n.Load() >= 1 })
	if got := fmt.Sprint(r.srv.told(), other.told()); got != "map[tenant-a http:1 tenant-a stdio:1 tenant-b http:0 tenant-b stdio:0] map[tenant-a http:1]" {
		t.Errorf("after tenant A's policy, sent: %s", got)
	}
	put(r.keyA, noEcho) // the same again: no view changes
	put(r.keyB, noEcho)
	testkit.WaitFor(t, "tenant B's listeners to be notified", func() bool { return b26.n.Load() >= 1 && b25.n.Load() >= 1 })
	if got := fmt.Sprint(r.srv.told(), other.told()); got != "map[tenant-a http:1 tenant-a stdio:1 tenant-b http:1 tenant-b stdio:1] map[tenant-a http:1]" {
		t.Errorf("after tenant B's policy, sent: %s", got)
	}
	// Every change so far is checked: the views are read again here,
	// after the puts, and a change left unnotified would show.
	r.srv.recheckViews()
	other.recheckViews()
	if got, want := counts(), [5]int64{1, 1, 1, 1, 1}; got != want {
		t.Errorf("notifications (A 2026, A 2025, A other replica, B 2026, B 2025) = %v, want %v", got, want)
	}
	// A policy that hides nothing A's admin sees: no one is told.
	put(r.keyA, `{"rules":[{"name":"no-echo","effect":"deny","tools":{"ids":["t.echo","t.none"]}}]}`)
	r.srv.recheckViews()
	other.recheckViews()
	if got, want := counts(), [5]int64{1, 1, 1, 1, 1}; got != want {
		t.Errorf("after a change no admin sees: %v, want %v", got, want)
	}
	// A reload that changes a tool: everyone who sees it.
	if err := os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "secret.json"), []byte(`{"id":"t.secret","description":"Uses a secret, described anew.","version":"1.0.1","mutating":false,
		"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"http://127.0.0.1:1/s"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := other.Reload(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "every listener to be told of the reload", func() bool {
		c := counts()
		return c[0] >= 2 && c[1] >= 2 && c[2] >= 2 && c[3] >= 2 && c[4] >= 2
	})
	r.srv.recheckViews()
	other.recheckViews()
	if got, want := counts(), [5]int64{2, 2, 2, 2, 2}; got != want {
		t.Errorf("after a reload: %v, want %v", got, want)
	}
}

// TestListChangedPerToolset: two listeners of one tenant, at two
// toolsets' endpoints; a policy put that changes one toolset's tools
// notifies its listener once and not the other's.
func TestListChangedPerToolset(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Policies = c.Store.(PolicyStore) })
	put := func(doc string) {
		t.Helper()
		if st := r.do(t, r.keyA, "PUT", "/v1/policy", doc); st.status != 200 {
			t.Fatalf("policy: %d %s", st.status, st.raw)
		}
	}
	put(`{"rules":[],"toolsets":{"reads":{"ids":["t.echo"]},"mail":{"ids":["t.mail"]}}}`)
	var reads, mail listChangedCounter
	reads.listenHTTP(t, r.http.URL+"/mcp/reads", r.keyA)
	mail.listenHTTP(t, r.http.URL+"/mcp/mail", r.keyA)
	toolsets := func() map[string]int64 {
		r.srv.recheckViews()
		r.srv.listeners.mu.Lock()
		defer r.srv.listeners.mu.Unlock()
		out := map[string]int64{}
		for l := range r.srv.listeners.m {
			out[l.toolset] += l.told.Load()
		}
		return out
	}
	if got := fmt.Sprint(toolsets()); got != "map[mail:0 reads:0]" {
		t.Fatalf("listeners by toolset, before: %s", got)
	}
	put(`{"rules":[],"toolsets":{"reads":{"ids":["t.echo","t.secret"]},"mail":{"ids":["t.mail"]}}}`)
	testkit.WaitFor(t, "the reads listener to be notified", func() bool { return reads.n.Load() >= 1 })
	if got := fmt.Sprint(toolsets()); got != "map[mail:0 reads:1]" {
		t.Errorf("sent by toolset: %s", got)
	}
	if n, m := reads.n.Load(), mail.n.Load(); n != 1 || m != 0 {
		t.Errorf("notifications: reads %d, mail %d; want 1, 0", n, m)
	}
}

// TestListenEndsWithItsKey: a listen whose API key is revoked ends (its
// listener is gone) within a policy TTL; another key's listen goes on.
func TestListenEndsWithItsKey(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Policies = c.Store.(PolicyStore); c.PolicyTTL = 100 * time.Millisecond })
	doomed, k, err := r.store.CreateAPIKey(context.Background(), "tenant-a", "admin", "")
	if err != nil {
		t.Fatal(err)
	}
	var a, kept listChangedCounter
	a.listenHTTP(t, r.http.URL+"/mcp", doomed)
	kept.listenHTTP(t, r.http.URL+"/mcp", r.keyA)
	if n := r.srv.listenerCount(); n != 2 {
		t.Fatalf("%d listeners, want 2", n)
	}
	if st := r.do(t, r.keyA, "DELETE", "/v1/keys/"+k.ID, ""); st.status != 204 {
		t.Fatalf("revoke: %d %s", st.status, st.raw)
	}
	testkit.WaitFor(t, "the revoked key's listen to end", func() bool { return r.srv.listenerCount() == 1 })
	r.srv.listeners.mu.Lock()
	for l := range r.srv.listeners.m {
		if l.key == nil || l.key.ID == k.ID {
			t.Errorf("the listener left is %+v", l.key)
		}
	}
	r.srv.listeners.mu.Unlock()
}

// TestEndListens: EndListens ends every listen (each stream answers its
// result), and a listen that comes after it ends as it starts, so an HTTP
// server's Shutdown waits for none.
func TestEndListens(t *testing.T) {
	r := newRig(t)
	var a, b listChangedCounter
	a.listenHTTP(t, r.http.URL+"/mcp", r.keyA)
	b.listenHTTP(t, r.http.URL+"/mcp", r.keyB)
	if n := r.srv.listenerCount(); n != 2 {
		t.Fatalf("%d listeners, want 2", n)
	}
	r.srv.EndListens()
	testkit.WaitFor(t, "the listens to end", func() bool { return r.srv.listenerCount() == 0 })
	var late listChangedCounter
	late.listenHTTP(t, r.http.URL+"/mcp", r.keyA)
	if n := r.srv.listenerCount(); n != 0 {
		t.Errorf("%d listeners after EndListens, want 0", n)
	}
	// The HTTP server closes: no request is left open (Close waits for
	// every one).
	closed := make(chan struct{})
	go func() { r.http.Close(); close(closed) }()
	testkit.WaitFor(t, "the HTTP server to close", func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	})
}

// TestStdioToolsFollowTheSet: a stdio server's tools follow the tool set
// even where its caller sees no change — a reload that removes a tool a
// policy denies it, or one outside its toolset, leaves the tool out of
// its list (a cold review found it listed, once only changed views were
// synced) — and SyncMCP, on a server built otherwise, still notifies
// after a policy change.
func TestStdioToolsFollowTheSet(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Policies = c.Store.(PolicyStore) })
	if st := r.do(t, r.keyA, "PUT", "/v1/policy", `{"rules":[{"name":"no-mail","effect":"deny","tools":{"ids":["t.mail"]}}],"toolsets":{"reads":{"ids":["t.echo"]}}}`); st.status != 200 {
		t.Fatalf("policy: %d %s", st.status, st.raw)
	}
	var all, reads listChangedCounter
	csAll := all.listenStdio(t, r.srv.MCPServer("tenant-a", nil))
	csReads := reads.listenStdio(t, r.srv.MCPToolsetServer("tenant-a", "reads", nil))
	names := func(cs *mcp.ClientSession) string {
		t.Helper()
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, tl := range res.Tools {
			n = append(n, tl.Name)
		}
		return strings.Join(n, ",")
	}
	if got := names(csAll) + " | " + names(csReads); strings.Contains(got, "t.mail") || !strings.Contains(got, "t.secret") {
		t.Fatalf("before: %s", got)
	}
	for _, f := range []string{"mail.json", "mail.cases.json", "secret.json"} {
		os.Remove(filepath.Join(r.srv.cfg.ToolsDir, f))
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	r.srv.recheckViews() // the reload's own check may still run: this one is done when it returns
	if got := names(csAll) + " | " + names(csReads); strings.Contains(got, "t.mail") || strings.Contains(got, "t.secret") {
		t.Errorf("after a reload that removed t.mail (denied) and t.secret (outside reads): %s", got)
	}

	other := mcp.NewServer(&mcp.Implementation{Name: "x", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	other.AddReceivingMiddleware(r.srv.mcpPolicy("tenant-a", ""))
	r.srv.SyncMCP(other, "tenant-a", nil)
	var c listChangedCounter
	c.listenStdio(t, other)
	if st := r.do(t, r.keyA, "PUT", "/v1/policy", `{"rules":[{"name":"no-echo","effect":"deny","tools":{"ids":["t.echo"]}}]}`); st.status != 200 {
		t.Fatalf("policy: %d %s", st.status, st.raw)
	}
	r.srv.SyncMCP(other, "tenant-a", nil)
	testkit.WaitFor(t, "SyncMCP's notification", func() bool { return c.n.Load() >= 1 })
}
