//go:build integration

package sales_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// buyOnShard does what the gate does for a sharded sale: the gate script on the user's shard.
// It returns the order id when the purchase was accepted, "" otherwise.
func buyOnShard(t testing.TB, rdb redis.UniversalClient, sale string, k int, user string) string {
	t.Helper()
	target := contract.UserShardID(sale, user, k)
	order := uuid.Must(uuid.NewV7()).String()
	res, err := lua.GateCall{Sale: target, User: user, OrderID: order, Group: "relay"}.Run(context.Background(), rdb)
	if err != nil {
		t.Errorf("gate script on %s: %v", target, err)
		return ""
	}
	if res[0].(int64) == 0 {
		return res[1].(string)
	}
	return ""
}

func stocksOf(t testing.TB, rdb redis.UniversalClient, sale string, k int) (each []int64, sum int64) {
	t.Helper()
	each, err := servicetest.ShardStocks(context.Background(), rdb, contract.ShardIDs(sale, k))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range each {
		sum += n
	}
	return each, sum
}

// usersOfShards returns n users whose purchases go to one of the given shards (of k).
func usersOfShards(prefix string, k, n int, shards ...int) []string {
	want := map[int]bool{}
	for _, s := range shards {
		want[s] = true
	}
	var out []string
	for i := 0; len(out) < n; i++ {
		u := prefix + strconv.Itoa(i)
		if want[contract.ShardOf(u, k)] {
			out = append(out, u)
		}
	}
	return out
}

func TestPreheatSplitsAShardedSaleAndLeavesUnshardedSalesAsTheyWere(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.ShardedSale(10, 4)
	each, sum := stocksOf(t, e.Redis, sale, 4)
	if sum != 10 || each[0] != 3 || each[1] != 3 || each[2] != 2 || each[3] != 2 {
		t.Fatalf("shard stocks %v, want [3 3 2 2]", each)
	}
	meta := e.Redis.HGetAll(ctx, contract.MetaKey(sale)).Val()
	if meta[contract.FieldShards] != "4" || meta[contract.FieldStock] != "0" {
		t.Fatalf("the sale's own meta %v: want shards=4 and stock=0", meta)
	}
	for _, id := range contract.ShardIDs(sale, 4) {
		if !e.Redis.SIsMember(ctx, contract.SalesIndexKey, id).Val() {
			t.Errorf("shard %s is not in the sales index: no relay would drain its outbox", id)
		}
	}
	// A second preheat never resets a selling shard.
	if buyOnShard(t, e.Redis, sale, 4, "someone") == "" {
		t.Fatal("purchase refused")
	}
	res, err := e.Svc.Sales.Preheat(ctx, sale)
	if err != nil || res.Created || res.StockRedis != 9 {
		t.Fatalf("second preheat = %+v, %v; want not created, 9 units", res, err)
	}
	st, err := e.Svc.Sales.SaleStatus(ctx, sale)
	if err != nil {
		t.Fatal(err)
	}
	if st.Shards != 4 || st.StockRedis == nil || *st.StockRedis != 9 || st.Buyers != 1 || st.Queued != 1 || len(st.ShardStock) != 4 {
		t.Fatalf("status %+v", st)
	}

	plain := e.Sale(5)
	if _, ok := e.Redis.HGetAll(ctx, contract.MetaKey(plain)).Val()[contract.FieldShards]; ok {
		t.Fatal("an unsharded sale's meta got a shards field")
	}
	if st, _ := e.Svc.Sales.SaleStatus(ctx, plain); st.Shards != 1 || st.ShardStock != nil || *st.StockRedis != 5 {
		t.Fatalf("unsharded status %+v", st)
	}
}

func TestCompensationReturnsTheUnitToTheUsersShard(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	const k = 4
	sale := e.ShardedSale(8, k)
	user := "comp-user"
	order := buyOnShard(t, e.Redis, sale, k, user)
	if order == "" {
		t.Fatal("purchase refused")
	}
	mine := contract.UserShardID(sale, user, k)
	before, _ := stocksOf(t, e.Redis, sale, k)

	sub := e.Redis.Subscribe(ctx, contract.EventsChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.Svc.Compensator.Compensate(ctx, []orders.OrderRef{{OrderID: order, SaleID: sale, UserID: user}}); n != 1 {
		t.Fatalf("compensated %d units, want 1", n)
	}
	after, _ := stocksOf(t, e.Redis, sale, k)
	for i := range after {
		want := before[i]
		if contract.ShardID(sale, i) == mine {
			want++
		}
		if after[i] != want {
			t.Errorf("shard %d stock %d -> %d, want %d", i, before[i], after[i], want)
		}
	}
	if e.Redis.HExists(ctx, contract.BuyersKey(mine), user).Val() {
		t.Error("the buyer is still in the user's shard: the user could never buy again")
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != contract.EventRestock+":"+mine {
		t.Fatalf("event %v %v, want restock of the user's shard %s", msg, err, mine)
	}
	// Idempotent per order.
	if n := e.Svc.Compensator.Compensate(ctx, []orders.OrderRef{{OrderID: order, SaleID: sale, UserID: user}}); n != 0 {
		t.Fatalf("second compensation returned %d units", n)
	}
}

// Buyers of only half of the shards can still buy every unit: the rebalance moves the other
// shards' units to theirs. Exactly the stock is sold, one unit per user.
func TestRebalanceLetsBuyersOfEmptiedShardsBuyEveryUnit(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	const k, stock = 8, 80
	sale := e.ShardedSale(stock, k)
	users := usersOfShards("r", k, 120, 0, 1, 2, 3)

	won := map[string]string{}
	var mu sync.Mutex
	attempt := func(us []string) {
		var wg sync.WaitGroup
		for _, u := range us {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if id := buyOnShard(t, e.Redis, sale, k, u); id != "" {
					mu.Lock()
					if prev, ok := won[u]; ok {
						t.Errorf("user %s won twice: %s, %s", u, prev, id)
					}
					won[u] = id
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	attempt(users)
	if len(won) != stock/2 {
		t.Fatalf("first round: %d winners, want %d (the four shards of the buyers)", len(won), stock/2)
	}
	// What the automatic rebalancer does when shards 0 to 3 report their sell-out.
	hungry := []bool{true, true, true, true, false, false, false, false}
	for round := 0; round < 10 && len(won) < stock; round++ {
		rep, err := e.Svc.Sales.RebalanceHungry(ctx, sale, servicetest.HungryShards(hungry))
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Moves) == 0 {
			t.Fatalf("round %d: nothing moved with %d units left: %+v", round, stock-len(won), rep)
		}
		var losers []string
		for _, u := range users {
			if won[u] == "" {
				losers = append(losers, u)
			}
		}
		attempt(append(losers, losers...)) // every loser twice, at once
	}
	if len(won) != stock {
		t.Fatalf("%d winners, want exactly %d", len(won), stock)
	}
	if _, sum := stocksOf(t, e.Redis, sale, k); sum != 0 {
		t.Fatalf("%d units left in Redis after every unit was sold", sum)
	}
	buyers, err := shards.Buyers(ctx, e.Redis, contract.ShardIDs(sale, k))
	if err != nil || len(buyers) != stock {
		t.Fatalf("%d buyers in the shards, want %d (%v)", len(buyers), stock, err)
	}
}

// Rebalancing while buyers buy never creates or loses a unit: winners + units left == stock,
// even with two rebalancers racing each other (the lock is bypassed on purpose).
func TestRebalanceConservesUnitsUnderConcurrentBuying(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	const k, stock = 8, 400
	sale := e.ShardedSale(stock, k)
	users := usersOfShards("c", k, 600, 0, 1, 2)

	var winners sync.Map
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				rep := admin.RebalanceReport{}
				if err := e.Svc.Sales.RebalanceLocked(ctx, sale, k, servicetest.HungryShards([]bool{true, w == 0}), &rep); err != nil {
					t.Errorf("rebalancer %d: %v", w, err)
					return
				}
			}
		}()
	}
	var buyers sync.WaitGroup
	for g := range 12 {
		buyers.Add(1)
		go func() {
			defer buyers.Done()
			for i := g; i < len(users); i += 12 {
				if id := buyOnShard(t, e.Redis, sale, k, users[i]); id != "" {
					winners.Store(users[i], id)
				}
			}
		}()
	}
	buyers.Wait()
	close(done)
	wg.Wait()
	if _, err := shards.FinishMoves(ctx, e.Redis, contract.ShardIDs(sale, k)); err != nil {
		t.Fatal(err)
	}
	n := 0
	winners.Range(func(_, _ any) bool { n++; return true })
	_, left := stocksOf(t, e.Redis, sale, k)
	if int64(n)+left != stock {
		t.Fatalf("%d winners + %d units left = %d, want %d: a unit was created or lost", n, left, int64(n)+left, stock)
	}
	if n > stock || left < 0 {
		t.Fatalf("%d winners, %d left", n, left)
	}
	for _, id := range contract.ShardIDs(sale, k) {
		if j := e.Redis.HLen(ctx, contract.MovesKey(id)).Val(); j != 0 {
			t.Errorf("shard %s still journals %d moves", id, j)
		}
	}
}

func TestAMoveInterruptedBetweenShardsIsFinishedExactlyOnce(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	const k = 2
	sale := e.ShardedSale(10, k)
	from, to := contract.ShardID(sale, 0), contract.ShardID(sale, 1)
	// The first half only, as if the rebalancer died right after it.
	take := lua.ShardTakeCall{From: from, Move: "m1", Units: 3, To: to}
	taken, err := take.Run(ctx, e.Redis)
	if err != nil || taken != 3 {
		t.Fatalf("take = %d, %v", taken, err)
	}
	if again, _ := take.Run(ctx, e.Redis); again != 3 {
		t.Fatalf("a retried take must return the journaled amount, got %d", again)
	}
	if _, sum := stocksOf(t, e.Redis, sale, k); sum != 7 {
		t.Fatalf("3 units in transit: shards hold %d, want 7", sum)
	}
	// The receiver got them once already (died before deleting the journal entry): applying
	// it again must change nothing.
	if _, _, err := (lua.ShardGiveCall{To: to, Move: "m1", Units: 3}).Run(ctx, e.Redis); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Svc.Sales.Rebalance(ctx, sale)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Finished != 1 {
		t.Fatalf("finished %d moves, want 1", rep.Finished)
	}
	if _, sum := stocksOf(t, e.Redis, sale, k); sum != 10 {
		t.Fatalf("after finishing the move the shards hold %d, want 10", sum)
	}
	if rep.StocksAfter[0] != 5 || rep.StocksAfter[1] != 5 {
		t.Fatalf("after rebalance %v, want [5 5]", rep.StocksAfter)
	}
}

func TestReconcileRepairsAShardedSaleAsTheSumOfItsShards(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	const k = 3
	sale := e.ShardedSale(12, k)
	for _, u := range []string{"a1", "a2"} { // in flight: accepted, no order yet
		if buyOnShard(t, e.Redis, sale, k, u) == "" {
			t.Fatal("purchase refused")
		}
	}
	e.Redis.HIncrBy(ctx, contract.MetaKey(contract.ShardID(sale, 1)), contract.FieldStock, 5) // 5 units appear
	rep, err := e.Svc.Reconciler.Reconcile(ctx, sale)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StockRedisBefore != 15 || rep.StockDelta != -5 || rep.StockRedisAfter != 10 || rep.InFlight != 2 {
		t.Fatalf("report %+v; want before 15, delta -5, after 10, 2 in flight", rep)
	}
	if _, sum := stocksOf(t, e.Redis, sale, k); sum != 10 {
		t.Fatalf("shards hold %d, want 10", sum)
	}
	if rep.Rebalance == nil {
		t.Fatal("reconcile of a sharded sale must rebalance it")
	}
	each, _ := stocksOf(t, e.Redis, sale, k)
	for i, n := range each {
		if n < 3 || n > 4 {
			t.Errorf("shard %d holds %d after reconcile's rebalance: %v", i, n, each)
		}
	}
}

// A shard's sell-out event triggers a rebalance: units of the other shards move to it within
// moments, without an operator.
func TestAShardSellingOutIsRebalancedAutomatically(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const k = 2
	sale := e.ShardedSale(6, k) // 3 + 3
	subscribed := make(chan struct{}, 1)
	e.Svc.Sales.Subscribed = func() { subscribed <- struct{}{} }
	stopped := make(chan struct{})
	go func() { e.Svc.Sales.RunRebalancer(ctx); close(stopped) }()
	// Wait for the subscription: a shard selling out before it would be missed.
	select {
	case <-subscribed:
	case <-time.After(5 * time.Second):
		t.Fatal("the rebalancer did not subscribe")
	}
	for _, u := range usersOfShards("auto", k, 3, 0) {
		if buyOnShard(t, e.Redis, sale, k, u) == "" {
			t.Fatalf("purchase of %s refused", u)
		}
	}
	testenv.WaitFor(t, 10*time.Second, "shard 0 to get units back from shard 1", func() bool {
		each, sum := stocksOf(t, e.Redis, sale, k)
		return each[0] >= 1 && sum == 3
	})
	// It stops with its context (the backend's shutdown waits for it).
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the rebalancer did not stop when its context ended")
	}
}

func TestAdminAPICreatesPreheatsAndRebalancesShardedSales(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	srv := httptest.NewServer(e.Svc.Handler(backend.NewMetricsRegistry(), false))
	defer srv.Close()
	auth := servicetest.AdminAuth
	id := testenv.ID("s")
	now := time.Now().UTC()
	body := `{"id":"` + id + `","stock":9,"starts_at":"` + now.Add(-time.Minute).Format(time.RFC3339) +
		`","ends_at":"` + now.Add(time.Hour).Format(time.RFC3339) + `","shards":3}`
	var st admin.SaleStatus
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", auth, body, &st); code != 201 || st.Shards != 3 {
		t.Fatalf("create: %d %+v", code, st)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, s := range contract.ShardIDs(id, 3) {
			e.Redis.Del(ctx, contract.MetaKey(s), contract.MovesKey(s), contract.MovedInKey(s))
			e.Redis.SRem(ctx, contract.SalesIndexKey, s)
		}
		e.Redis.Del(ctx, contract.MetaKey(id))
		e.Redis.SRem(ctx, contract.SalesIndexKey, id)
	})
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+id+"/preheat", auth, "", nil); code != 200 {
		t.Fatalf("preheat: %d", code)
	}
	var rep admin.RebalanceReport
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+id+"/rebalance", auth, "", &rep); code != 200 || rep.Shards != 3 || len(rep.StocksAfter) != 3 {
		t.Fatalf("rebalance: %d %+v", code, rep)
	}
	plain := e.Sale(1)
	var ref contract.Refusal
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+plain+"/rebalance", auth, "", &ref); code != 409 || ref.Code != "not_sharded" {
		t.Fatalf("rebalance of an unsharded sale: %d %+v", code, ref)
	}
	bad := `{"id":"` + testenv.ID("s") + `","stock":9,"starts_at":"` + now.Format(time.RFC3339) +
		`","ends_at":"` + now.Add(time.Hour).Format(time.RFC3339) + `","shards":65}`
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", auth, bad, &ref); code != 400 {
		t.Fatalf("65 shards: %d %+v", code, ref)
	}
}

func TestAQueuedOrderOfAShardedSaleIsFoundInTheUsersShard(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	sale := e.ShardedSale(10, 4)
	order := buyOnShard(t, e.Redis, sale, 4, "queued-user")
	v, found, err := e.Svc.Orders.Lookup(context.Background(), "queued-user", order)
	if err != nil || !found || v.Status != contract.StatusQueued || v.SaleID != sale {
		t.Fatalf("lookup = %+v %v %v; want queued in %s", v, found, err, sale)
	}
}

// The backend's part of a sharded sale on a 3-master Redis Cluster: preheat puts the shards
// on more than one master, compensation and rebalance (scripts on one shard's keys each) work
// across them and conserve the units.
func TestShardedSaleOnARedisClusterCompensatesAndRebalances(t *testing.T) {
	t.Parallel()
	seeds := testenv.StartRedisCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, backendtest.MigratedURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	comp := &orders.Compensator{Pool: pool, Redis: rdb, Log: servicetest.QuietLog()}
	svc := backend.New(backend.Options{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, 5*time.Second), Compensator: comp,
		Log: servicetest.QuietLog(), AdminToken: "t", Retention: time.Hour, Grace: time.Minute})

	const k, stock = 6, 60
	sale := servicetest.ShardedSaleOn(t, svc, rdb, stock, k)
	masters := map[string]bool{}
	for _, id := range contract.ShardIDs(sale, k) {
		c, err := rdb.MasterForKey(ctx, contract.MetaKey(id))
		if err != nil {
			t.Fatal(err)
		}
		masters[c.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Fatalf("the shards are all on one master: %v", masters)
	}
	users := usersOfShards("k", k, 40, 0, 1)
	won := map[string]string{}
	for _, u := range users {
		if id := buyOnShard(t, rdb, sale, k, u); id != "" {
			won[u] = id
		}
	}
	if len(won) != 20 {
		t.Fatalf("%d winners in shards 0 and 1, want 20", len(won))
	}
	var one string
	for u := range won {
		one = u
		break
	}
	if n := comp.Compensate(ctx, []orders.OrderRef{{OrderID: won[one], SaleID: sale, UserID: one}}); n != 1 {
		t.Fatalf("compensated %d, want 1", n)
	}
	delete(won, one)
	if _, sum := stocksOf(t, rdb, sale, k); sum != stock-int64(len(won)) {
		t.Fatalf("shards hold %d, want %d", sum, stock-len(won))
	}
	rep, err := svc.Sales.Rebalance(ctx, sale)
	if err != nil {
		t.Fatal(err)
	}
	each, sum := stocksOf(t, rdb, sale, k)
	if sum != stock-int64(len(won)) || len(rep.Moves) == 0 {
		t.Fatalf("after rebalance %v (sum %d, moves %+v), want %d units conserved", each, sum, rep.Moves, stock-len(won))
	}
	if each[0] == 0 || each[1] == 0 {
		t.Fatalf("the emptied shards got nothing: %v", each)
	}
}

func TestRebalanceMovesNothingWhenAShardIsMissing(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.ShardedSale(9, 3)
	e.Redis.Del(ctx, contract.MetaKey(contract.ShardID(sale, 2)))
	if _, err := e.Svc.Sales.Rebalance(ctx, sale); err == nil {
		t.Fatal("rebalance with a shard missing from Redis succeeded: units given to it would be lost")
	}
	if each, _ := stocksOf(t, e.Redis, sale, 3); each[0] != 3 || each[1] != 3 {
		t.Fatalf("stocks %v: the present shards must be untouched", each)
	}
}

// A buyer refused on an empty shard pulls a unit there: the shard's refusal is an event the
// rebalancer answers, so the last units follow the buyers, not the hash.
func TestABuyerRefusedOnAnEmptyShardPullsAUnitToIt(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const k = 4
	sale := e.ShardedSale(1, k) // 1, 0, 0, 0: three shards start empty and never sell out
	subscribed := make(chan struct{}, 1)
	e.Svc.Sales.Subscribed = func() { subscribed <- struct{}{} }
	go e.Svc.Sales.RunRebalancer(ctx)
	select {
	case <-subscribed:
	case <-time.After(5 * time.Second):
		t.Fatal("the rebalancer did not subscribe")
	}
	buyer := usersOfShards("late", k, 1, 3)[0]
	if buyOnShard(t, e.Redis, sale, k, buyer) != "" {
		t.Fatal("a buyer of an empty shard was accepted")
	}
	testenv.WaitFor(t, 10*time.Second, "the unit to move to the refused buyer's shard", func() bool {
		each, _ := stocksOf(t, e.Redis, sale, k)
		return each[3] == 1
	})
	if buyOnShard(t, e.Redis, sale, k, buyer) == "" {
		t.Fatal("the buyer's retry was refused with a unit in their shard")
	}
	if _, sum := stocksOf(t, e.Redis, sale, k); sum != 0 {
		t.Fatalf("%d units left, want 0", sum)
	}
}
