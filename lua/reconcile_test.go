//go:build integration

package lua

import (
	"context"
	"testing"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// Held units Redis lost are raised by reconcile.lua's "h:" pairs and the purchase counter by
// its "#" pairs: never lowered, a re-created held hash expires with the sale, and the gate's
// next purchase by that user gets the next purchase number.
func TestReconcileRaisesHeldUnitsAndPurchaseCounters(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := variantSale(t, rdb, 4, Variant{"red", 10})
	for i, o := range []string{"o1", "o2"} {
		if res := buyItem(t, rdb, sale, "ann", o, "red", 1); code(res) != 0 || res[5].(int64) != int64(i+1) {
			t.Fatalf("purchase %d: %v", i+1, res)
		}
	}
	// Redis loses the held hash: ann's next purchase would be her first again (seq 1).
	rdb.Del(ctx, contract.HeldKey(sale))
	keys := []string{contract.MetaKey(sale), contract.BuyersKey(sale), contract.HeldKey(sale)}
	out, err := Reconcile.Run(ctx, rdb, keys, sale, 0, "h:ann", 2, "#ann", 2, "#bob", 1).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	if out[2] != 3 {
		t.Fatalf("raised %d pairs, want 3 (%v)", out[2], out)
	}
	h := rdb.HGetAll(ctx, contract.HeldKey(sale)).Val()
	if h["ann"] != "2" || h["#ann"] != "2" || h["bob"] != "0" || h["#bob"] != "1" {
		t.Fatalf("held after the raise: %v", h)
	}
	metaExp := rdb.PExpireTime(ctx, contract.MetaKey(sale)).Val()
	if got := rdb.PExpireTime(ctx, contract.HeldKey(sale)).Val(); metaExp <= 0 || got != metaExp {
		t.Fatalf("re-created held hash expires at %v, the sale at %v", got, metaExp)
	}
	// Never lowered: a counter above the floor, and units are only ever added.
	rdb.HSet(ctx, contract.HeldKey(sale), "#ann", 5)
	if out, err = Reconcile.Run(ctx, rdb, keys, sale, 0, "#ann", 3, "h:ann", 0).Int64Slice(); err != nil || out[2] != 0 {
		t.Fatalf("a floor below the counter changed it: %v %v", out, err)
	}
	if h := rdb.HGetAll(ctx, contract.HeldKey(sale)).Val(); h["#ann"] != "5" || h["ann"] != "2" {
		t.Fatalf("held after a no-op raise: %v", h)
	}
	rdb.HSet(ctx, contract.HeldKey(sale), "#ann", 2)
	// The gate's next purchase by ann is her third, within her limit of 4 (2 held + 2).
	if res := buyItem(t, rdb, sale, "ann", "o3", "red", 2); code(res) != 0 || res[5].(int64) != 3 {
		t.Fatalf("purchase after the raise: %v", res)
	}
	if res := buyItem(t, rdb, sale, "ann", "o4", "red", 1); code(res) != 12 {
		t.Fatalf("a purchase above the limit after the raise: %v", res)
	}
}

// Bad held pairs are refused before anything is written, and need the held key.
func TestReconcileRefusesBadHeldPairsWithoutWriting(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := variantSale(t, rdb, 4, Variant{"red", 10})
	keys := []string{contract.MetaKey(sale), contract.BuyersKey(sale), contract.HeldKey(sale)}
	for _, args := range [][]any{{"h:ann", -1}, {"h:ann", "x"}, {"#ann", 1.5}} {
		if err := Reconcile.Run(ctx, rdb, keys, append([]any{sale, 3, "v:red", 1}, args...)...).Err(); err == nil {
			t.Fatalf("pairs %v accepted", args)
		}
	}
	if err := Reconcile.Run(ctx, rdb, keys[:2], sale, 3, "h:ann", 1).Err(); err == nil {
		t.Fatal("held pairs without the held key accepted")
	}
	meta := rdb.HGetAll(ctx, contract.MetaKey(sale)).Val()
	if meta["stock"] != "10" || meta["v:red"] != "10" || rdb.Exists(ctx, contract.HeldKey(sale)).Val() != 0 {
		t.Fatalf("a refused call wrote: meta %v", meta)
	}
}
