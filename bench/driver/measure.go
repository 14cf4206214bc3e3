package driver

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/bench/load"
)

// Breakdown is what a run's window (the rush) cost beyond CPU time, the figures a tail is
// explained with: the Go runtime's allocations and collections of the gateway and the backend
// (their Prometheus endpoints' go_memstats_mallocs_total and go_gc_duration_seconds), and
// Redis's persistence work (INFO: fsyncs of the append-only file that had to wait, forks for
// rewrites). Counts are deltas over the window; -1 when a figure could not be read.
type Breakdown struct {
	// GatewayMallocsPerRequest is the gateway process's heap allocations per completed request
	// of the window (its relay's included: it is what a request costs the process).
	GatewayMallocsPerRequest float64 `json:"gateway_mallocs_per_request"`
	// GatewayGCs and BackendGCs are garbage collections in the window; the pause times are their
	// stop-the-world pauses added up, in milliseconds.
	GatewayGCs     float64 `json:"gateway_gcs"`
	GatewayGCPause float64 `json:"gateway_gc_pause_ms"`
	BackendGCs     float64 `json:"backend_gcs"`
	BackendGCPause float64 `json:"backend_gc_pause_ms"`
	// RedisAOFDelayedFsyncs counts the times Redis's once-a-second fsync of the append-only
	// file was still running when the next was due (INFO persistence aof_delayed_fsync);
	// RedisForks the forks it made (INFO stats total_forks: AOF rewrites, snapshots).
	RedisAOFDelayedFsyncs float64 `json:"redis_aof_delayed_fsyncs"`
	RedisForks            float64 `json:"redis_forks"`
}

// probeSnap is one reading of the counters a Breakdown is made of.
type probeSnap struct {
	gwMallocs, gwGCs, gwPause, beGCs, bePause, delayed, forks float64
}

// goRuntime are the samples read from a Go process's /metrics.
var goRuntime = []string{"go_memstats_mallocs_total", "go_gc_duration_seconds"}

func (d *Driver) breakdownSnap(ctx context.Context) probeSnap {
	var s probeSnap
	gw, be := map[string]float64{}, map[string]float64{}
	if d.Stack.Admin != "" {
		gw = scrape(ctx, d.Stack.Admin+"/metrics", goRuntime...)
	}
	if d.Stack.Backend != "" {
		be = scrape(ctx, d.Stack.Backend+"/metrics", goRuntime...)
	}
	s.gwMallocs, s.gwGCs, s.gwPause = sample(gw, "go_memstats_mallocs_total"), sample(gw, "go_gc_duration_seconds_count"), sample(gw, "go_gc_duration_seconds_sum")
	s.beGCs, s.bePause = sample(be, "go_gc_duration_seconds_count"), sample(be, "go_gc_duration_seconds_sum")
	info := redisInfo(ctx, d.Redis, "persistence", "stats")
	s.delayed, s.forks = sample(info, "aof_delayed_fsync"), sample(info, "total_forks")
	return s
}

func sample(m map[string]float64, k string) float64 {
	if v, ok := m[k]; ok {
		return v
	}
	return -1
}

// breakdownSince is the Breakdown of the window that began at before, over n requests.
func breakdownSince(before, after probeSnap, n int) *Breakdown {
	delta := func(a, b float64) float64 {
		if a < 0 || b < 0 {
			return -1
		}
		return a - b
	}
	b := &Breakdown{
		GatewayMallocsPerRequest: -1,
		GatewayGCs:               delta(after.gwGCs, before.gwGCs),
		GatewayGCPause:           delta(after.gwPause, before.gwPause),
		BackendGCs:               delta(after.beGCs, before.beGCs),
		BackendGCPause:           delta(after.bePause, before.bePause),
		RedisAOFDelayedFsyncs:    delta(after.delayed, before.delayed),
		RedisForks:               delta(after.forks, before.forks),
	}
	for _, p := range []*float64{&b.GatewayGCPause, &b.BackendGCPause} {
		if *p >= 0 {
			*p *= 1000 // seconds -> ms
		}
	}
	if m := delta(after.gwMallocs, before.gwMallocs); m >= 0 && n > 0 {
		b.GatewayMallocsPerRequest = m / float64(n)
	}
	return b
}

// scrape reads the unlabelled samples called names from a Prometheus text endpoint: a
// counter's or gauge's value under its name, a summary's or histogram's count and sum as
// name_count and name_sum. Missing samples are absent from the map.
func scrape(ctx context.Context, url string, names ...string) map[string]float64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return map[string]float64{}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return map[string]float64{}
	}
	defer resp.Body.Close()
	return parseSamples(resp.Body, names...)
}

// parseSamples is scrape's parser (see scrape).
func parseSamples(r io.Reader, names ...string) map[string]float64 {
	out := map[string]float64{}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return out
	}
	for _, name := range names {
		f, ok := families[name]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) > 0 {
				continue
			}
			switch {
			case m.Counter != nil:
				out[name] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[name] = m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[name] = m.GetUntyped().GetValue()
			case m.Summary != nil:
				out[name+"_count"], out[name+"_sum"] = float64(m.GetSummary().GetSampleCount()), m.GetSummary().GetSampleSum()
			case m.Histogram != nil:
				out[name+"_count"], out[name+"_sum"] = float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()
			}
			break
		}
	}
	return out
}

// redisInfo reads the numeric fields of some INFO sections (absent when Redis does not answer).
func redisInfo(ctx context.Context, rdb redis.UniversalClient, sections ...string) map[string]float64 {
	out := map[string]float64{}
	if rdb == nil {
		return out
	}
	info, err := rdb.Info(ctx, sections...).Result()
	if err != nil {
		return out
	}
	return parseInfo(info)
}

// parseInfo is redisInfo's parser: "key:value" lines whose value is a number.
func parseInfo(info string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[k] = f
		}
	}
	return out
}

// Window is what a contestant reads before its measured window and compares after it: CPU of
// every server process tree, Redis commandstats, and the Breakdown's counters.
type Window struct {
	cpu  CPUReading
	cmds map[string]cmdStat
	bd   probeSnap
}

// OpenWindow reads the counters a Window compares.
func OpenWindow(ctx context.Context, d *Driver) Window {
	return Window{cpu: d.ReadCPU(), cmds: commandStats(ctx, d.Redis), bd: d.breakdownSnap(ctx)}
}

// Close is the CPU per request, the Redis commands per request and the Breakdown from the
// window's start to now, over the rush's completed requests.
func (w Window) Close(ctx context.Context, d *Driver, rush *load.Result) (cpu map[string]float64, cmds []CommandCost, bd *Breakdown) {
	return d.PerRequest(w.cpu, rush), commandCosts(w.cmds, commandStats(ctx, d.Redis), rush.Completed),
		breakdownSince(w.bd, d.breakdownSnap(ctx), rush.Completed)
}
