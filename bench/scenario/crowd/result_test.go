package crowd

import (
	"strings"
	"testing"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/internal/invariants"
)

func TestPeerCPUNamesNginxTheGateway(t *testing.T) {
	m := map[string]float64{"gateway": 3, "nginx": 30, "redis": 15}
	peerCPU(m)
	if m["gateway"] != 30 || m["caddy"] != 3 || m["redis"] != 15 {
		t.Errorf("peer CPU %v", m)
	}
	if _, ok := m["nginx"]; ok {
		t.Error("nginx counted twice")
	}
	m = map[string]float64{"gateway": 3}
	peerCPU(m)
	if _, ok := m["gateway"]; ok {
		t.Errorf("without nginx's figure Caddy's idle time was left as the peer's gateway: %v", m)
	}
}

func TestJudgePeerCatchesOversellDoubleBuysAndLostBuyers(t *testing.T) {
	won := []invariants.Accepted{{UserID: "a", OrderID: "1"}, {UserID: "b", OrderID: "2"}}
	buyers := map[string]string{"a": "1", "b": "2"}
	verdicts := func(cs []invariants.Check) (s string) {
		for _, c := range cs {
			s += string(c.Verdict)[:1]
		}
		return s
	}
	if v := verdicts(judgePeer(2, 0, buyers, 2, won)); v != "PPP" {
		t.Errorf("a clean sale: %s", v)
	}
	if v := verdicts(judgePeer(2, -1, buyers, 2, won)); v[0] != 'F' {
		t.Errorf("stock below zero: %s", v)
	}
	if v := verdicts(judgePeer(3, 0, buyers, 2, won)); v[0] != 'F' {
		t.Errorf("three units gone, two 202s: %s", v)
	}
	twice := append(won, invariants.Accepted{UserID: "a", OrderID: "3"})
	if v := verdicts(judgePeer(3, 0, map[string]string{"a": "3", "b": "2"}, 3, twice)); v[1] != 'F' {
		t.Errorf("a user with two 202s: %s", v)
	}
	if v := verdicts(judgePeer(2, 0, map[string]string{"a": "1"}, 1, won)); v[2] != 'F' {
		t.Errorf("a 202 missing from Redis: %s", v)
	}
}

func TestSideBySideRatiosAndIssue34Targets(t *testing.T) {
	r := &Result{Contestants: []*Outcome{
		{Kind: Edge, CPU: map[string]float64{"gateway": 120, "redis": 30}, Breakdown: &driver.Breakdown{GatewayMallocsPerRequest: 50}},
		{Kind: Ceiling, CPU: map[string]float64{"gateway": 40}},
		{Kind: Peer, CPU: map[string]float64{"gateway": 35, "redis": 15, "caddy": 2}},
	}}
	s := r.SideBySide()
	if s.GatewayVsRespond != 3 || s.GatewayVsPeer != 120.0/35 || s.GatewayRedisVsPeer != 3 {
		t.Errorf("ratios %+v", s)
	}
	r.SLO = []*SLOResult{{Kind: Edge, Rate: 600, P99ms: 20}, {Kind: Ceiling, Rate: 1000, P99ms: 20}}
	met := map[string]bool{}
	for _, tg := range r.onePassTargets() {
		met[strings.SplitN(tg.Name, " (", 2)[0]] = tg.Met
	}
	want := map[string]bool{
		"gateway CPU per edge request / respond's":                      false,
		"gateway + Redis CPU per edge request / the nginx + lua gate's": false,
		"Redis CPU per edge request":                                    false,
		"gateway allocations per edge request":                          true,
		"capacity at p99 <= 20 ms, edge / respond":                      true,
	}
	for name, m := range want {
		if got, ok := met[name]; !ok || got != m {
			t.Errorf("target %q: met=%v (present %v), want %v; all %v", name, got, ok, m, met)
		}
	}
}

func TestAFailedInvariantInAnSLOProbeFailsTheRun(t *testing.T) {
	r := &Result{SLO: []*SLOResult{{Kind: Edge, Probes: []SLOProbe{{Rate: 100, Pass: true, Outcome: &Outcome{}}}}}}
	if !r.OK() {
		t.Fatal("a clean probe failed the run")
	}
	r.SLO[0].Probes = append(r.SLO[0].Probes, SLOProbe{Rate: 200, Outcome: &Outcome{Checks: []invariants.Check{{Verdict: invariants.Fail}}}})
	if r.OK() {
		t.Error("a probe with a FAILed invariant left the run OK")
	}
}
