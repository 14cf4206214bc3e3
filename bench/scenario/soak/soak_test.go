package soak

import (
	"strings"
	"testing"
	"time"
)

func soakSeries(n int, rss func(i int) int64, gr func(i int) int) []SoakSample {
	s := make([]SoakSample, n)
	for i := range s {
		s[i] = SoakSample{At: time.Duration(i) * 10 * time.Second, GatewayRSS: rss(i), GatewayGoroutines: gr(i),
			BackendRSS: 50 << 20, BackendGoroutines: 30}
	}
	return s
}

func TestSoakJudgesASteadyProcessFlat(t *testing.T) {
	// Warm-up growth in the first fifth, then a sawtooth (a GC cycle), as a healthy process.
	s := soakSeries(60, func(i int) int64 {
		if i < 6 {
			return int64(40+10*i) << 20
		}
		return int64(100+(i%4)*5) << 20
	}, func(i int) int { return 520 + (i%3)*20 })
	r := &SoakResult{Samples: s, Rounds: []SoakRound{{OK: true}}, Growth: soakGrowth(s)}
	if len(r.Growth) != 4 {
		t.Fatalf("growth series = %d, want 4", len(r.Growth))
	}
	if !r.OK() {
		t.Fatalf("a steady process was judged leaking: %+v", r.Growth)
	}
}

func TestSoakCatchesAMemoryLeakAndAGoroutineLeak(t *testing.T) {
	s := soakSeries(60, func(i int) int64 { return int64(100+4*i) << 20 }, func(i int) int { return 500 + 30*i })
	g := soakGrowth(s)
	bad := map[string]bool{}
	for _, x := range g {
		if !x.Flat {
			bad[x.Series] = true
		}
	}
	if !bad["gateway RSS (MiB)"] || !bad["gateway goroutines"] || bad["backend RSS (MiB)"] || bad["backend goroutines"] {
		t.Fatalf("verdicts wrong: %+v", g)
	}
	r := &SoakResult{Samples: s, Rounds: []SoakRound{{OK: true}}, Growth: g}
	if r.OK() {
		t.Fatal("a leaking soak passed")
	}
}

func TestSoakFailsWhenARoundFailedVerification(t *testing.T) {
	s := soakSeries(20, func(int) int64 { return 100 << 20 }, func(int) int { return 500 })
	r := &SoakResult{Samples: s, Rounds: []SoakRound{{OK: true}, {OK: false, Failed: "no oversell"}}, Growth: soakGrowth(s)}
	if r.OK() {
		t.Fatal("a soak with a failed sale passed")
	}
	var b strings.Builder
	SoakMarkdown(&b, r)
	if !strings.Contains(b.String(), "every invariant PASSed in 1 of 2 sales") {
		t.Fatalf("markdown does not report the failed sale:\n%s", b.String())
	}
}

func TestParseGaugeReadsTheUnlabelledSample(t *testing.T) {
	text := "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines_total_fake 3\ngo_goroutines 1234\ngo_threads 9\n"
	if v := parseGauge(strings.NewReader(text), "go_goroutines"); v != 1234 {
		t.Fatalf("go_goroutines = %v, want 1234", v)
	}
	if v := parseGauge(strings.NewReader(text), "absent"); v != 0 {
		t.Fatalf("absent = %v, want 0", v)
	}
}
