package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/httptools/httptools/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver keeping every span it is sent.
type collector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	attrs []string // resource attributes seen
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				c.attrs = append(c.attrs, a.Key+"="+a.GetValue().GetStringValue())
			}
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(c.Close)
	return c
}

// find returns the span named name in trace traceID, or nil.
func (c *collector) find(traceID, name string) *tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.spans {
		if fmt.Sprintf("%x", s.TraceId) == traceID && s.Name == name {
			return s
		}
	}
	return nil
}

type withHeader struct {
	name, value string
}

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeExportsTraces: with OTEL_EXPORTER_OTLP_ENDPOINT set, serve
// exports the span of each REST and MCP call (SDK path and fast path) as a
// child of the caller's traceparent, and the upstream request carries the
// trace on.
func TestServeExportsTraces(t *testing.T) {
	col := newCollector(t)
	var mu sync.Mutex
	seen := map[string]string{} // trace id → traceparent the upstream got
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tp := r.Header.Get("Traceparent")
		if parts := strings.Split(tp, "-"); len(parts) == 4 {
			mu.Lock()
			seen[parts[1]] = tp
			mu.Unlock()
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	defer up.Close()
	w := newWorld(t)
	w.write("trace.json", `{"id":"t.trace","description":"Traced.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/traced?q=private-words"}}`)
	p := startServe(t, append(e2eEnv, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=httptools-e2e"),
		"--tools", w.tools, "--db", "sqlite:"+t.TempDir()+"/t.db", "--addr", "127.0.0.1:0", "--allow-cidr", "127.0.0.0/8")

	const (
		restTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		fastTrace = "5bf92f3577b34da6a3ce929d0e0e4737"
		sdkTrace  = "6bf92f3577b34da6a3ce929d0e0e4738"
		parent    = "00f067aa0ba902b7"
	)
	// REST.
	req, _ := http.NewRequest("POST", p.url+"/v1/tools/t.trace/invoke", strings.NewReader(`{"input":{}}`))
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Traceparent", "00-"+restTrace+"-"+parent+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("REST: %v %v", err, resp)
	}
	resp.Body.Close()
	// MCP, a plain tools/call (the fast path).
	req, _ = http.NewRequest("POST", p.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t.trace","arguments":{}}}`))
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Traceparent", "00-"+fastTrace+"-"+parent+"-01")
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("MCP: %v %v", err, resp)
	}
	resp.Body.Close()
	// MCP through the Go SDK's client, with _meta (the SDK's server path).
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: bearerThen{p.key, withHeader{"Traceparent", "00-" + sdkTrace + "-" + parent + "-01"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.trace", Arguments: map[string]any{}, Meta: mcp.Meta{"k": "v"}}); err != nil || res.IsError {
		t.Fatalf("SDK call: %v %v", err, res)
	}

	for _, tr := range []string{restTrace, fastTrace, sdkTrace} {
		var invoke, attempt *tracepb.Span
		testkit.WaitFor(t, "trace "+tr+"'s invoke and attempt spans", func() bool {
			invoke, attempt = col.find(tr, "execute_tool t.trace"), col.find(tr, "GET")
			return invoke != nil && attempt != nil
		})
		if got := fmt.Sprintf("%x", invoke.ParentSpanId); got != parent {
			t.Errorf("trace %s: the invoke span's parent is %s, want the caller's %s", tr, got, parent)
		}
		if fmt.Sprintf("%x", attempt.ParentSpanId) != fmt.Sprintf("%x", invoke.SpanId) {
			t.Errorf("trace %s: the attempt is not the invoke's child", tr)
		}
		mu.Lock()
		got := seen[tr]
		mu.Unlock()
		if want := fmt.Sprintf("00-%s-%x-01", tr, attempt.SpanId); got != want {
			t.Errorf("trace %s: the upstream got traceparent %q, want %q", tr, got, want)
		}
		for _, s := range []*tracepb.Span{invoke, attempt} {
			if txt := s.String(); strings.Contains(txt, "private-words") || strings.Contains(txt, p.key) {
				t.Errorf("span %s holds the query or the key: %s", s.Name, txt)
			}
		}
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if !strings.Contains(strings.Join(col.attrs, " "), "service.name=httptools-e2e") {
		t.Errorf("resource attributes %v", col.attrs)
	}
}

// bearerThen adds an API key, then hands down.
type bearerThen struct {
	key  string
	next http.RoundTripper
}

func (b bearerThen) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}
