package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// docker-compose.yml gives the cockpit the gateways' counters through Prometheus's /federate,
// which serves every series untyped (with a timestamp): they count as the gateway's own do.
func TestTheCockpitReadsGateCountsFederatedByPrometheus(t *testing.T) {
	const federated = `# TYPE seckill_gate_decisions_total untyped
seckill_gate_decisions_total{instance="gateway-1",job="gateway",outcome="accepted",sale="spring"} 7 1764590000000
seckill_gate_decisions_total{instance="gateway-2",job="gateway",outcome="accepted",sale="spring"} 5 1764590000000
seckill_gate_decisions_total{instance="gateway-1",job="gateway",outcome="sold_out",sale="spring"} 3 1764590000000
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(federated))
	}))
	defer srv.Close()
	c := &cockpitSources{gateways: []string{srv.URL + "/federate?match%5B%5D=seckill_gate_decisions_total"},
		client: &http.Client{Timeout: 2 * time.Second}}
	counts, down, ok := c.gateCounts(context.Background())
	if !ok || len(down) != 0 {
		t.Fatalf("ok %v, down %v", ok, down)
	}
	if got := counts["spring"]; got["accepted"] != 12 || got["sold_out"] != 3 {
		t.Fatalf("counts %v, want accepted 12 (7 + 5 over two gateways) and sold_out 3", got)
	}
}
