package fetch

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/httptools/httptools/internal/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the instrumentation scope of the attempt spans.
const tracerName = "github.com/httptools/httptools/fetch"

// tracer makes a client span of every request a call sends (each attempt
// and each redirect hop) and puts the span's context in the request's
// headers (W3C traceparent by default), so that the upstream's spans join
// the trace. The span names the method, the host and port, the status and
// the attempt: never the path or the query, which carry the call's input,
// nor any header.
type tracer struct {
	tracer     trace.Tracer
	global     bool // tracer is the global provider's
	propagator propagation.TextMapPropagator
}

func newTracer(tp trace.TracerProvider, p propagation.TextMapPropagator) tracer {
	global := tp == nil
	if global {
		// The global provider's tracer follows the provider a program
		// sets later: taken once, it need not be looked up per request.
		tp = otel.GetTracerProvider()
	}
	return tracer{propagator: p, global: global, tracer: tp.Tracer(tracerName, trace.WithInstrumentationVersion(Version))}
}

// clientSpan is the option of every attempt span, made once.
var clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// RoundTrip is the top of the call's transport: every attempt and redirect
// hop passes here, in its span, on the way to the wrapper or the pool.
// Its frame is small, and so is traced's: they stay on the goroutine's
// stack while the upstream answers (what a span needs is made in calls
// that have returned by then).
func (cl *call) RoundTrip(r *http.Request) (*http.Response, error) {
	cl.rs.hop()
	ctx, span := cl.span(r)
	if span == nil {
		return cl.next.RoundTrip(r)
	}
	return cl.traced(ctx, span, r)
}

// span starts the attempt's span: nil when tracing is off or there is no
// trace to join and nothing recording (the request is sent as it is).
//
//go:noinline
func (cl *call) span(r *http.Request) (context.Context, trace.Span) {
	t := &cl.c.tracer
	if t.global && tracing.Off(r.Context()) {
		return nil, nil
	}
	ctx, span := t.tracer.Start(r.Context(), r.Method, clientSpan...)
	if !span.SpanContext().IsValid() {
		span.End()
		return nil, nil
	}
	return ctx, span
}

// traced sends r in span.
func (cl *call) traced(ctx context.Context, span trace.Span, r *http.Request) (*http.Response, error) {
	if span.IsRecording() {
		cl.startAttrs(span, r)
	}
	r2 := cl.withTraceContext(ctx, r)
	resp, err := cl.next.RoundTrip(r2)
	if err != nil {
		span.SetStatus(codes.Error, errorKind(err))
		span.End()
		return nil, err
	}
	endAttrs(span, resp.StatusCode)
	resp.Body = &spanBody{ReadCloser: resp.Body, span: span}
	return resp, nil
}

// startAttrs names the attempt in its span.
//
//go:noinline
func (cl *call) startAttrs(span trace.Span, r *http.Request) {
	attempt, tool := cl.rs.count(), cl.req.Tool
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", r.Method),
		attribute.String("server.address", r.URL.Hostname()),
		attribute.String("url.scheme", r.URL.Scheme),
	}
	if p := r.URL.Port(); p != "" {
		if n, err := strconv.Atoi(p); err == nil {
			attrs = append(attrs, attribute.Int("server.port", n))
		}
	}
	if attempt > 1 {
		attrs = append(attrs, attribute.Int("http.request.resend_count", attempt-1))
	}
	if tool != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", tool))
	}
	span.SetAttributes(attrs...)
}

// withTraceContext is r with ctx and ctx's trace context in a copy of its
// headers: the header map may be the call's, shared by its attempts.
//
//go:noinline
func (cl *call) withTraceContext(ctx context.Context, r *http.Request) *http.Request {
	prop := cl.c.tracer.propagator
	if prop == nil {
		prop = otel.GetTextMapPropagator()
	}
	r2 := r.WithContext(ctx)
	r2.Header = r.Header.Clone()
	prop.Inject(ctx, propagation.HeaderCarrier(r2.Header))
	return r2
}

// endAttrs puts the answer's status in the attempt's span.
//
//go:noinline
func endAttrs(span trace.Span, status int) {
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 400 {
		span.SetStatus(codes.Error, strconv.Itoa(status))
	}
}

// errorKind words a failed attempt for its span without the error's text,
// which may hold the URL.
func errorKind(err error) string {
	var de *DeniedError
	switch {
	case errors.As(err, &de):
		return "denied"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "transport error"
}

// spanBody ends the attempt's span when its body is read to the end or
// closed: the span covers the whole answer.
type spanBody struct {
	io.ReadCloser
	span trace.Span
	once sync.Once
}

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.end(err)
	}
	return n, err
}

func (b *spanBody) Close() error {
	b.end(nil)
	return b.ReadCloser.Close()
}

func (b *spanBody) end(err error) {
	b.once.Do(func() {
		if err != nil && err != io.EOF {
			b.span.SetStatus(codes.Error, "the body broke off")
		}
		b.span.End()
	})
}
