package orders

import (
	"context"
	"errors"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/seckilledge/seckill/contract"
)

// A batch span links to each traced delivery's span, names the batch's sales and its result;
// untraced deliveries and malformed headers add no link; without a tracer nothing is made.
func TestTheBatchSpanLinksEveryTracedOrder(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	c := &Consumer{Tracer: tp.Tracer(TracerName)}
	ds := []amqp.Delivery{
		{Headers: amqp.Table{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
		{},
		{Headers: amqp.Table{"traceparent": []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}},
		{Headers: amqp.Table{"traceparent": "not a traceparent"}},
	}
	msgs := []contract.OrderMessage{{OrderID: "o1", SaleID: "a"}, {OrderID: "o2", SaleID: "b"}, {OrderID: "o3", SaleID: "a"}, {OrderID: "o4", SaleID: "a"}}
	_, end := c.traceBatch(context.Background(), ds, msgs)
	end(BatchResult{Created: 3, Duplicates: 1}, nil)
	_, end = c.traceBatch(context.Background(), ds[1:2], msgs[1:2])
	end(BatchResult{}, errors.New("database down"))

	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Name != "batch write" || len(s.Links) != 2 || s.Parent.IsValid() {
		t.Fatalf("span %q links %v parent %v", s.Name, s.Links, s.Parent)
	}
	if s.Links[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" ||
		s.Links[1].SpanContext.SpanID().String() != "00f067aa0ba902b7" || !s.Links[0].SpanContext.IsRemote() {
		t.Fatalf("links %+v", s.Links)
	}
	got := map[string]string{}
	for _, kv := range s.Attributes {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	for k, want := range map[string]string{"seckill.batch.size": "4", "seckill.batch.traced": "2",
		"seckill.sale_ids": `["a","b"]`, "seckill.batch.created": "3", "seckill.batch.duplicates": "1"} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], want, got)
		}
	}
	if spans[1].Status.Code.String() != "Error" || len(spans[1].Links) != 0 {
		t.Fatalf("failed batch span: status %v links %v", spans[1].Status, spans[1].Links)
	}

	off := &Consumer{}
	ctx := context.Background()
	if got, end := off.traceBatch(ctx, ds, msgs); got != ctx || end == nil {
		t.Fatal("without a tracer the context must be returned unchanged")
	}
}
