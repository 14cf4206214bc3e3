package driver

import (
	"strings"
	"testing"
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
