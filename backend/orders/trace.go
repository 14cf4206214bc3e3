package orders

import (
	"context"
	"slices"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckilledge/seckill/contract"
)

// OpenTelemetry in the backend: the consumer wraps each batch write in a "batch write" span
// linked to every order's span (the relay's publish span, child of the gateway's request
// span), whose W3C context came in the message's `traceparent` header. Off unless the
// standard OTEL_* variables ask for it (the seckill-backend command builds the provider and
// hands it over in backend.Config.NewTracerProvider); off, the consumer has no tracer and pays
// nothing.

// TracerName is the instrumentation scope of the backend's spans.
const TracerName = "github.com/seckilledge/seckill/backend"

// headerTraceparent is the AMQP header the gateway's relay sets (caddymodule/relay).
const headerTraceparent = "traceparent"

var propagator = propagation.TraceContext{}

// remoteSpan is the span context a delivery's traceparent header names (invalid when none).
func remoteSpan(d amqp.Delivery) trace.SpanContext {
	var tp string
	switch v := d.Headers[headerTraceparent].(type) {
	case string:
		tp = v
	case []byte:
		tp = string(v)
	}
	if tp == "" {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), propagation.MapCarrier{headerTraceparent: tp}))
}

// traceBatch starts the span of one batch write: a root of its own (a batch serves many
// traces), with a link to each traced order's span. It returns the context to write under
// and the function that ends the span with the write's result. Without a tracer both are
// no-ops.
func (c *Consumer) traceBatch(ctx context.Context, ds []amqp.Delivery, msgs []contract.OrderMessage) (context.Context, func(BatchResult, error)) {
	if c.Tracer == nil {
		return ctx, func(BatchResult, error) {}
	}
	var links []trace.Link
	var sales []string
	for i, d := range ds {
		if sc := remoteSpan(d); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
				attribute.String("seckill.order_id", msgs[i].OrderID)}})
		}
		if !slices.Contains(sales, msgs[i].SaleID) {
			sales = append(sales, msgs[i].SaleID)
		}
	}
	ctx, span := c.Tracer.Start(ctx, "batch write", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(links...), trace.WithAttributes(
			attribute.String("messaging.system", "rabbitmq"),
			attribute.Int("messaging.batch.message_count", len(msgs)),
			attribute.Int("seckill.batch.size", len(msgs)),
			attribute.Int("seckill.batch.traced", len(links)),
			attribute.StringSlice("seckill.sale_ids", sales),
		))
	return ctx, func(res BatchResult, err error) {
		span.SetAttributes(attribute.Int("seckill.batch.created", res.Created),
			attribute.Int("seckill.batch.failed", len(res.Failed)),
			attribute.Int("seckill.batch.duplicates", res.Duplicates))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "batch not written")
		}
		span.End()
	}
}
