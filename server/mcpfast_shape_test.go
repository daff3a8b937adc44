package server

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestProbeShapesFollowsTheSDK: a value of fastShapeCandidates the SDK's
// handler refuses leaves the fast path's shape, and the headers of its
// JSON answer are the ones the fast path writes. The handler here is the
// SDK's with one rule more (a stand-in for a rule a release adds).
func TestProbeShapesFollowsTheSDK(t *testing.T) {
	r := newRig(t)
	sdk := r.srv.mcpHandler()
	stricter := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case strings.Contains(req.Header.Get("Content-Type"), "charset"),
			req.Header.Get("Accept") == "*/*",
			req.Header.Get("MCP-Protocol-Version") == "2024-11-05",
			strings.HasPrefix(req.Host, "[::1]"):
			http.Error(w, "refused", http.StatusBadRequest)
			return
		}
		w.Header().Set("X-New", "1")
		sdk.ServeHTTP(w, req)
	})
	sh := probeShapes(stricter)
	for what, got := range map[string]bool{
		"a charset":             sh.contentTypes["application/json; charset=utf-8"],
		"Accept */*":            sh.accepts["*/*"],
		"2024-11-05":            sh.versions["2024-11-05"],
		"[::1]":                 sh.loopbackHosts["[::1]"] || sh.loopbackHostPorts["[::1]"],
		"no charset (kept)":     !sh.contentTypes["application/json"],
		"2026-07-28 (kept)":     !sh.versions["2026-07-28"],
		"localhost:port (kept)": !sh.loopbackHostPorts["localhost"],
	} {
		if got {
			t.Errorf("%s: %v", what, got)
		}
	}
	if sh.header.Get("X-New") != "1" || sh.header.Get("Content-Type") != "application/json" {
		t.Errorf("answer header %v: want the SDK's, X-New with it", sh.header)
	}
}

// TestFastShape: the fast path takes only the whitelisted shape; every
// other request is the SDK's, even one the SDK would serve.
func TestFastShape(t *testing.T) {
	r := newRig(t)
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	public := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 443}
	for _, c := range []struct {
		name   string
		local  net.Addr
		host   string
		header map[string]string
		want   bool
	}{
		{"plain", loop, "127.0.0.1:8080", nil, true},
		{"localhost", loop, "localhost:8080", nil, true},
		{"localhost, no port", loop, "localhost", nil, true},
		{"[::1]", loop, "[::1]:8080", nil, true},
		{"another loopback address", loop, "127.0.0.2:8080", nil, false},
		{"a name on a loopback listener", loop, "evil.example:8080", nil, false},
		{"an empty port", loop, "localhost:", nil, false},
		{"a public listener", public, "mcp.example.com", nil, true},
		{"Origin", loop, "localhost:8080", map[string]string{"Origin": "http://localhost:8080"}, false},
		{"Sec-Fetch-Site", loop, "localhost:8080", map[string]string{"Sec-Fetch-Site": "same-origin"}, false},
		{"Accept with q", loop, "localhost:8080", map[string]string{"Accept": "application/json;q=0.9, text/event-stream"}, false},
		{"Accept reordered", loop, "localhost:8080", map[string]string{"Accept": "text/event-stream, application/json"}, true},
		{"Content-Type upper case", loop, "localhost:8080", map[string]string{"Content-Type": "Application/JSON"}, false},
		{"unknown version", loop, "localhost:8080", map[string]string{"MCP-Protocol-Version": "2099-01-01"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "/mcp", nil)
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, c.local))
			req.Host = c.host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			if got := r.srv.fastShape(req, req.Header.Get("MCP-Protocol-Version")); got != c.want {
				t.Errorf("fastShape = %v, want %v", got, c.want)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodPost, "/mcp", nil)
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(loop)))
	req.Header["Accept"] = []string{"application/json", "text/event-stream"}
	req.Header.Set("Content-Type", "application/json")
	if r.srv.fastShape(req, "") {
		t.Error("two Accept lines: the SDK's")
	}
}
