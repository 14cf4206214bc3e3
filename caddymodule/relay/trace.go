package relay

import (
	"context"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckilledge/seckill/contract"
)

// Tracing of the relay: an outbox entry written under a sampled request span carries its W3C
// traceparent (field tp, lua/gate.lua). The relay sends it on as the AMQP header
// `traceparent`, after starting a short "relay publish" span, child of the request's, whose
// context the header then carries. An entry without tp is published exactly as before: no
// header, no span.

// HeaderTraceparent is the AMQP header (and the outbox field's meaning) of the W3C trace
// context; the backend's consumer reads it.
const HeaderTraceparent = "traceparent"

// fieldTraceparent is the outbox entry's field holding the traceparent.
const fieldTraceparent = "tp"

// tracerName is the instrumentation scope of the relay's spans.
const tracerName = "github.com/seckilledge/seckill/caddymodule/relay"

var tracerProvider atomic.Pointer[providerBox]

type providerBox struct{ tp trace.TracerProvider }

// UseTracerProvider gives the relays of this process the provider to make their spans with.
// The gate lends the provider of a traced request's span: Caddy's `tracing` directive builds
// its provider from the OTEL_* variables but keeps it to itself (it does not set the global
// one), and the relay, running outside any request, has no other way to reach it. Until a
// provider is lent, the global one (otel.GetTracerProvider, a no-op unless the embedding
// program set one) is used; then the header still goes out, carrying the request's context.
func UseTracerProvider(tp trace.TracerProvider) {
	if tp == nil {
		return
	}
	if cur := tracerProvider.Load(); cur != nil && cur.tp == tp {
		return // the common case, once per traced request: no allocation
	}
	tracerProvider.Store(&providerBox{tp})
}

func tracer() trace.Tracer {
	if b := tracerProvider.Load(); b != nil {
		return b.tp.Tracer(tracerName)
	}
	return otel.GetTracerProvider().Tracer(tracerName)
}

var propagator = propagation.TraceContext{}

// traceEntry starts the publish span of an outbox entry that carries a traceparent and
// returns the headers of its message (nil when the entry is not traced) and the function that
// ends the span (never nil).
func traceEntry(ctx context.Context, sale, orderID string, m redis.XMessage) (amqp.Table, func()) {
	tp, _ := m.Values[fieldTraceparent].(string)
	if tp == "" {
		return nil, func() {}
	}
	parent := propagator.Extract(ctx, propagation.MapCarrier{HeaderTraceparent: tp})
	if !trace.SpanContextFromContext(parent).IsValid() {
		return nil, func() {} // not a traceparent: the order goes on, untraced
	}
	sctx, span := tracer().Start(parent, "relay publish", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "rabbitmq"),
			attribute.String("messaging.destination.name", contract.Exchange),
			attribute.String("messaging.message.id", orderID),
			attribute.String("seckill.sale", contract.BaseSale(sale)),
			attribute.String("seckill.outbox_entry", m.ID),
		))
	// Without a recording span (no provider), sctx still carries the request's context, so
	// the header is the entry's own traceparent.
	c := propagation.MapCarrier{}
	propagator.Inject(sctx, c)
	h := amqp.Table{}
	for k, v := range c {
		h[k] = v
	}
	return h, func() { span.End() }
}
