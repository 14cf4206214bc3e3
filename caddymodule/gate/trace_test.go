//go:build integration

package gate

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

func spanContext(sampled bool) trace.SpanContext {
	flags := trace.TraceFlags(0)
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: flags,
	})
}

// The outbox entry carries the request span's traceparent (field tp) only when the span is
// sampled; without a span, or with an unsampled one, the entry is exactly today's o, u, t.
func TestTheOutboxEntryCarriesTheTraceparentOfASampledSpanOnly(t *testing.T) {
	rdb := testenv.Redis(t)
	sale := newSale(t, rdb, 10, -time.Minute, time.Hour)
	cases := []struct {
		name string
		ctx  context.Context
		tp   string
	}{
		{"no span", context.Background(), ""},
		{"unsampled span", trace.ContextWithSpanContext(context.Background(), spanContext(false)), ""},
		{"sampled span", trace.ContextWithSpanContext(context.Background(), spanContext(true)),
			"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	}
	for i, c := range cases {
		order := "0190b7a6-0000-7000-8000-00000000000" + string(rune('1'+i))
		v, err := core.Decide(c.ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "u" + string(rune('1'+i))}, OrderID: order})
		if err != nil || v.Outcome != core.Accepted {
			t.Fatalf("%s: %+v %v", c.name, v, err)
		}
		entries, err := rdb.XRange(context.Background(), contract.OutboxKey(sale), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		for _, e := range entries {
			if e.Values["o"] == order {
				got = e.Values
			}
		}
		if got == nil {
			t.Fatalf("%s: no outbox entry for %s in %v", c.name, order, entries)
		}
		tp, has := got["tp"]
		switch {
		case c.tp == "" && has:
			t.Fatalf("%s: entry %v has a tp field", c.name, got)
		case c.tp != "" && tp != c.tp:
			t.Fatalf("%s: entry %v, want tp %q", c.name, got, c.tp)
		}
		if c.tp == "" && len(got) != 3 {
			t.Fatalf("%s: entry %v, want exactly o, u, t", c.name, got)
		}
	}
}

// The cost of tracing when it is off, per decision: the two span lookups in a context as deep
// as a Caddy request's (about a dozen values).
func BenchmarkTracingOffPerDecision(b *testing.B) {
	type key int
	ctx := context.Background()
	for i := range 12 {
		ctx = context.WithValue(ctx, key(i), i)
	}
	v := core.Verdict{Outcome: core.Accepted, OrderID: "0190b7a6-0000-7000-8000-000000000001"}
	b.ReportAllocs()
	for b.Loop() {
		if core.TraceParent(ctx) != "" {
			b.Fatal("a traceparent without a span")
		}
		traceDecision(ctx, "s1", v)
	}
}
