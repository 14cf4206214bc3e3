package bench

import (
	"strings"
	"testing"

	"github.com/seckilledge/seckill/bench/verify"
)

const metricsText = `# HELP go_gc_duration_seconds A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0"} 2.1e-05
go_gc_duration_seconds{quantile="1"} 0.000912
go_gc_duration_seconds_sum 0.0125
go_gc_duration_seconds_count 42
# HELP go_memstats_mallocs_total Total number of heap objects allocated.
# TYPE go_memstats_mallocs_total counter
go_memstats_mallocs_total 1.234567e+06
# HELP caddy_http_requests_total x
# TYPE caddy_http_requests_total counter
caddy_http_requests_total{server="srv0"} 99
`

func TestParseSamplesReadsCountersAndSummaries(t *testing.T) {
	m := parseSamples(strings.NewReader(metricsText), "go_memstats_mallocs_total", "go_gc_duration_seconds", "caddy_http_requests_total", "absent")
	if m["go_memstats_mallocs_total"] != 1234567 || m["go_gc_duration_seconds_count"] != 42 || m["go_gc_duration_seconds_sum"] != 0.0125 {
		t.Errorf("samples %v", m)
	}
	if _, ok := m["caddy_http_requests_total"]; ok {
		t.Error("a labelled sample was read as the unlabelled one")
	}
	if _, ok := m["absent"]; ok {
		t.Error("an absent metric has a value")
	}
	if m := parseSamples(strings.NewReader("not prometheus {{{"), "x"); len(m) != 0 {
		t.Errorf("garbage gave %v", m)
	}
}

func TestParseInfoReadsNumbersOnly(t *testing.T) {
	m := parseInfo("# Persistence\r\naof_enabled:1\r\naof_delayed_fsync:3\r\naof_last_bgrewrite_status:ok\r\n# Stats\r\ntotal_forks:2\r\n")
	if m["aof_delayed_fsync"] != 3 || m["total_forks"] != 2 || m["aof_enabled"] != 1 {
		t.Errorf("info %v", m)
	}
	if _, ok := m["aof_last_bgrewrite_status"]; ok {
		t.Error("a word was read as a number")
	}
}

func TestBreakdownIsADeltaPerRequestAndUnknownStaysUnknown(t *testing.T) {
	before := probeSnap{gwMallocs: 1000, gwGCs: 10, gwPause: 0.01, beGCs: -1, bePause: -1, delayed: 1, forks: 0}
	after := probeSnap{gwMallocs: 21000, gwGCs: 13, gwPause: 0.013, beGCs: 5, bePause: 0.5, delayed: 3, forks: 1}
	b := breakdownSince(before, after, 100)
	if b.GatewayMallocsPerRequest != 200 || b.GatewayGCs != 3 || b.RedisAOFDelayedFsyncs != 2 || b.RedisForks != 1 {
		t.Errorf("breakdown %+v", b)
	}
	if d := b.GatewayGCPause - 3; d > 1e-9 || d < -1e-9 {
		t.Errorf("gateway GC pause %.6f ms, want 3", b.GatewayGCPause)
	}
	if b.BackendGCs != -1 || b.BackendGCPause != -1 {
		t.Errorf("a figure missing before the window must stay unknown (-1): %+v", b)
	}
}

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
	won := []verify.Accepted{{UserID: "a", OrderID: "1"}, {UserID: "b", OrderID: "2"}}
	buyers := map[string]string{"a": "1", "b": "2"}
	verdicts := func(cs []verify.Check) (s string) {
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
	twice := append(won, verify.Accepted{UserID: "a", OrderID: "3"})
	if v := verdicts(judgePeer(3, 0, map[string]string{"a": "3", "b": "2"}, 3, twice)); v[1] != 'F' {
		t.Errorf("a user with two 202s: %s", v)
	}
	if v := verdicts(judgePeer(2, 0, map[string]string{"a": "1"}, 1, won)); v[2] != 'F' {
		t.Errorf("a 202 missing from Redis: %s", v)
	}
}

func TestSideBySideRatiosAndIssue34Targets(t *testing.T) {
	r := &Result{Contestants: []*Outcome{
		{Kind: Edge, CPU: map[string]float64{"gateway": 120, "redis": 30}, Breakdown: &Breakdown{GatewayMallocsPerRequest: 50}},
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
	r.SLO[0].Probes = append(r.SLO[0].Probes, SLOProbe{Rate: 200, Outcome: &Outcome{Checks: []verify.Check{{Verdict: verify.Fail}}}})
	if r.OK() {
		t.Error("a probe with a FAILed invariant left the run OK")
	}
}
