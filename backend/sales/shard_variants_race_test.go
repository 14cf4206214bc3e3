//go:build integration

package sales_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// (c) Buyers of every variant on every shard of a 3-shard sale (limit 2, quantities 1 and 2)
// through the real gate script, while the event-driven rebalancer and a second rebalancer
// that bypasses the sale's lock (on purpose) move units per variant over and over. Each
// variant starts on one shard only, so most of it must move to be sold. The crowd asks for
// more than there is: every unit of every variant is sold, none twice, no user above the
// limit, and every shard's stock is the sum of its variants' at every end of a script.
func TestRebalancingWhileBuyersBuyVariantsOnEveryShardSellsEachVariantExactly(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	const k, limit = 3, 2
	initial := map[string]int{"a": 200, "b": 120, "c": 60, "d": 3}
	var specs []backend.VariantSpec
	total := 0
	for _, v := range []string{"a", "b", "c", "d"} {
		specs = append(specs, backend.VariantSpec{ID: v, Stock: initial[v]})
		total += initial[v]
	}
	sale := e.ShardedVariantSale(k, limit, specs...)
	e.PlaceVariants(sale, []map[string]int{{"a": 200, "b": 0, "c": 0, "d": 1}, {"a": 0, "b": 120, "c": 0, "d": 1}, {"a": 0, "b": 0, "c": 60, "d": 1}})
	e.StartRebalancer()

	stop := make(chan struct{})
	var racedMoves, attempts atomic.Int64
	var racers sync.WaitGroup
	racers.Add(1)
	go func() {
		defer racers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var rep admin.RebalanceReport
			if err := e.Svc.Sales.RebalanceLocked(ctx, sale, k, nil, &rep); err != nil {
				t.Errorf("racing rebalancer: %v", err)
				return
			}
			racedMoves.Add(int64(len(rep.Moves)))
		}
	}()

	var mu sync.Mutex
	sold := map[string]int{}
	perUser := map[string]int{}
	var soldUnits atomic.Int64 // the buyers stop once every unit is sold (or at the deadline)
	deadline := time.Now().Add(40 * time.Second)
	var buyers sync.WaitGroup
	for g := range 12 {
		buyers.Add(1)
		go func() {
			defer buyers.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 18))
			variants := []string{"a", "b", "c", "d"}
			for i := 0; soldUnits.Load() < int64(total) && time.Now().Before(deadline); i++ {
				// Every user clicks twice (a returning buyer may take a second unit).
				user := fmt.Sprintf("vr%d-%d", g, i/2)
				v, q := variants[rng.IntN(len(variants))], 1+rng.IntN(2)
				reply := buyVariantOnShard(t, e, sale, k, user, v, q)
				attempts.Add(1)
				if reply[0].(int64) == 0 {
					if got, units := reply[3].(string), int(reply[4].(int64)); got != v || units != q {
						t.Errorf("accepted %d of %s, asked %d of %s", units, got, q, v)
					}
					mu.Lock()
					sold[v] += q
					perUser[user] += q
					mu.Unlock()
					soldUnits.Add(int64(q))
				}
			}
		}()
	}
	buyers.Wait()
	close(stop)
	racers.Wait()
	if _, err := shards.FinishMoves(ctx, e.Redis, contract.ShardIDs(sale, k)); err != nil {
		t.Fatal(err)
	}

	t.Logf("%d purchase attempts, %d moves by the racing rebalancer", attempts.Load(), racedMoves.Load())
	if racedMoves.Load() == 0 {
		t.Error("the racing rebalancer moved nothing: the test did not race moves against purchases")
	}
	got := variantsOnShards(t, e, sale, k)
	soldTotal := 0
	for v, n := range initial {
		var inRedis int64
		for i := range got {
			if got[i][v] < 0 {
				t.Errorf("shard %d holds %d of %s", i, got[i][v], v)
			}
			inRedis += got[i][v]
		}
		if sold[v] > n {
			t.Errorf("variant %s oversold: %d of %d", v, sold[v], n)
		}
		if int64(sold[v])+inRedis != int64(n) {
			t.Errorf("variant %s: %d sold + %d left = %d, want %d: a unit was created or lost", v, sold[v], inRedis, int64(sold[v])+inRedis, n)
		}
		soldTotal += sold[v]
	}
	if soldTotal != total {
		t.Fatalf("%d units sold of %d with a crowd that wanted more (sold %v, left %v)", soldTotal, total, sold, got)
	}
	for u, n := range perUser {
		if n > limit {
			t.Errorf("user %s got %d units, limit %d", u, n, limit)
		}
	}
	// Redis agrees: the held hashes and the outboxes count the units sold, per variant.
	held, outboxed := 0, map[string]int{}
	for _, id := range contract.ShardIDs(sale, k) {
		for f, n := range e.Redis.HGetAll(ctx, contract.HeldKey(id)).Val() {
			if !strings.HasPrefix(f, "#") {
				units, _ := strconv.Atoi(n)
				if units > limit {
					t.Errorf("held[%s] = %d on %s", f, units, id)
				}
				held += units
			}
		}
		entries, err := e.Redis.XRange(ctx, contract.OutboxKey(id), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			q := 1
			if s, ok := en.Values["q"].(string); ok {
				q, _ = strconv.Atoi(s)
			}
			outboxed[en.Values["v"].(string)] += q
		}
	}
	if held != total {
		t.Errorf("the held hashes count %d units, %d were sold", held, total)
	}
	for v := range initial {
		if outboxed[v] != sold[v] {
			t.Errorf("outboxes carry %d units of %s, %d were sold", outboxed[v], v, sold[v])
		}
	}
	journalsEmpty(t, e, sale, k)
}
