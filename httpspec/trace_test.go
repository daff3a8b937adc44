package httpspec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/synth"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spanText is everything a span exports that could carry a value.
func spanText(s sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %v %s|", s.Name(), s.Status(), s.SpanKind())
	for _, a := range s.Attributes() {
		fmt.Fprintf(&b, "%s=%s|", a.Key, a.Value.String())
	}
	for _, e := range s.Events() {
		fmt.Fprintf(&b, "event %s %v|", e.Name, e.Attributes)
	}
	for _, a := range s.Resource().Attributes() {
		fmt.Fprintf(&b, "%s=%s|", a.Key, a.Value.String())
	}
	return b.String()
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// TestTraceOfAnInvoke: one span per invoke, a child of the kernel's span;
// one client span per attempt, children of it; each attempt's own trace
// context in its traceparent; no secret, query value or path value in any
// span.
func TestTraceOfAnInvoke(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	var mu sync.Mutex
	var parents []string
	n := 0
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		parents = append(parents, r.Header.Get("Traceparent"))
		mu.Unlock()
		if k == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	})
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{
		RetryWaitMin:   time.Millisecond,
		RetryWaitMax:   2 * time.Millisecond,
		TracerProvider: tp,
		Propagator:     propagation.TraceContext{},
	})))
	loader := &synth.Loader{Registry: reg, TracerProvider: tp}
	tool, err := loader.Load([]byte(`{"id":"t.traced","description":"d","version":"1.0.0","mutating":false,
	  "input":{"type":"object","properties":{"user":{"type":"string"},"q":{"type":"string"}}},"output":{},
	  "spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/users/{user}{?q}",
	    "authorization":{"kind":"bearer","secretRef":{"envName":"e","name":"T"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, kernel := tp.Tracer("kernel").Start(context.Background(), "run step")
	cc := synth.CallContext{Tenant: "acme", Secrets: auth.Map{"e/T": "sekrit-token-42"}}
	if _, err := tool.Invoke(ctx, cc, json.RawMessage(`{"user":"alice@example.com","q":"private-words"}`), synth.InvokeOptions{}); err != nil {
		t.Fatal(err)
	}
	kernel.End()

	spans := exp.GetSpans().Snapshots()
	var invoke sdktrace.ReadOnlySpan
	var attempts []sdktrace.ReadOnlySpan
	for _, s := range spans {
		switch {
		case s.Name() == "execute_tool t.traced":
			invoke = s
		case s.SpanKind() == trace.SpanKindClient:
			attempts = append(attempts, s)
		}
		txt := spanText(s)
		for _, bad := range []string{"sekrit", "private-words", "alice", "/users", "?q"} {
			if strings.Contains(txt, bad) {
				t.Errorf("span %q holds %q: %s", s.Name(), bad, txt)
			}
		}
	}
	if invoke == nil || len(attempts) != 2 {
		t.Fatalf("spans: %d invoke, %d attempts (of %d)", map[bool]int{true: 1}[invoke != nil], len(attempts), len(spans))
	}
	if invoke.Parent().SpanID() != kernel.SpanContext().SpanID() || invoke.SpanContext().TraceID() != kernel.SpanContext().TraceID() {
		t.Errorf("invoke's parent is %v, want the kernel's span", invoke.Parent().SpanID())
	}
	if got := attr(invoke, "gen_ai.tool.name"); got != "t.traced" {
		t.Errorf("gen_ai.tool.name %q", got)
	}
	if attr(invoke, "httptools.outcome") != "ok" || attr(invoke, "httptools.attempts") != "2" || attr(invoke, "http.response.status_code") != "200" || attr(invoke, "httptools.tenant") != "acme" {
		t.Errorf("invoke span: %s", spanText(invoke))
	}
	for i, a := range attempts {
		if a.Parent().SpanID() != invoke.SpanContext().SpanID() {
			t.Errorf("attempt %d's parent is not the invoke span", i)
		}
		if attr(a, "http.request.method") != "GET" || attr(a, "server.address") != "127.0.0.1" || attr(a, "gen_ai.tool.name") != "t.traced" {
			t.Errorf("attempt %d: %s", i, spanText(a))
		}
		want := fmt.Sprintf("00-%s-%s-01", a.SpanContext().TraceID(), a.SpanContext().SpanID())
		if parents[i] != want {
			t.Errorf("attempt %d sent traceparent %q, want %q", i, parents[i], want)
		}
	}
	if attr(attempts[0], "http.response.status_code") != "503" || attr(attempts[1], "http.request.resend_count") != "1" {
		t.Errorf("attempts: %s / %s", spanText(attempts[0]), spanText(attempts[1]))
	}

	// A failed call: the span says the code and reason, not the message,
	// which quotes the upstream's answer.
	exp.Reset()
	nf := newUpstream(t, reply(404, `{"error":"no user private-words"}`))
	bad, err := loader.Load([]byte(`{"id":"t.missing","description":"d","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
	  "spec":{"kind":"http","method":"GET","urlTemplate":"` + nf.URL + `/x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{}); err == nil || !strings.Contains(err.Error(), "private-words") {
		t.Fatalf("want an upstream-status error quoting the body, got %v", err)
	}
	spans = exp.GetSpans().Snapshots()
	if len(spans) != 2 || attr(spans[1], "httptools.reason") != httpspec.ReasonUpstreamStatus || spans[1].Status().Description != "handler-error upstream-status" || attr(spans[1], "http.response.status_code") != "404" {
		for _, s := range spans {
			t.Log(spanText(s))
		}
		t.Fatalf("failed call: %d spans", len(spans))
	}
	for _, s := range spans {
		if txt := spanText(s); strings.Contains(txt, "private-words") {
			t.Errorf("span holds the answer: %s", txt)
		}
	}
}
