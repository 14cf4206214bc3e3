package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/bench"
	"github.com/seckilledge/seckill/bench/verify"
)

func fairRun(fastPlain, slowPlain, fastRoom, slowRoom int) *bench.FairnessResult {
	ok := &verify.Report{Checks: []verify.Check{{N: 1, Verdict: verify.Pass}}}
	sale := func(room bool, fast, slow int) *bench.FairnessSale {
		s := &bench.FairnessSale{Room: room, Stock: fast + slow, Verify: ok,
			Fast: bench.Population{Buyers: 500, Won: fast}, Slow: bench.Population{Buyers: 500, Won: slow}}
		if fast > 0 {
			s.Ratio = float64(slow) / float64(fast)
		}
		return s
	}
	return &bench.FairnessResult{Buyers: 500, RoomRate: 5, Without: sale(false, fastPlain, slowPlain), With: sale(true, fastRoom, slowRoom)}
}

func TestFairnessTableReportsMedianAndPooledRatios(t *testing.T) {
	var b bytes.Buffer
	fairnessMarkdown(&b, []*bench.FairnessResult{fairRun(100, 0, 50, 50), fairRun(90, 10, 60, 40), fairRun(100, 0, 40, 60)})
	out := b.String()
	for _, want := range []string{
		"without the room 0.00, with the room 1.00", // medians of 0, 0.11, 0 and 1, 0.67, 1.5
		"without the room slow 10 / fast 290 units (0.03), with the room slow 150 / fast 150 (1.00)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestRoomRefusesUnknownFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"room", "-no-such-flag"}, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
}
