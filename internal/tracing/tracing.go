// Package tracing tells whether a program has set OpenTelemetry's global
// tracer provider, so that a call with no trace to join and no provider to
// record it skips making spans that nobody would see.
package tracing

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// unset is the global provider as otel starts, before any program sets
// one; nil if the provider in place when this package was initialized
// records. It is told by what the provider does, not by its type's name:
// a span it starts, from a context with no trace, neither records nor
// carries a span context (otel's delegate before a provider is set, or a
// no-op provider). Setting a provider later replaces the global one, which
// Off sees as a provider other than unset.
var unset = func() trace.TracerProvider {
	tp := otel.GetTracerProvider()
	_, span := tp.Tracer("github.com/httptools/httptools/internal/tracing").Start(context.Background(), "probe")
	defer span.End()
	if span.IsRecording() || span.SpanContext().IsValid() {
		return nil
	}
	return tp
}()

// Off reports that spans started from ctx with otel's global provider
// would record nothing and carry no trace: no provider is set and ctx has
// no span context to pass on.
func Off(ctx context.Context) bool {
	return unset != nil && otel.GetTracerProvider() == unset && !trace.SpanContextFromContext(ctx).IsValid()
}
