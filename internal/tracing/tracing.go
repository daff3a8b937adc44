// Package tracing tells whether a program has set OpenTelemetry's global
// tracer provider, so that a call with no trace to join and no provider to
// record it skips making spans that nobody would see.
package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// unset is the global provider as otel starts, before any program sets
// one; nil if one was already set when this package was initialized.
var unset = func() trace.TracerProvider {
	tp := otel.GetTracerProvider()
	if fmt.Sprintf("%T", tp) == "*global.tracerProvider" { // otel's delegate, which records nothing
		return tp
	}
	return nil
}()

// Off reports that spans started from ctx with otel's global provider
// would record nothing and carry no trace: no provider is set and ctx has
// no span context to pass on.
func Off(ctx context.Context) bool {
	return unset != nil && otel.GetTracerProvider() == unset && !trace.SpanContextFromContext(ctx).IsValid()
}
