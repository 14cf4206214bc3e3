//go:build integration

package gate

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// newShardedVariantSale preheats a sale of k shards whose variants are split over the shards
// (each shard has every variant, some with 0 units), then its base hash.
func newShardedVariantSale(t testing.TB, rdb *redis.Client, k, limit int, variants ...lua.Variant) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now()
	ids := contract.ShardIDs(sale, k)
	t.Cleanup(func() {
		rdb.Del(ctx, contract.MetaKey(sale))
		for _, id := range ids {
			rdb.Del(ctx, lua.GateCall{Sale: id}.Keys()...)
		}
	})
	a := lua.PreheatCall{Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour), Retention: time.Hour, Limit: limit, Namespace: testNamespace}
	for i, id := range ids {
		a.Sale, a.Variants = id, nil
		for _, v := range variants {
			a.Variants = append(a.Variants, lua.Variant{ID: v.ID, Stock: int64(contract.SplitStock(int(v.Stock), k)[i])})
		}
		if _, _, err := a.Run(ctx, rdb); err != nil {
			t.Fatal(err)
		}
	}
	a.Sale, a.Variants, a.Shards = sale, nil, k
	if _, _, err := a.Run(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	return sale
}

// A sharded sale with variants keeps the guarantees: each user is decided on his shard, which
// holds his units (the limit holds over repeated clicks), and each shard sells at most its part
// of each variant, so no variant is oversold; each shard's total stays the sum of its variants.
func TestGateShardedSaleWithVariantsNeverOversellsNorExceedsTheLimit(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	g, _ := inProcessGate(t, rdb)
	const k, limit = 3, 2
	initial := map[string]int64{"red": 40, "blue": 11, "green": 2}
	sale := newShardedVariantSale(t, rdb, k, limit, lua.Variant{ID: "red", Stock: 40}, lua.Variant{ID: "blue", Stock: 11}, lua.Variant{ID: "green", Stock: 2})
	names := []string{"red", "blue", "green"}
	var mu sync.Mutex
	sold := map[string]int64{}
	byUser := map[string]int{}
	orders := map[string]map[string]bool{} // user -> his accepted order ids
	told := map[string]string{}            // user -> an order id an already_bought named
	var wg sync.WaitGroup
	for i := range 120 {
		user := "u" + strconv.Itoa(i)
		for click := range 3 { // repeat clicks, concurrently
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(i), uint64(click)))
				v, q := names[r.IntN(len(names))], 1+r.IntN(2)
				a := buyBody(t, g, sale, user, `{"variant":"`+v+`","quantity":`+strconv.Itoa(q)+`}`)
				switch {
				case a.Status == 202:
					if a.Variant != v || a.Quantity != q {
						t.Errorf("202 %s for %s x%d", a.Raw, v, q)
					}
					mu.Lock()
					sold[v] += int64(q)
					byUser[user] += q
					if orders[user] == nil {
						orders[user] = map[string]bool{}
					}
					orders[user][a.OrderID] = true
					mu.Unlock()
				case a.Code == "already_bought":
					// His shard sold out (its flag is set): a buyer is told his order from
					// the buyers hash, as on any sold-out sale, whatever the limit.
					mu.Lock()
					told[user] = a.OrderID
					mu.Unlock()
				case a.Code != "sold_out" && a.Code != "limit_reached":
					t.Errorf("unexpected answer %d %s", a.Status, a.Raw)
				}
			}()
		}
	}
	wg.Wait()
	for user, id := range told {
		if !orders[user][id] {
			t.Errorf("%s was told already_bought with %s, not one of his orders %v", user, id, orders[user])
		}
	}
	for user, n := range byUser {
		if n > limit {
			t.Errorf("%s holds %d units, above the limit %d", user, n, limit)
		}
		held, _ := rdb.HGet(ctx, contract.HeldKey(contract.UserShardID(sale, user, k)), user).Int()
		if held != n {
			t.Errorf("%s: %d units accepted, his shard's held hash says %d", user, n, held)
		}
	}
	left := map[string]int64{}
	for _, id := range contract.ShardIDs(sale, k) {
		m := rdb.HGetAll(ctx, contract.MetaKey(id)).Val()
		var sum int64
		for _, v := range names {
			n, _ := strconv.ParseInt(m["v:"+v], 10, 64)
			if n < 0 {
				t.Errorf("shard %s: %s at %d", id, v, n)
			}
			left[v] += n
			sum += n
		}
		if m["stock"] != strconv.FormatInt(sum, 10) {
			t.Errorf("shard %s: stock %s, its variants sum to %d", id, m["stock"], sum)
		}
	}
	for _, v := range names {
		if sold[v] > initial[v] || sold[v]+left[v] != initial[v] {
			t.Errorf("%s: %d sold + %d left, initial %d", v, sold[v], left[v], initial[v])
		}
	}
	if sold["green"] == 0 && sold["red"] == 0 {
		t.Fatal("nothing sold: the test proves nothing")
	}
}
