package main

// The backend's OpenTelemetry tracer provider, built from the standard OTEL_* variables. It
// lives in the command, not in the backend package, because the exporters it may pick (OTLP
// over gRPC or HTTP, the console) link gRPC and protobuf: only this binary pays for them, not
// every package and test binary that links the backend or its consumer.

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// tracingEnabled reports whether the environment asks for traces: an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or an exporter
// (OTEL_TRACES_EXPORTER other than "none"), and not OTEL_SDK_DISABLED=true.
func tracingEnabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	if e := getenv("OTEL_TRACES_EXPORTER"); e != "" {
		return e != "none"
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// newTracerProvider builds the SDK tracer provider the environment describes (exporter and
// protocol from OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_*, sampler from
// OTEL_TRACES_SAMPLER, resource from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, service
// name seckill-backend by default). It returns nil when tracing is off. The caller shuts it
// down on exit, which flushes the spans still batched.
func newTracerProvider(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if !tracingEnabled(os.Getenv) {
		return nil, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "seckill-backend")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
