//go:build integration

package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The event stream sends a frame a second; with SECKILL_GATEWAY_METRICS its accepted and
// refused rates come from the gateways' counters, summed over gateways and a sale's shards.
func TestCockpitFramesTakeRatesFromTheGatewaysMetrics(t *testing.T) {
	// The page reads the sale through Sales; Postgres (its orders) and Redis (its outbox) are
	// real and empty.
	pool := backendtest.DB(t)
	sale := testenv.ID("s")
	ten := int64(10)
	start := time.Now()
	clock := start
	c := New(Cockpit{Pool: pool, Redis: testenv.Redis(t), Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return clock },
		Sales: func(context.Context, time.Time, int) ([]admin.SaleSummary, error) {
			return []admin.SaleSummary{{ID: sale, State: admin.SaleOpen, InitialStock: 10, StockDB: 10, StockRedis: &ten, Shards: 1,
				StartsAt: start.Add(-time.Minute), EndsAt: start.Add(time.Hour)}}, nil
		},
		Audit: func(context.Context, int) ([]admin.AuditEntry, error) { return nil, nil }})
	var accepted float64
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accepted += 4
		fmt.Fprintf(w, "# TYPE seckill_gate_decisions_total counter\n"+
			"seckill_gate_decisions_total{sale=%q,outcome=\"accepted\"} %g\n"+
			"seckill_gate_decisions_total{sale=%q,outcome=\"sold_out\"} %g\n", sale, accepted, sale, accepted*2)
	}))
	defer gw.Close()
	t.Setenv("SECKILL_GATEWAY_METRICS", gw.URL+", http://127.0.0.1:1/metrics")
	t.Setenv("SECKILL_AMQP_MGMT_URL", "")
	f := &feed{c: c, src: cockpitSourcesFromEnv(prometheus.NewRegistry())}
	ctx := context.Background()
	if _, err := f.frame(ctx); err != nil {
		t.Fatal(err)
	}
	clock = start.Add(2 * time.Second)
	fr, err := f.frame(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sf *SaleFrame
	for i := range fr.Sales {
		if fr.Sales[i].ID == sale {
			sf = &fr.Sales[i]
		}
	}
	if sf == nil || fr.Gateways != "metrics" || len(fr.GatewaysDown) != 1 {
		t.Fatalf("frame %+v", fr)
	}
	if sf.AcceptedPerSec != 2 || sf.RefusedPerSec["sold_out"] != 4 || sf.StockDB != 10 || *sf.StockRedis != 10 {
		b, _ := json.Marshal(sf)
		t.Fatalf("sale frame %s: want 2 accepted/s and 4 sold_out/s", b)
	}
}
