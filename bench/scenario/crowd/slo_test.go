package crowd

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/internal/invariants"
)

// fakeServer passes every rate up to its capacity and fails above it.
func fakeServer(capacity float64, probed *[]float64) func(float64) (SLOProbe, error) {
	return func(rate float64) (SLOProbe, error) {
		*probed = append(*probed, rate)
		return SLOProbe{Pass: rate <= capacity}, nil
	}
}

func TestTheSLOSearchBracketsTheCapacityWithinTheTolerance(t *testing.T) {
	for _, capacity := range []float64{150, 730, 1000, 2600, 5100, 13000} {
		o := DefaultSLO()
		o.MaxProbes = 20
		var probed []float64
		res, err := SearchSLO(o, fakeServer(capacity, &probed))
		if err != nil {
			t.Fatal(err)
		}
		if res.Rate > capacity || res.Rate <= 0 {
			t.Errorf("capacity %.0f: found %.0f (probes %v), want a passing rate", capacity, res.Rate, probed)
		}
		if res.Bound <= capacity || res.Bound/res.Rate > 1+o.Tolerance+0.02 {
			t.Errorf("capacity %.0f: bracket [%.0f, %.0f] is not within %.0f%% around it (probes %v)", capacity, res.Rate, res.Bound, o.Tolerance*100, probed)
		}
		if p := res.At(); p == nil || !p.Pass {
			t.Errorf("capacity %.0f: no passing probe at the rate found", capacity)
		}
		if len(probed) > 10 {
			t.Errorf("capacity %.0f: %d probes (%v); a doubling and a bisection need fewer", capacity, len(probed), probed)
		}
	}
}

func TestTheSLOSearchStopsAtItsLimitsAndItsProbeBudget(t *testing.T) {
	o := DefaultSLO()
	var probed []float64
	res, _ := SearchSLO(o, fakeServer(1e9, &probed))
	if res.Rate != o.Max || !res.Capped || res.Bound != 0 {
		t.Errorf("a server that never fails: %+v, want the Max %.0f, capped", res, o.Max)
	}
	probed = nil
	res, _ = SearchSLO(o, fakeServer(1, &probed))
	if res.Rate != 0 || probed[len(probed)-1] != o.Min {
		t.Errorf("a server that always fails: rate %.0f after %v, want 0 after probing the Min %.0f", res.Rate, probed, o.Min)
	}
	o.MaxProbes = 3
	probed = nil
	res, _ = SearchSLO(o, fakeServer(5000, &probed))
	if len(probed) != 3 || res.Rate != 4000 {
		t.Errorf("3 probes of a 5000/s server: %v, rate %.0f; want 1000, 2000, 4000", probed, res.Rate)
	}
	boom := errors.New("invariant")
	res, err := SearchSLO(DefaultSLO(), func(float64) (SLOProbe, error) { return SLOProbe{Pass: true}, boom })
	if !errors.Is(err, boom) || len(res.Probes) != 1 {
		t.Errorf("a probe's error must end the search: %v after %d probes", err, len(res.Probes))
	}
	if _, err := SearchSLO(SLOOptions{}, nil); err == nil {
		t.Error("a search without rates was accepted")
	}
}

func TestRoundRateKeepsTwoSignificantDigits(t *testing.T) {
	for in, want := range map[float64]float64{1414.2: 1400, 2828: 2800, 96.4: 96, 15490: 15000, 155: 160} {
		if got := roundRate(in); got != want {
			t.Errorf("roundRate(%v) = %v, want %v", in, got, want)
		}
	}
}

func TestJudgeFailsATailAnErrorShareOrAFailedInvariant(t *testing.T) {
	o := DefaultSLO()
	ok := &Outcome{Rush: &load.Result{Completed: 10000, Outcomes: map[string]int{"accepted": 9995, "unavailable": 5}}, Latency: load.Percentiles{P99: 19.9}}
	if pass, why := o.Judge(ok); !pass {
		t.Errorf("p99 19.9 ms and 0.05%% errors failed: %s", why)
	}
	slow := *ok
	slow.Latency.P99 = 20.5
	if pass, _ := o.Judge(&slow); pass {
		t.Error("p99 20.5 ms passed a 20 ms objective")
	}
	shed := *ok
	shed.Rush = &load.Result{Completed: 1000, Outcomes: map[string]int{"accepted": 900, "http_502": 100}}
	if pass, _ := o.Judge(&shed); pass {
		t.Error("10% 5xx passed")
	}
	wrong := *ok
	wrong.Checks = []invariants.Check{{Verdict: invariants.Fail}}
	if pass, _ := o.Judge(&wrong); pass {
		t.Error("a failed invariant passed")
	}
	if pass, _ := o.Judge(&Outcome{Rush: &load.Result{}}); pass {
		t.Error("an empty run passed")
	}
}

func TestCrowdForKeepsTheMixAndCoversTheProbe(t *testing.T) {
	base := DefaultCrowd()
	for _, n := range []int{500, 3000, 30000, 100000} {
		c := CrowdFor(base, n)
		clicks := len(c.Rush(c.Cast("x-")))
		if clicks < n {
			t.Errorf("CrowdFor(%d): %d clicks", n, clicks)
		}
		if clicks > 2*n+100 {
			t.Errorf("CrowdFor(%d): %d clicks, far more than asked (a longer token phase for nothing)", n, clicks)
		}
		if c.Late != 0 || c.Bots == 0 || c.Replays == 0 {
			t.Errorf("CrowdFor(%d) = %+v: want bots and replays kept, no late arrivals", n, c)
		}
		if share := float64(c.Bots*c.BotHits) / float64(clicks); math.Abs(share-0.11) > 0.06 {
			t.Errorf("CrowdFor(%d): bots are %.0f%% of the clicks, the default crowd's ~11%%", n, share*100)
		}
	}
	p := SLOProbeOptions(Options{Crowd: base}, 2000, 3000, 5*time.Second)
	if !p.Model.Open() || p.Model.Rate != 2000 || p.Stock != p.Crowd.Users || !p.DrainAfterRush {
		t.Errorf("probe options %+v: want the open model at 2000/s, stock for every user, no poll during the rush", p)
	}
}
