//go:build integration

package systemtest

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/caddymodule/relay"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// memoryExporterName is the OTEL_TRACES_EXPORTER value under which Caddy's tracing module
// (which builds its exporter with autoexport from the OTEL_* variables) finds the test's
// in-memory exporter: the real directive, the real provider, only the last hop swapped.
const memoryExporterName = "seckill-systemtest-memory"

var (
	spans        = tracetest.NewInMemoryExporter()
	registerOnce sync.Once
)

// keptExporter is the in-memory exporter minus its Shutdown, which would forget the spans:
// Caddy shuts its provider down when the config stops.
type keptExporter struct{ *tracetest.InMemoryExporter }

func (keptExporter) Shutdown(context.Context) error { return nil }

func useMemoryExporter(t *testing.T) {
	registerOnce.Do(func() {
		autoexport.RegisterSpanExporter(memoryExporterName, func(context.Context) (sdktrace.SpanExporter, error) {
			return keptExporter{spans}, nil
		})
	})
	t.Setenv("OTEL_TRACES_EXPORTER", memoryExporterName)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms: Caddy's batcher hands the spans over quickly
	spans.Reset()
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func findSpan(ss tracetest.SpanStubs, pred func(tracetest.SpanStub) bool) (tracetest.SpanStub, bool) {
	for _, s := range ss {
		if pred(s) {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// One order's trace, from the click to its row: a real gateway in this process whose buy
// route is wrapped by Caddy's own `tracing` handler (its provider built from OTEL_* with the
// in-memory exporter), the gate deciding in Redis, the app's relay publishing to RabbitMQ and
// the backend's consumer writing Postgres. The client sends a traceparent, as a traced browser
// or load balancer would: the request span continues it, the relay's publish span is the
// request span's child, and the batch write's span links to the publish span.
func TestOneOrdersTraceRunsFromTheGatewayThroughTheRelayToTheBatchWrite(t *testing.T) {
	useMemoryExporter(t)
	s := newSystem(t)
	// The backend's provider: its own, like a separate process, on the same exporter.
	btp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(keptExporter{spans}))
	t.Cleanup(func() { _ = btp.Shutdown(context.Background()) })
	s.consume(btp.Tracer(orders.TracerName))
	sale := s.sale(5)
	port := testenv.FreePort(t)
	base := startCaddy(t, port, s.gatewayJSON(port, testenv.FreePort(t), true,
		map[string]any{"handler": "tracing", "span": "buy {http.request.uri.path.1}"}))

	const click = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	a := buy(t, base, sale, "u1", map[string]string{"traceparent": click})
	if a.Status != http.StatusAccepted {
		t.Fatalf("buy: %+v", a)
	}
	testenv.WaitFor(t, 30*time.Second, "the order's row", func() bool { return s.orderStatus(a.OrderID) == "created" })

	var gw, pub, batch tracetest.SpanStub
	testenv.WaitFor(t, 10*time.Second, "the three spans exported", func() bool {
		ss := spans.GetSpans()
		var ok1, ok2, ok3 bool
		gw, ok1 = findSpan(ss, func(s tracetest.SpanStub) bool { return attr(s, "seckill.order_id") == a.OrderID })
		pub, ok2 = findSpan(ss, func(s tracetest.SpanStub) bool {
			return s.Name == "relay publish" && attr(s, "messaging.message.id") == a.OrderID
		})
		batch, ok3 = findSpan(ss, func(s tracetest.SpanStub) bool {
			return s.Name == "batch write" && slices.ContainsFunc(s.Links, func(l sdktrace.Link) bool { return l.SpanContext.TraceID() == gw.SpanContext.TraceID() })
		})
		return ok1 && ok2 && ok3
	})

	// The request span: Caddy's, continuing the client's trace, with the gate's decision.
	if got := gw.SpanContext.TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("request span trace id %s, want the client's", got)
	}
	if gw.Name != "buy "+sale || gw.SpanKind != trace.SpanKindServer {
		t.Fatalf("request span %q kind %v", gw.Name, gw.SpanKind)
	}
	if attr(gw, "seckill.sale") != sale || attr(gw, "seckill.outcome") != "accepted" {
		t.Fatalf("request span attributes %v", gw.Attributes)
	}
	// The relay's publish: child of the request span, same trace.
	if pub.Parent.SpanID() != gw.SpanContext.SpanID() || pub.SpanContext.TraceID() != gw.SpanContext.TraceID() {
		t.Fatalf("publish span parent %s/%s, want the request span %s/%s", pub.Parent.TraceID(), pub.Parent.SpanID(),
			gw.SpanContext.TraceID(), gw.SpanContext.SpanID())
	}
	if pub.SpanKind != trace.SpanKindProducer || attr(pub, "seckill.sale") != sale {
		t.Fatalf("publish span kind %v attributes %v", pub.SpanKind, pub.Attributes)
	}
	// The batch write: a root of its own with a link to the order's publish span.
	i := slices.IndexFunc(batch.Links, func(l sdktrace.Link) bool { return l.SpanContext.SpanID() == pub.SpanContext.SpanID() })
	if i < 0 {
		t.Fatalf("batch span links %v, want one to the publish span %s", batch.Links, pub.SpanContext.SpanID())
	}
	if l := batch.Links[i]; l.SpanContext.TraceID() != gw.SpanContext.TraceID() || !l.SpanContext.IsRemote() {
		t.Fatalf("link %+v: want the order's trace, remote", l.SpanContext)
	}
	if batch.Parent.IsValid() {
		t.Fatalf("batch span has a parent %v: it serves many traces and should be a root", batch.Parent)
	}
	if attr(batch, "seckill.sale_ids") != "[\""+sale+"\"]" || attr(batch, "seckill.batch.size") == "" || attr(batch, "seckill.batch.created") != "1" {
		t.Fatalf("batch span attributes %v", batch.Attributes)
	}
}

// Tracing off (no `tracing` directive, no OTEL_* variable): the outbox entry is today's
// o, u, t with no tp field, and the relay's message carries no traceparent header and makes no
// span, even in a process whose global tracer provider records.
func TestWithTracingOffNoTraceparentIsWrittenOrSent(t *testing.T) {
	spans.Reset()
	prev := otel.GetTracerProvider()
	gtp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(keptExporter{spans}))
	otel.SetTracerProvider(gtp)
	t.Cleanup(func() { otel.SetTracerProvider(prev); _ = gtp.Shutdown(context.Background()) })
	s := newSystem(t)
	sale := s.sale(5)
	port := testenv.FreePort(t)
	base := startCaddy(t, port, s.gatewayJSON(port, testenv.FreePort(t), false)) // no relay: the entry stays
	a := buy(t, base, sale, "u1", map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	if a.Status != http.StatusAccepted {
		t.Fatalf("buy: %+v", a)
	}
	ctx := context.Background()
	entries, err := s.rdb.XRange(ctx, contract.OutboxKey(sale), "-", "+").Result()
	if err != nil || len(entries) != 1 {
		t.Fatalf("outbox: %v %v", entries, err)
	}
	if v := entries[0].Values; len(v) != 3 || v["o"] != a.OrderID || v["tp"] != nil {
		t.Fatalf("outbox entry %v, want exactly o, u, t", v)
	}

	// The relay, as the app runs it, publishes it.
	ch := testenv.Topology(t, s.amqp)
	r := relay.New(relay.Options{Redis: s.rdb, Namespace: s.ns,
		Connect: func(context.Context) (*amqp.Connection, error) { return amqp.Dial(s.amqp) }})
	r.Start(ctx)
	t.Cleanup(func() { _ = r.Stop() })
	r.Notify(sale)
	var d amqp.Delivery
	testenv.WaitFor(t, 20*time.Second, "the message in the queue", func() bool {
		var ok bool
		d, ok, err = ch.Get(contract.Queue, true)
		return err == nil && ok
	})
	if d.MessageId != a.OrderID {
		t.Fatalf("message %s, want %s", d.MessageId, a.OrderID)
	}
	// (x-delivery-count is the quorum queue's own.)
	if _, ok := d.Headers[relay.HeaderTraceparent]; ok {
		t.Fatalf("headers %v, want no traceparent", d.Headers)
	}
	if _, ok := d.Headers["tracestate"]; ok {
		t.Fatalf("headers %v, want no tracestate", d.Headers)
	}
	if n := len(spans.GetSpans()); n != 0 {
		t.Fatalf("%d spans recorded with tracing off: %v", n, spans.GetSpans())
	}
}
