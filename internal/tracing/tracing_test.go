package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func TestOff(t *testing.T) {
	if !Off(context.Background()) {
		t.Fatal("Off is false before any provider is set")
	}
	remote := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true}))
	if Off(remote) {
		t.Error("Off with a caller's trace to pass on")
	}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	otel.SetTracerProvider(tp)
	if Off(context.Background()) {
		t.Error("Off once a provider is set")
	}
}
