package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/httptools/httptools/fetch"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// setupTracing makes the process propagate W3C trace context (incoming on
// REST and MCP, outgoing on every upstream attempt) and, when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set, export spans over OTLP/HTTP. The exporter reads the other standard
// variables itself (headers, timeout, TLS); the SDK reads the sampler's
// and the batcher's, and OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// name the service. The returned function flushes and stops the exporter.
func setupTracing(ctx context.Context, getenv func(string) string, log *slog.Logger) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	none := func(context.Context) error { return nil }
	if getenv("OTEL_SDK_DISABLED") == "true" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return none, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol != "" && protocol != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: httptools exports traces over http/protobuf only; unset it or set it to http/protobuf", protocol)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "httptools"), attribute.String("service.version", fetch.Version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		log.Warn("OpenTelemetry resource attributes from the environment were not all read", "error", err.Error())
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	log.Info("exporting traces over OTLP/HTTP")
	return tp.Shutdown, nil
}
