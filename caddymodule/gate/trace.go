package gate

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckilledge/seckill/caddymodule/relay"
)

// OpenTelemetry, when Caddy's `tracing` directive wraps the route: the gate writes its decision
// on the request's span and hands the span's W3C traceparent to the outbox entry, so the relay
// and the backend continue the same trace. Without the directive the request carries no
// span and none of this costs more than one context lookup.

// traceparent is the W3C traceparent of ctx's span when that span is sampled, else "": an
// unsampled trace is not worth a byte in the outbox, nor a header on the broker.
//
// It also lends the span's tracer provider (the tracing directive's, configured from OTEL_*)
// to this process's relay, which runs outside any request and so has no other way to find it.
// Here, before the script writes the entry, so the relay has it for the very first traced order.
func traceparent(ctx context.Context) string {
	span := trace.SpanFromContext(ctx)
	sc := span.SpanContext()
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	if span.IsRecording() {
		relay.UseTracerProvider(span.TracerProvider())
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// traceDecision records the decision on the request's span.
func traceDecision(ctx context.Context, sale string, v Verdict) {
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
