package crowd

import (
	"fmt"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
)

// Target is one goal of the benchmark, measured in the same run.
type Target struct {
	Name string  `json:"name"`
	Want string  `json:"want"`
	Got  float64 `json:"got"`
	Unit string  `json:"unit"`
	Met  bool    `json:"met"`
}

// Result is everything one seckill-bench invocation measured.
type Result struct {
	Date    time.Time      `json:"date"`
	Command string         `json:"command"`
	Machine driver.Machine `json:"machine"`
	Crowd   Crowd          `json:"crowd"`
	Stock   int            `json:"stock"`
	Conns   int            `json:"connections"`
	Rate    float64        `json:"open_rate"`
	// Pinned is set when the load generator ran on its own CPU, apart from the servers (-pin).
	Pinned bool `json:"pinned,omitempty"`
	// Contestants of the comparison (closed model, same crowd, same client).
	Contestants []*Outcome `json:"contestants"`
	// Open are the open-model runs at Rate (the full edge, and the ceiling when asked for).
	Open []*Outcome `json:"open,omitempty"`
	// SLO is the capacity under a latency objective of each contestant searched (-only slo):
	// the highest open-model rate whose p99 stayed within it.
	SLO []*SLOResult `json:"slo,omitempty"`
	// PeakRSS of the started processes, KiB (VmHWM over the whole invocation).
	PeakRSS map[string]int `json:"peak_rss_kib,omitempty"`
	Targets []Target       `json:"targets,omitempty"`
	Notes   []string       `json:"notes,omitempty"`
}

// Find returns the contestant of a kind.
func (r *Result) Find(kind string) *Outcome {
	for _, c := range r.Contestants {
		if c.Kind == kind {
			return c
		}
	}
	return nil
}

// OK reports whether every verified run passed every check. Targets are reported, not
// enforced: speed depends on the machine; correctness does not.
func (r *Result) OK() bool {
	for _, c := range r.Contestants {
		if !c.OK() {
			return false
		}
	}
	for _, o := range r.Open {
		if !o.OK() {
			return false
		}
	}
	for _, s := range r.SLO {
		for _, p := range s.Probes {
			if p.Outcome != nil && !p.Outcome.OK() {
				return false
			}
		}
	}
	return true
}

// All is every run: the comparison, then the open-model runs.
func (r *Result) All() []*Outcome {
	return append(append([]*Outcome{}, r.Contestants...), r.Open...)
}

func (r *Result) findOpen(kind string) *Outcome {
	for _, c := range r.Open {
		if c.Kind == kind {
			return c
		}
	}
	return nil
}

// Evaluate fills Targets from what was measured (goals of the issue that set up the benchmark).
func (r *Result) Evaluate() {
	r.Targets = nil
	edge, opt, ceil := r.Find(Edge), r.Find(Optimistic), r.Find(Ceiling)
	if edge != nil && opt != nil && opt.Rush.Throughput > 0 {
		x := edge.Rush.Throughput / opt.Rush.Throughput
		r.Targets = append(r.Targets, Target{Name: "full edge vs optimistic lock, throughput", Want: ">= 30x", Got: x, Unit: "x", Met: x >= 30})
	}
	if edge != nil && ceil != nil && ceil.Rush.Throughput > 0 {
		x := edge.Rush.Throughput / ceil.Rush.Throughput
		r.Targets = append(r.Targets, Target{Name: "full edge vs plain respond, throughput", Want: ">= 0.4x", Got: x, Unit: "x", Met: x >= 0.4})
	}
	if o := r.findOpen(Edge); o != nil {
		p := o.Latency.P99
		r.Targets = append(r.Targets, Target{Name: fmt.Sprintf("full edge p99 at %.0f purchases/s (open)", r.Rate), Want: "<= 10 ms", Got: p, Unit: "ms", Met: p <= 10 && o.Rush.Completed > 0})
	}
	r.Targets = append(r.Targets, r.onePassTargets()...)
	// The drain, per verified run: the slowest winner from its 202 to its row.
	for _, o := range r.All() {
		if o == nil || o.Drain == nil || o.Drain.Accepted == 0 {
			continue
		}
		worst := o.Drain.WorstMs()
		if o.DrainAfterRush {
			worst = o.Drain.MaxMs // the polls began after the rush: their times say nothing
		}
		if !o.Drain.Settled {
			worst = 1e9 // never: some winner has no row (JSON has no infinity)
		}
		r.Targets = append(r.Targets, Target{Name: fmt.Sprintf("drain of %s: slowest of %d winners, 202 to row in Postgres", o.Name, o.Drain.Accepted),
			Want: "< 2000 ms", Got: worst, Unit: "ms", Met: worst < 2000})
	}
}

// SideBySide are the closed model's ratios of the comparison (docs/bench.md), from the same run: the edge's gateway
// CPU per request against `respond`'s and the peer's, and the edge's gateway + Redis against
// the peer's (0 when a contestant is missing).
type SideBySide struct {
	GatewayVsRespond, GatewayVsPeer, GatewayRedisVsPeer float64
	EdgeRedis                                           float64 // µs per edge request
}

// SideBySide computes the ratios (see the type).
func (r *Result) SideBySide() SideBySide {
	var s SideBySide
	edge, ceil, peer := r.Find(Edge), r.Find(Ceiling), r.Find(Peer)
	if edge == nil {
		return s
	}
	s.EdgeRedis = edge.CPU["redis"]
	div := func(a, b float64) float64 {
		if a <= 0 || b <= 0 {
			return 0
		}
		return a / b
	}
	if ceil != nil {
		s.GatewayVsRespond = div(edge.CPU["gateway"], ceil.CPU["gateway"])
	}
	if peer != nil {
		s.GatewayVsPeer = div(edge.CPU["gateway"], peer.CPU["gateway"])
		s.GatewayRedisVsPeer = div(edge.CPU["gateway"]+edge.CPU["redis"], peer.CPU["gateway"]+peer.CPU["redis"])
	}
	return s
}

// RespondOpenFactor is Caddy's own open/closed factor: the gateway CPU per request of
// `respond` in the open model (ceiling-open) over the closed model's (ceiling), from the same
// run; 0 when either did not run.
func (r *Result) RespondOpenFactor() float64 {
	closed := r.Find(Ceiling)
	for _, o := range r.Open {
		if o.Kind == Ceiling && o.CPU["gateway"] > 0 && closed != nil && closed.CPU["gateway"] > 0 {
			return o.CPU["gateway"] / closed.CPU["gateway"]
		}
	}
	return 0
}

// SLOOf is the capacity search of a kind (nil when it did not run).
func (r *Result) SLOOf(kind string) *SLOResult {
	for _, s := range r.SLO {
		if s.Kind == kind {
			return s
		}
	}
	return nil
}

// onePassTargets are the comparison's targets (docs/bench.md) that one run can measure.
func (r *Result) onePassTargets() []Target {
	var ts []Target
	s := r.SideBySide()
	if s.GatewayVsRespond > 0 {
		ts = append(ts, Target{Name: "gateway CPU per edge request / respond's (closed)", Want: "<= 1.6x", Got: s.GatewayVsRespond, Unit: "x", Met: s.GatewayVsRespond <= 1.6})
	}
	if s.GatewayRedisVsPeer > 0 {
		ts = append(ts, Target{Name: "gateway + Redis CPU per edge request / the nginx + lua gate's (closed)", Want: "<= 1.3x", Got: s.GatewayRedisVsPeer, Unit: "x", Met: s.GatewayRedisVsPeer <= 1.3})
	}
	if edge := r.Find(Edge); edge != nil && s.EdgeRedis > 0 {
		ts = append(ts, Target{Name: "Redis CPU per edge request (closed)", Want: "<= 20 µs", Got: s.EdgeRedis, Unit: "µs", Met: s.EdgeRedis <= 20})
		if b := edge.Breakdown; b != nil && b.GatewayMallocsPerRequest >= 0 {
			ts = append(ts, Target{Name: "gateway allocations per edge request (closed; /metrics go_memstats_mallocs_total)", Want: "<= 60", Got: b.GatewayMallocsPerRequest, Unit: "", Met: b.GatewayMallocsPerRequest <= 60})
		}
	}
	for _, o := range r.Open {
		if o.Kind != Edge || o.CPU == nil {
			continue
		}
		all := 0.0
		for _, v := range o.CPU {
			all += v
		}
		ts = append(ts, Target{Name: fmt.Sprintf("all servers' CPU per request, %s", o.Name), Want: "<= 400 µs", Got: all, Unit: "µs", Met: all <= 400})
		if closed := r.Find(Edge); closed != nil && closed.CPU["gateway"] > 0 {
			x := o.CPU["gateway"] / closed.CPU["gateway"]
			// The target is 2x, or respond's own open/closed factor when Caddy alone pays more
			// (the same run's ceiling-open and ceiling).
			want, limit := "<= 2x", 2.0
			if f := r.RespondOpenFactor(); f > 2 {
				want, limit = fmt.Sprintf("<= respond's own %.2fx", f), f
			}
			ts = append(ts, Target{Name: fmt.Sprintf("gateway CPU per request, %s / closed model", o.Name), Want: want, Got: x, Unit: "x", Met: x <= limit})
		}
	}
	if e, c := r.SLOOf(Edge), r.SLOOf(Ceiling); e != nil && c != nil && c.Rate > 0 {
		x := e.Rate / c.Rate
		ts = append(ts, Target{Name: fmt.Sprintf("capacity at p99 <= %.0f ms, edge / respond (%.0f / %.0f per s)", e.P99ms, e.Rate, c.Rate), Want: ">= 0.5x", Got: x, Unit: "x", Met: x >= 0.5})
	}
	if e, p := r.SLOOf(Edge), r.SLOOf(Peer); e != nil && p != nil && p.Rate > 0 {
		x := e.Rate / p.Rate
		ts = append(ts, Target{Name: fmt.Sprintf("capacity at p99 <= %.0f ms, edge / the nginx + lua gate's (%.0f / %.0f per s)", e.P99ms, e.Rate, p.Rate), Want: "(reported)", Got: x, Unit: "x", Met: true})
	}
	return ts
}
