package gate

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/caddymodule/relay"
)

// OpenTelemetry, when Caddy's `tracing` directive wraps the route: the gate writes its decision
// on the request's span and hands the span's W3C traceparent to the outbox entry, so the relay
// and the backend continue the same trace. Without the directive the request carries no
// span and none of this costs more than one context lookup.

// lendTracerProvider lends the tracer provider of ctx's sampled, recording span (the tracing
// directive's, configured from OTEL_*) to this process's relay, which runs outside any request
// and so has no other way to find it. The handler calls it before deciding, so before the
// script writes the entry (with core.TraceParent): the relay has it for the very first traced
// order.
func lendTracerProvider(ctx context.Context) {
	span := trace.SpanFromContext(ctx)
	if sc := span.SpanContext(); sc.IsValid() && sc.IsSampled() && span.IsRecording() {
		relay.UseTracerProvider(span.TracerProvider())
	}
}

// traceDecision records the decision on the request's span.
func traceDecision(ctx context.Context, sale string, v core.Verdict) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, attribute.String("seckill.sale", sale), attribute.String("seckill.outcome", string(v.Outcome)))
	if v.OrderID != "" {
		attrs = append(attrs, attribute.String("seckill.order_id", v.OrderID))
	}
	if v.Target != "" && v.Target != sale {
		attrs = append(attrs, attribute.String("seckill.shard", v.Target))
	}
	span.SetAttributes(attrs...)
}
