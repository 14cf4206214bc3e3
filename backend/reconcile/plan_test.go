package reconcile

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/contract"
)

// PlanUnits without any server: each rule of its doc comment on a small sale.
func TestPlanUnitsCountsEachUsersUnits(t *testing.T) {
	t.Parallel()
	now := time.Now()
	cutoff := now.Add(-time.Minute)
	old := backendtest.OrderIDAt(t, now.Add(-time.Hour))
	recent := uuid.Must(uuid.NewV7()).String()
	pg := Postgres{Limit: 3, Stock: 14, Variants: map[string]int{"r": 7, "b": 7}, Orders: map[string]Order{
		"a1": {User: "ann", Status: "created", Variant: "r", Quantity: 2, Seq: 1},
		"a2": {User: "ann", Status: "paid", Variant: "b", Quantity: 1, Seq: 2},
		// cancelled after the Postgres snapshot: Redis has compensated it already.
		"b1": {User: "bob", Status: "created", Variant: "r", Quantity: 1, Seq: 1},
		// failed, not compensated yet.
		"c1": {User: "cy", Status: "failed", Variant: "b", Quantity: 2, Seq: 1},
	}}
	// Postgres: 20 initial, 6 Held: 14; r 7, b 7 (the cancel of b1 not yet in the snapshot).
	sh := Shard{ID: "s", Stock: 7, Meta: map[string]string{"stock": "7", "v:r": "4", "v:b": "3"},
		Held: map[string]string{
			"ann": "1",              // lost 2 units of hers: raised
			"bob": "0", "#bob": "1", // b1 compensated
			"cy":  "2",              // c1 not compensated yet
			"dee": "3", "#dee": "2", // two purchases in flight, the latest lost
			"eve": "1", // one in flight, recent
		},
		Buyers:      map[string]string{"ann": "a2", "cy": "c1", "dee": old, "eve": recent},
		Compensated: map[string]bool{"b1": true}}
	p := PlanUnits(pg, []Shard{sh}, cutoff)
	if p.PGStock != 15 || p.Unreturned != 2 || p.InFlight != 4 {
		t.Fatalf("pg stock %d unreturned %d in flight %d, want 15 2 4", p.PGStock, p.Unreturned, p.InFlight)
	}
	if len(p.Lost) != 1 || p.Lost[0] != (Lost{User: "dee", Order: old, Units: 3, Seq: 2}) {
		t.Fatalf("lost %+v", p.Lost)
	}
	if r := p.Raise["ann"]; r.Units != 2 || r.Seq != 2 || len(p.Raise) != 1 {
		t.Fatalf("raises %+v, want ann +2 units, counter 2", p.Raise)
	}
	// 15 - 4 - 2 = 9 against 7: +2, but with units in flight only the lowering repairs run.
	if p.StockDelta != 0 || !p.VariantsHeld {
		t.Fatalf("stock delta %d (held %v), want 0 while units are in flight", p.StockDelta, p.VariantsHeld)
	}
	// r: 7 + 1 (b1) - 4 = +4: held back. b: 7 - 2 (c1) - 3 = +2: held back.
	if len(p.VariantDelta) != 0 {
		t.Fatalf("variant deltas %v while units are in flight", p.VariantDelta)
	}
	// A variant above what Postgres can back is lowered even so.
	sh.Meta["v:b"] = "9"
	if p = PlanUnits(pg, []Shard{sh}, cutoff); p.VariantDelta["b"] != -4 {
		t.Fatalf("variant deltas %v, want b -4", p.VariantDelta)
	}
}

// A limit-1 sale reads buyers, never held; a user missing from buyers is restored.
func TestPlanUnitsOfALimitOneSaleReadsBuyers(t *testing.T) {
	t.Parallel()
	cutoff := time.Now().Add(-time.Minute)
	lost := backendtest.OrderIDAt(t, time.Now().Add(-time.Hour))
	pg := Postgres{Limit: 1, Stock: 8, Variants: map[string]int{"s": 4, "m": 4}, Orders: map[string]Order{
		"a1": {User: "ann", Status: "created", Variant: "s", Quantity: 1, Seq: 1},
	}}
	sh := Shard{ID: "s", Stock: 7, Meta: map[string]string{"stock": "7", "v:s": "3", "v:m": "4"},
		Held:   map[string]string{"ann": "5", "bob": "9"},
		Buyers: map[string]string{"cat": lost}, Compensated: map[string]bool{}}
	p := PlanUnits(pg, []Shard{sh}, cutoff)
	if p.InFlight != 1 || len(p.Lost) != 1 || p.Lost[0].Units != 1 || p.Lost[0].User != "cat" || len(p.Raise) != 0 {
		t.Fatalf("plan %+v", p)
	}
	if p.Restore["ann"] != "a1" || len(p.Restore) != 1 {
		t.Fatalf("restore %v", p.Restore)
	}
}

// Over shards, with nothing in flight, every shard's stock ends the sum of its variants and
// the shards' deltas add up to the total's.
func TestUnitPlanSpreadsOverShardsKeepingEachShardWhole(t *testing.T) {
	t.Parallel()
	pg := Postgres{Limit: 2, Stock: 12, Variants: map[string]int{"a": 6, "b": 6}, Orders: map[string]Order{}}
	shards := []Shard{
		{ID: "x:0", Stock: 4, Meta: map[string]string{"stock": "4", "v:a": "2", "v:b": "2"}},
		{ID: "x:1", Stock: 7, Meta: map[string]string{"stock": "7", "v:a": "5", "v:b": "2"}},  // a +3
		{ID: "x:2", Stock: 1, Meta: map[string]string{"stock": "1", "v:a": "2", "v:b": "-1"}}, // b -3, stock -3
	}
	p := PlanUnits(pg, shards, time.Now())
	if p.StockDelta != 0 || p.VariantDelta["a"] != -3 || p.VariantDelta["b"] != 3 || !p.Exact {
		t.Fatalf("plan %+v", p)
	}
	deltas, pairs := p.ShardArgs(shards)
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
		if a < 0 || b < 0 || a+b != sh.Stock+deltas[i] {
			t.Errorf("shard %d: a %d + b %d != stock %d", i, a, b, sh.Stock+deltas[i])
		}
	}
	if sum != p.StockDelta {
		t.Fatalf("shard deltas %v add up to %d, not %d", deltas, sum, p.StockDelta)
	}
}
