package relay

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

const testTP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// An untraced entry gets no header and no span; a traced one, without a provider, carries its
// own traceparent on; with a provider, a publish span child of it whose context the header
// carries.
func TestTheTraceparentOfAnEntryBecomesTheMessagesHeader(t *testing.T) {
	ctx := context.Background()
	prev := tracerProvider.Load()
	t.Cleanup(func() { tracerProvider.Store(prev) })
	tracerProvider.Store(nil)

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	plain := redis.XMessage{ID: "1-0", Values: map[string]any{"o": "o1", "u": "u1", "t": "1"}}
	bad := redis.XMessage{ID: "2-0", Values: map[string]any{"o": "o1", "u": "u1", "t": "1", "tp": "garbage"}}
	traced := redis.XMessage{ID: "3-0", Values: map[string]any{"o": "o1", "u": "u1", "t": "1", "tp": testTP}}

	UseTracerProvider(tp)
	for _, m := range []redis.XMessage{plain, bad} {
		h, end := traceEntry(ctx, "s1", "o1", m)
		end()
		if h != nil {
			t.Fatalf("entry %v: headers %v, want none", m.Values, h)
		}
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans for untraced entries", n)
	}

	h, end := traceEntry(ctx, "s1:2", "o1", traced)
	end()
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "relay publish" {
		t.Fatalf("spans %v", spans)
	}
	s := spans[0]
	if s.Parent.SpanID().String() != "b7ad6b7169203331" || s.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("span parent %v trace %v", s.Parent, s.SpanContext.TraceID())
	}
	want := "00-0af7651916cd43dd8448eb211c80319c-" + s.SpanContext.SpanID().String() + "-01"
	if h[HeaderTraceparent] != want {
		t.Fatalf("header %v, want %s", h, want)
	}

	// No provider lent and the global one a no-op: the entry's own context goes on.
	tracerProvider.Store(nil)
	h, end = traceEntry(ctx, "s1", "o1", traced)
	end()
	if h[HeaderTraceparent] != testTP {
		t.Fatalf("header %v without a provider, want the entry's %s", h, testTP)
	}
}
