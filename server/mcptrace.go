package server

import (
	"context"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// Trace context in _meta. A 2026-07-28 request carries the caller's W3C
// trace context in params._meta ("traceparent", "tracestate", "baggage"),
// as REST carries it in headers (traceContext, server.go): read with the
// same propagator (otel's global), it puts the caller's span in the
// context, and the call's span (synth) is its child. A request with both
// follows its _meta, the request's own.

// traceMetaKeys are the _meta members that carry trace context.
var traceMetaKeys = [...]string{"traceparent", "tracestate", "baggage"}

// metaTraceContext is ctx continuing the trace a request's _meta carries,
// or ctx when it carries none (SDK path: the params' Meta).
func metaTraceContext(ctx context.Context, meta map[string]any) context.Context {
	if _, ok := meta["traceparent"].(string); !ok {
		return ctx
	}
	c := propagation.MapCarrier{}
	for _, k := range traceMetaKeys {
		if v, ok := meta[k].(string); ok {
			c[k] = v
		}
	}
	return otel.GetTextMapPropagator().Extract(ctx, c)
}

// fastMetaTraceContext is metaTraceContext for the fast path, which reads
// _meta with gjson; meta may not exist.
func fastMetaTraceContext(ctx context.Context, meta gjson.Result) context.Context {
	tp := meta.Get("traceparent")
	if tp.Type != gjson.String {
		return ctx
	}
	c := propagation.MapCarrier{}
	for _, k := range traceMetaKeys {
		if v := meta.Get(k); v.Type == gjson.String {
			c[k] = v.Str
		}
	}
	return otel.GetTextMapPropagator().Extract(ctx, c)
}

// fastMetaKnown says the fast path reads every member of a tools/call's
// _meta: an object of trace context only. Anything else in it (a progress
// token, httptools/context, …) is the SDK's to read.
func fastMetaKnown(meta gjson.Result) bool {
	if !meta.IsObject() {
		return false
	}
	ok := true
	meta.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "traceparent", "tracestate", "baggage":
			ok = v.Type == gjson.String
		default:
			ok = false
		}
		return ok
	})
	return ok
}
