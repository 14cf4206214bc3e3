package core

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceParent is the W3C traceparent of ctx's span when that span is sampled, else "": an
// unsampled trace is not worth a byte in the outbox, nor a header on the broker. The script
// writes it to the outbox entry (field tp), so the relay and the backend continue the trace.
func TraceParent(ctx context.Context) string {
	sc := trace.SpanFromContext(ctx).SpanContext()
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}
