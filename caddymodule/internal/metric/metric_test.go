package metric

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Every collector is named seckill_<subsystem>_<name>, and registering the same collectors
// into a config's registry twice (a reload) is not an error.
func TestCollectorsAreNamedBySubsystemAndRegisterTwice(t *testing.T) {
	s := Subsystem("unit")
	c := s.Counter("things_total", "Things.")
	cv := s.CounterVec("kinds_total", "Kinds.", "kind")
	g := s.Gauge("level", "Level.")
	gv := s.GaugeVec("levels", "Levels.", "sale")
	h := s.Histogram("seconds", "Seconds.", .1, 1)
	hv := s.HistogramVec("split_seconds", "Split.", []float64{.1, 1}, "result")
	c.Inc()
	cv.WithLabelValues("a").Inc()
	g.Set(1)
	gv.WithLabelValues("s1").Set(2)
	h.Observe(.5)
	hv.WithLabelValues("ok").Observe(.5)
	reg := prometheus.NewRegistry()
	Register(reg, c, cv, g, gv, h, hv)
	Register(reg, c, cv, g, gv, h, hv)
	Register(nil, c)
	want := []string{"seckill_unit_things_total", "seckill_unit_kinds_total", "seckill_unit_level",
		"seckill_unit_levels", "seckill_unit_seconds", "seckill_unit_split_seconds"}
	if n, err := testutil.GatherAndCount(reg, want...); err != nil || n != 6 {
		t.Fatalf("gathered %d series of %s: %v", n, strings.Join(want, ", "), err)
	}
}

// A collector whose name is taken by a different kind is a programming error: it panics.
func TestRegisterPanicsOnAConflict(t *testing.T) {
	reg := prometheus.NewRegistry()
	Register(reg, Subsystem("unit").Counter("x", "X."))
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for two collectors of one name")
		}
	}()
	Register(reg, Subsystem("unit").Gauge("x", "Another X."))
}
