package synth

import (
	"context"
	"errors"

	"github.com/httptools/httptools/internal/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

const tracerName = "github.com/httptools/httptools/synth"

// globalTracer is otel's global provider's tracer, which follows the
// provider a program sets, whenever it does.
var globalTracer = otel.GetTracerProvider().Tracer(tracerName)

func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return globalTracer
	}
	return tp.Tracer(tracerName)
}

// internalSpan is the option of every invoke span, made once.
var internalSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// startSpan starts the span of one Invoke, named and labelled as
// OpenTelemetry's GenAI conventions name a tool's execution. It carries
// the tool, the tenant and, at its end, the outcome: never the input, the
// output or a secret.
//
//go:noinline
func (t *Tool) startSpan(ctx context.Context, cc *CallContext) (context.Context, trace.Span) {
	tr := t.tracer
	if tr == nil { // a Tool not made by a Loader
		tr = globalTracer
	}
	if tr == globalTracer && tracing.Off(ctx) {
		return ctx, trace.SpanFromContext(ctx) // records nothing, costs nothing
	}
	ctx, span := tr.Start(ctx, t.spanName, internalSpan...)
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", t.manifest.ID),
			attribute.String("httptools.tenant", cc.Tenant),
		)
	}
	return ctx, span
}

func endSpan(span trace.Span, res *Result, err error) {
	if span.IsRecording() {
		if res != nil {
			span.SetAttributes(attribute.String("httptools.outcome", "ok"),
				attribute.Int("http.response.status_code", res.Status), attribute.Int("httptools.attempts", res.Attempts))
		}
		var e *Error
		if errors.As(err, &e) {
			attrs := []attribute.KeyValue{attribute.String("httptools.outcome", string(e.Code)), attribute.String("error.type", string(e.Code))}
			if e.Reason != "" {
				attrs = append(attrs, attribute.String("httptools.reason", e.Reason))
			}
			if e.Status != 0 {
				attrs = append(attrs, attribute.Int("http.response.status_code", e.Status))
			}
			span.SetAttributes(attrs...)
			// The code and reason, not the message: a message may quote
			// the upstream's answer.
			span.SetStatus(codes.Error, string(e.Code)+" "+e.Reason)
		}
	}
	span.End()
}
