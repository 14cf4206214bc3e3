package crowd

import (
	"testing"
	"time"

	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/internal/invariants"
)

func TestVariantChecksFailWhenASellOutStopsTheOtherVariants(t *testing.T) {
	t0 := time.Now()
	mk := func(first map[string]time.Time, after map[string]int, outcomes map[string]int) *VariantOutcome {
		return &VariantOutcome{Outcome: &Outcome{Rush: &load.Result{Outcomes: outcomes}}, FirstSoldOut: first, AcceptedAfter: after}
	}
	verdict := func(o *VariantOutcome) invariants.Verdict { return variantChecks(o)[1].Verdict }
	good := mk(map[string]time.Time{"v0": t0, "v1": t0.Add(time.Second)}, map[string]int{"v0": 50, "v1": 0}, map[string]int{"accepted": 10})
	if v := verdict(good); v != invariants.Pass {
		t.Fatalf("the last variant to sell out had nothing after it: %s, want PASS", v)
	}
	stopped := mk(map[string]time.Time{"v0": t0, "v1": t0.Add(time.Second)}, map[string]int{"v0": 0, "v1": 0}, nil)
	if v := verdict(stopped); v != invariants.Fail {
		t.Fatalf("nothing sold after the first sell-out: %s, want FAIL", v)
	}
	if v := verdict(mk(map[string]time.Time{}, map[string]int{}, nil)); v != invariants.Fail {
		t.Fatalf("no variant sold out: %s, want FAIL (the crowd tested nothing)", v)
	}
	if c := variantChecks(mk(nil, nil, map[string]int{"http_500": 1}))[0]; c.Verdict != invariants.Fail {
		t.Fatalf("a 500 answer: %s, want FAIL", c.Verdict)
	}
}
