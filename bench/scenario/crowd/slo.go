package crowd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
)

// SLOOptions say how to search for a contestant's capacity under a latency objective: the
// highest open-model arrival rate at which the p99 stays within P99 (20 ms).
type SLOOptions struct {
	P99 time.Duration
	// Start is the first rate probed; the search doubles it while probes pass and halves it
	// while they fail, down to Min and up to Max, then bisects (geometrically) between the
	// highest pass and the lowest fail until they are within Tolerance of each other (0.1:
	// 10 %) or MaxProbes have run.
	Start, Min, Max float64
	Tolerance       float64
	MaxProbes       int
	// MaxErrorShare is the share of answers that may be errors (transport errors, 5xx, 503
	// unavailable) for a probe to pass: a server that sheds load fast is not within the SLO
	// (default 0.001).
	MaxErrorShare float64
}

// DefaultSLO is the search docs/bench.md reports: the highest rate with p99 <= 20 ms.
func DefaultSLO() SLOOptions {
	return SLOOptions{P99: 20 * time.Millisecond, Start: 1000, Min: 100, Max: 20000, Tolerance: 0.1, MaxProbes: 8, MaxErrorShare: 0.001}
}

// SLOProbe is one rate tried.
type SLOProbe struct {
	Rate  float64 `json:"rate"`
	P99ms float64 `json:"p99_ms"`
	Pass  bool    `json:"pass"`
	// Why says what failed ("" when it passed).
	Why     string   `json:"why,omitempty"`
	Outcome *Outcome `json:"outcome,omitempty"`
}

// SLOResult is a contestant's capacity under the objective.
type SLOResult struct {
	Kind   string  `json:"kind"`
	Name   string  `json:"name"`
	P99ms  float64 `json:"slo_p99_ms"`
	Rate   float64 `json:"rate"` // the highest rate that passed (0: none did, down to Min)
	Capped bool    `json:"capped,omitempty"`
	// Bound is the lowest rate that failed (0: none failed, up to Max).
	Bound  float64    `json:"bound"`
	Probes []SLOProbe `json:"probes"`
}

// At is the passing probe at Rate (nil when none passed).
func (r *SLOResult) At() *SLOProbe {
	for i := range r.Probes {
		if r.Probes[i].Pass && r.Probes[i].Rate == r.Rate {
			return &r.Probes[i]
		}
	}
	return nil
}

// Judge says whether one open-model run met the objective, and why not.
func (o SLOOptions) Judge(out *Outcome) (bool, string) {
	if out == nil || out.Rush == nil || out.Rush.Completed == 0 {
		return false, "no request completed"
	}
	var why []string
	if p := out.Latency.P99; p > float64(o.P99.Microseconds())/1000 {
		why = append(why, fmt.Sprintf("p99 %.1f ms > %v", p, o.P99))
	}
	errs := 0
	for k, n := range out.Rush.Outcomes {
		if k == "error" || k == "unavailable" || strings.HasPrefix(k, "http_5") {
			errs += n
		}
	}
	if share := float64(errs) / float64(out.Rush.Completed); share > o.MaxErrorShare {
		why = append(why, fmt.Sprintf("%.2f%% errors", share*100))
	}
	if !out.OK() {
		why = append(why, "an invariant FAILed")
	}
	return len(why) == 0, strings.Join(why, ", ")
}

// SearchSLO runs the search with measure, which runs one probe at a rate and judges it; an
// error of measure (a probe that could not run) ends the search with it.
func SearchSLO(o SLOOptions, measure func(rate float64) (SLOProbe, error)) (*SLOResult, error) {
	if o.Start <= 0 || o.Min <= 0 || o.Max < o.Min || o.MaxProbes <= 0 {
		return nil, errors.New("slo search: Start, Min, Max and MaxProbes must be positive, Max >= Min")
	}
	res := &SLOResult{P99ms: float64(o.P99.Microseconds()) / 1000}
	lo, hi := 0.0, math.Inf(1) // highest pass, lowest fail
	rate := math.Min(math.Max(o.Start, o.Min), o.Max)
	for len(res.Probes) < o.MaxProbes {
		p, err := measure(rate)
		p.Rate = rate
		res.Probes = append(res.Probes, p)
		if err != nil {
			return res, err
		}
		if p.Pass {
			lo = rate
		} else {
			hi = rate
		}
		var next float64
		switch {
		case math.IsInf(hi, 1): // nothing failed yet: go up
			if lo >= o.Max {
				res.Capped = true
				return finish(res, lo, hi), nil
			}
			next = math.Min(lo*2, o.Max)
		case lo == 0: // nothing passed yet: go down
			if hi <= o.Min {
				return finish(res, lo, hi), nil
			}
			next = math.Max(hi/2, o.Min)
		default:
			if hi/lo <= 1+o.Tolerance {
				return finish(res, lo, hi), nil
			}
			next = math.Sqrt(lo * hi)
		}
		rate = roundRate(next)
		if rate <= lo || rate >= hi { // rounding met a bound: as close as the grid goes
			return finish(res, lo, hi), nil
		}
	}
	return finish(res, lo, hi), nil
}

func finish(r *SLOResult, lo, hi float64) *SLOResult {
	r.Rate = lo
	if !math.IsInf(hi, 1) {
		r.Bound = hi
	}
	return r
}

// roundRate keeps rates on a readable grid: two significant digits above 100/s.
func roundRate(r float64) float64 {
	if r < 100 {
		return math.Round(r)
	}
	step := math.Pow(10, math.Floor(math.Log10(r))-1)
	return math.Round(r/step) * step
}

// CrowdFor scales a crowd (its users, bots, replays and forgeries alike, so the mix stays the
// closed model's) to at least n clicks, without late arrivals: an open-model probe of n
// requests then never runs out of clicks before its duration.
func CrowdFor(c Crowd, n int) Crowd {
	// A repeater clicks 2 to 5 times: 2.5 more clicks on average.
	base := float64(c.Users)*(1+c.Repeaters*2.5) + float64(c.Bots*c.BotHits+c.Replays+c.Forged)
	if base <= 0 {
		return c
	}
	f := 1.1 * float64(n) / base
	scale := func(v int) int {
		if v == 0 {
			return 0
		}
		return max(1, int(math.Ceil(float64(v)*f)))
	}
	botClicks := scale(c.Bots * c.BotHits)
	c.Users, c.Bots, c.Replays, c.Forged, c.Late = max(scale(c.Users), 2), scale(c.Bots), scale(c.Replays), scale(c.Forged), 0
	if c.Bots > 0 {
		c.BotHits = max(1, botClicks/c.Bots) // a small probe has fewer bots, each as busy
	}
	return c
}

// SLOProbeOptions turn the closed model's options into one probe's: the open model at rate
// with conns in flight at most, the crowd scaled to the probe, a stock every user can buy
// (the purchase path is measured, not the sold-out answer), and the drain watcher kept out
// of the rush.
func SLOProbeOptions(o Options, rate float64, conns int, d time.Duration) Options {
	p := o
	p.Model = load.Model{Rate: rate, Connections: conns}
	p.Duration = d
	p.Crowd = CrowdFor(o.Crowd, int(rate*d.Seconds()))
	p.Stock = p.Crowd.Users
	p.DrainAfterRush = true
	p.Label = fmt.Sprintf("slo probe %.0f/s", rate)
	return p
}

// RunSLO searches the capacity of one contestant (Edge, Ceiling, or Peer: the nginx + Lua gate
// at peer) under the objective, each probe an open-model run of probe length.
func RunSLO(ctx context.Context, d *driver.Driver, kind string, peer PeerTarget, o Options, s SLOOptions, conns int, probe time.Duration, logf func(string, ...any)) (*SLOResult, error) {
	run := map[string]func(context.Context, *driver.Driver, Options) (*Outcome, error){Edge: RunEdge, Ceiling: RunCeiling,
		Peer: func(ctx context.Context, d *driver.Driver, o Options) (*Outcome, error) {
			return RunPeer(ctx, d, peer, o)
		}}[kind]
	if run == nil || (kind == Peer && peer.URL == "") {
		return nil, fmt.Errorf("slo: no search for %q (edge, ceiling, or peer with the peer running)", kind)
	}
	res, err := SearchSLO(s, func(rate float64) (SLOProbe, error) {
		if ctx.Err() != nil {
			return SLOProbe{}, ctx.Err()
		}
		out, err := run(ctx, d, SLOProbeOptions(o, rate, conns, probe))
		if err != nil {
			return SLOProbe{Outcome: out}, err
		}
		// A probe whose invariants FAILed fails (and makes the whole run FAIL: Result.OK), but
		// the search goes on below it, so one overloaded probe does not lose the other search.
		pass, why := s.Judge(out)
		if logf != nil {
			logf("slo %-7s %6.0f/s  p99 %7.2f ms  %s", kind, rate, out.Latency.P99, map[bool]string{true: "pass", false: "FAIL: " + why}[pass])
		}
		return SLOProbe{P99ms: out.Latency.P99, Pass: pass, Why: why, Outcome: out}, nil
	})
	if res != nil {
		res.Kind = kind
		res.Name = map[string]string{Edge: "full edge", Ceiling: "Caddy respond", Peer: "nginx + lua gate (peer)"}[kind]
	}
	return res, err
}
