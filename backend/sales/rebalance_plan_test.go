package sales

import (
	"testing"

	"github.com/seckilledge/seckill/contract"
)

func TestPlanRebalanceEvensOutAndMovesAsLittleAsPossible(t *testing.T) {
	t.Parallel()
	cases := []struct {
		stocks []int64
		hungry []bool
		moved  int
		after  []int64
	}{
		{[]int64{0, 0, 10, 10}, nil, 10, []int64{5, 5, 5, 5}},
		{[]int64{3, 3, 2, 2}, nil, 0, []int64{3, 3, 2, 2}},
		{[]int64{0, 1, 0, 0}, nil, 0, []int64{0, 1, 0, 0}},                        // fewer units than shards: stay put
		{[]int64{0, 1, 0, 0}, []bool{false, false, true}, 1, []int64{0, 0, 1, 0}}, // unless a shard is hungry
		{[]int64{0, 0, 0, 3}, nil, 2, []int64{1, 1, 0, 1}},
		{[]int64{0, 5, 5, 5}, []bool{true}, 4, []int64{4, 4, 4, 3}},
		{[]int64{-2, 0, 7}, nil, 4, []int64{2, 2, 3}}, // a negative stock counts as empty
		{[]int64{0, 0}, []bool{true, true}, 0, []int64{0, 0}},
	}
	for _, c := range cases {
		moves := PlanRebalance(c.stocks, c.hungry)
		after := make([]int64, len(c.stocks))
		for i, n := range c.stocks {
			after[i] = max(n, 0) // the plan counts a negative stock as empty
		}
		moved := 0
		for _, m := range moves {
			if m.Units <= 0 || m.From == m.To {
				t.Errorf("%v: bad move %+v", c.stocks, m)
			}
			after[m.From] -= int64(m.Units)
			after[m.To] += int64(m.Units)
			moved += m.Units
		}
		if moved != c.moved {
			t.Errorf("%v: moved %d units, want %d (%+v)", c.stocks, moved, c.moved, moves)
		}
		for i := range after {
			if after[i] != c.after[i] {
				t.Errorf("%v: after %v, want %v", c.stocks, after, c.after)
				break
			}
		}
	}
}

func TestHungerServesTheShardsThatWantAVariantOrAnything(t *testing.T) {
	t.Parallel()
	var nobody *Hunger
	if !nobody.wants("x") || nobody.of("x") != nil {
		t.Fatal("no hunger must even out every variant, no shard first")
	}
	h := &Hunger{}
	h.Add(1, "x")
	h.Add(2, "")
	h.Add(contract.MaxShards, "x") // out of range: ignored
	if !h.wants("x") || !h.wants("y") {
		t.Fatal("a shard hungry for anything wants every variant")
	}
	if x, y := h.of("x"), h.of("y"); !x[1] || !x[2] || x[0] || y[1] || !y[2] {
		t.Fatalf("of(x) = %v, of(y) = %v", x[:3], y[:3])
	}
	only := &Hunger{}
	only.Add(0, "x")
	if only.wants("y") || !only.wants("x") || !only.of("")[0] {
		t.Fatal("a shard hungry for x only wants x (and, for a single-stock sale, units)")
	}
	if HungryShards(nil) != nil || !HungryShards([]bool{true}).of("")[0] {
		t.Fatal("hungryShards")
	}
}
