//go:build integration

package invariants_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// newUnitWorld is a sale with variants (id -> stock) and a per-user limit, in Postgres and
// Redis, as preheat leaves it.
func newUnitWorld(t *testing.T, limit int, variants map[string]int) *world {
	t.Helper()
	total := 0
	for _, n := range variants {
		total += n
	}
	w := newWorld(t, total)
	ctx := context.Background()
	w.exec(`UPDATE sales SET per_user_limit = $2 WHERE id = $1`, w.sale, limit)
	for v, n := range variants {
		w.exec(`INSERT INTO sale_variants (sale_id, variant_id, initial_stock, stock) VALUES ($1, $2, $3, $3)`, w.sale, v, n)
		w.rdb.HSet(ctx, contract.MetaKey(w.sale), contract.VariantField(v), n)
	}
	w.rdb.HSet(ctx, contract.MetaKey(w.sale), contract.FieldVariants, len(variants), contract.FieldLimit, limit)
	t.Cleanup(func() { w.rdb.Del(context.Background(), contract.HeldKey(w.sale)) })
	return w
}

// sellUnits does what the gate and the consumer do for one purchase of q units of variant v.
func (w *world) sellUnits(user, order, v string, q int) {
	w.t.Helper()
	ctx := context.Background()
	w.rdb.HIncrBy(ctx, contract.MetaKey(w.sale), contract.FieldStock, int64(-q))
	w.rdb.HIncrBy(ctx, contract.MetaKey(w.sale), contract.VariantField(v), int64(-q))
	w.rdb.HIncrBy(ctx, contract.HeldKey(w.sale), user, int64(q))
	seq := w.rdb.HIncrBy(ctx, contract.HeldKey(w.sale), contract.HeldSeqField(user), 1).Val()
	w.rdb.HSet(ctx, contract.BuyersKey(w.sale), user, order)
	w.exec(`INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at, variant_id, quantity, seq) VALUES ($1, $2, $3, 'created', now(), $4, $5, $6)`,
		order, w.sale, user, v, q, seq)
	w.exec(`UPDATE sales SET stock = stock - $2 WHERE id = $1`, w.sale, q)
	w.exec(`UPDATE sale_variants SET stock = stock - $3 WHERE sale_id = $1 AND variant_id = $2`, w.sale, v, q)
	w.accept = append(w.accept, invariants.Accepted{OrderID: order, UserID: user, At: time.Now()})
}

func (w *world) cleanUnitSale() {
	w.sellUnits("u0", "o0", "a", 2)
	w.sellUnits("u0", "o1", "b", 1)
	w.sellUnits("u1", "o2", "a", 1)
	w.sellUnits("u2", "o3", "b", 3)
}

func TestVerifierPassesAVariantSaleWithSeveralOrdersPerUser(t *testing.T) {
	t.Parallel()
	w := newUnitWorld(t, 3, map[string]int{"a": 3, "b": 5})
	w.cleanUnitSale()
	rep := w.verify(3)
	expect(t, rep)
	if !strings.Contains(rep.Checks[0].Name, "per variant") {
		t.Fatalf("a variant sale is not checked per variant: %s", rep.Checks[0].Name)
	}
}

func TestVerifierReportsAnOversoldVariant(t *testing.T) {
	t.Parallel()
	w := newUnitWorld(t, 3, map[string]int{"a": 3, "b": 5})
	w.cleanUnitSale()
	// Variant a has no unit left; one more that a guard on the total alone let through. The
	// total (8) is not exceeded: only the per-variant count can see it.
	w.exec(`INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at, variant_id, quantity) VALUES ('o9', $1, 'u9', 'created', now(), 'a', 1)`, w.sale)
	w.exec(`UPDATE sales SET stock = stock - 1 WHERE id = $1`, w.sale)
	w.rdb.HIncrBy(context.Background(), contract.HeldKey(w.sale), "u9", 1)
	w.rdb.HIncrBy(context.Background(), contract.MetaKey(w.sale), contract.FieldStock, -1)
	w.accept = append(w.accept, invariants.Accepted{OrderID: "o9", UserID: "u9", At: time.Now()})
	rep := w.verify(4)
	expect(t, rep, 1, 4)
	if !strings.Contains(rep.Checks[0].Detail, "variant a OVERSOLD") {
		t.Errorf("invariant 1 does not name the variant: %s", rep.Checks[0].Detail)
	}
}

func TestVerifierReportsAUserAboveTheLimit(t *testing.T) {
	t.Parallel()
	w := newUnitWorld(t, 3, map[string]int{"a": 3, "b": 5})
	w.cleanUnitSale()
	w.sellUnits("u0", "o4", "b", 1) // u0 now holds 4 of a limit of 3
	rep := w.verify(3)
	expect(t, rep, 2)
	if len(rep.Checks[1].Problems) != 1 || !strings.Contains(rep.Checks[1].Problems[0], "user u0 holds 4 units") {
		t.Errorf("invariant 2 does not name the user: %v", rep.Checks[1].Problems)
	}
}

func TestVerifierReportsAVariantStockRedisOrPostgresGotWrong(t *testing.T) {
	t.Parallel()
	for name, corrupt := range map[string]func(w *world){
		"redis variant": func(w *world) {
			// Units moved between variants in Redis: the total still agrees.
			w.rdb.HIncrBy(context.Background(), contract.MetaKey(w.sale), contract.VariantField("a"), 1)
			w.rdb.HIncrBy(context.Background(), contract.MetaKey(w.sale), contract.VariantField("b"), -1)
		},
		"postgres variant": func(w *world) {
			// A unit of b gone from Postgres's variant stock, nowhere else.
			w.exec(`UPDATE sale_variants SET stock = stock - 1 WHERE sale_id = $1 AND variant_id = 'b'`, w.sale)
		},
		"redis held": func(w *world) {
			w.rdb.HIncrBy(context.Background(), contract.HeldKey(w.sale), "u1", -1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newUnitWorld(t, 3, map[string]int{"a": 3, "b": 5})
			w.cleanUnitSale()
			corrupt(w)
			expect(t, w.verify(3), 4)
		})
	}
}

// On a size drop (variants, a limit of 1) the verifier knows how many users asked for each
// variant: one asked for by more users than it had units must be sold out. A unit left behind
// on one variant is an UNDERSELL of that variant even when the others sold out.
func TestVerifierReportsAnUndersoldVariantOfALimitOneSale(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		demand map[string]int
		fails  bool
	}{
		"b undersold":                     {map[string]int{"a": 3, "b": 3}, true},
		"b had too few askers":            {map[string]int{"a": 3, "b": 1}, false},
		"demand unknown":                  {nil, false},
		"exactly as many askers as units": {map[string]int{"a": 2, "b": 2}, false},
		"many askers":                     {map[string]int{"a": 9, "b": 9}, true},
	} {
		t.Run(name, func(t *testing.T) {
			w := newUnitWorld(t, 1, map[string]int{"a": 2, "b": 2})
			w.sellUnits("u0", "o0", "a", 1)
			w.sellUnits("u1", "o1", "a", 1)
			w.sellUnits("u2", "o2", "b", 1)
			// A limit-1 sale keeps no held hash (contract.UsesHeld): the verifier reads buyers.
			w.rdb.Del(context.Background(), contract.HeldKey(w.sale))
			src := invariants.Sources{Redis: w.rdb, PG: w.pg, Dead: invariants.RabbitMgmt{URL: testenv.AMQPMgmtURL(), Vhost: w.vhost}}
			rep, err := invariants.Verify(context.Background(), src, invariants.Run{Sale: w.sale, Accepted: w.accept, Demand: 6,
				VariantDemand: c.demand, CheckRedis: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + rep.String())
			if c.fails {
				expect(t, rep, 1)
				if !strings.Contains(rep.Checks[0].Detail, "variant b UNDERSOLD") {
					t.Errorf("invariant 1 does not name the variant: %s", rep.Checks[0].Detail)
				}
			} else {
				expect(t, rep)
			}
		})
	}
}
