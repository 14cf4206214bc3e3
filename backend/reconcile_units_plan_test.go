package backend

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/contract"
)

// planUnits without any server: each rule of its doc comment on a small sale.
func TestPlanUnitsCountsEachUsersUnits(t *testing.T) {
	now := time.Now()
	cutoff := now.Add(-time.Minute)
	old := uuidAt(t, now.Add(-time.Hour))
	recent := uuid.Must(uuid.NewV7()).String()
	pg := unitPG{limit: 3, stock: 14, variants: map[string]int{"r": 7, "b": 7}, orders: map[string]unitOrder{
		"a1": {user: "ann", status: "created", variant: "r", quantity: 2, seq: 1},
		"a2": {user: "ann", status: "paid", variant: "b", quantity: 1, seq: 2},
		// cancelled after the Postgres snapshot: Redis has compensated it already.
		"b1": {user: "bob", status: "created", variant: "r", quantity: 1, seq: 1},
		// failed, not compensated yet.
		"c1": {user: "cy", status: "failed", variant: "b", quantity: 2, seq: 1},
	}}
	// Postgres: 20 initial, 6 held: 14; r 7, b 7 (the cancel of b1 not yet in the snapshot).
	sh := unitShard{id: "s", stock: 7, meta: map[string]string{"stock": "7", "v:r": "4", "v:b": "3"},
		held: map[string]string{
			"ann": "1",              // lost 2 units of hers: raised
			"bob": "0", "#bob": "1", // b1 compensated
			"cy":  "2",              // c1 not compensated yet
			"dee": "3", "#dee": "2", // two purchases in flight, the latest lost
			"eve": "1", // one in flight, recent
		},
		buyers:      map[string]string{"ann": "a2", "cy": "c1", "dee": old, "eve": recent},
		compensated: map[string]bool{"b1": true}}
	p := planUnits(pg, []unitShard{sh}, cutoff)
	if p.pgStock != 15 || p.unreturned != 2 || p.inFlight != 4 {
		t.Fatalf("pg stock %d unreturned %d in flight %d, want 15 2 4", p.pgStock, p.unreturned, p.inFlight)
	}
	if len(p.lost) != 1 || p.lost[0] != (lostOrder{user: "dee", order: old, units: 3, seq: 2}) {
		t.Fatalf("lost %+v", p.lost)
	}
	if r := p.raise["ann"]; r.units != 2 || r.seq != 2 || len(p.raise) != 1 {
		t.Fatalf("raises %+v, want ann +2 units, counter 2", p.raise)
	}
	// 15 - 4 - 2 = 9 against 7: +2, but with units in flight only the lowering repairs run.
	if p.stockDelta != 0 || !p.variantsHeld {
		t.Fatalf("stock delta %d (held %v), want 0 while units are in flight", p.stockDelta, p.variantsHeld)
	}
	// r: 7 + 1 (b1) - 4 = +4: held back. b: 7 - 2 (c1) - 3 = +2: held back.
	if len(p.variantDelta) != 0 {
		t.Fatalf("variant deltas %v while units are in flight", p.variantDelta)
	}
	// A variant above what Postgres can back is lowered even so.
	sh.meta["v:b"] = "9"
	if p = planUnits(pg, []unitShard{sh}, cutoff); p.variantDelta["b"] != -4 {
		t.Fatalf("variant deltas %v, want b -4", p.variantDelta)
	}
}

// A limit-1 sale reads buyers, never held; a user missing from buyers is restored.
func TestPlanUnitsOfALimitOneSaleReadsBuyers(t *testing.T) {
	cutoff := time.Now().Add(-time.Minute)
	lost := uuidAt(t, time.Now().Add(-time.Hour))
	pg := unitPG{limit: 1, stock: 8, variants: map[string]int{"s": 4, "m": 4}, orders: map[string]unitOrder{
		"a1": {user: "ann", status: "created", variant: "s", quantity: 1, seq: 1},
	}}
	sh := unitShard{id: "s", stock: 7, meta: map[string]string{"stock": "7", "v:s": "3", "v:m": "4"},
		held:   map[string]string{"ann": "5", "bob": "9"},
		buyers: map[string]string{"cat": lost}, compensated: map[string]bool{}}
	p := planUnits(pg, []unitShard{sh}, cutoff)
	if p.inFlight != 1 || len(p.lost) != 1 || p.lost[0].units != 1 || p.lost[0].user != "cat" || len(p.raise) != 0 {
		t.Fatalf("plan %+v", p)
	}
	if p.restore["ann"] != "a1" || len(p.restore) != 1 {
		t.Fatalf("restore %v", p.restore)
	}
}

// Over shards, with nothing in flight, every shard's stock ends the sum of its variants and
// the shards' deltas add up to the total's.
func TestUnitPlanSpreadsOverShardsKeepingEachShardWhole(t *testing.T) {
	pg := unitPG{limit: 2, stock: 12, variants: map[string]int{"a": 6, "b": 6}, orders: map[string]unitOrder{}}
	shards := []unitShard{
		{id: "x:0", stock: 4, meta: map[string]string{"stock": "4", "v:a": "2", "v:b": "2"}},
		{id: "x:1", stock: 7, meta: map[string]string{"stock": "7", "v:a": "5", "v:b": "2"}},  // a +3
		{id: "x:2", stock: 1, meta: map[string]string{"stock": "1", "v:a": "2", "v:b": "-1"}}, // b -3, stock -3
	}
	p := planUnits(pg, shards, time.Now())
	if p.stockDelta != 0 || p.variantDelta["a"] != -3 || p.variantDelta["b"] != 3 || !p.exact {
		t.Fatalf("plan %+v", p)
	}
	deltas, pairs := p.shardArgs(shards)
	var sum int64
	for i, sh := range shards {
		sum += deltas[i]
		a, b := sh.variant("a"), sh.variant("b")
		for j := 0; j+1 < len(pairs[i]); j += 2 {
			switch pairs[i][j] {
			case contract.VariantField("a"):
				a += pairs[i][j+1].(int64)
			case contract.VariantField("b"):
				b += pairs[i][j+1].(int64)
			}
		}
		if a < 0 || b < 0 || a+b != sh.stock+deltas[i] {
			t.Errorf("shard %d: a %d + b %d != stock %d", i, a, b, sh.stock+deltas[i])
		}
	}
	if sum != p.stockDelta {
		t.Fatalf("shard deltas %v add up to %d, not %d", deltas, sum, p.stockDelta)
	}
}
