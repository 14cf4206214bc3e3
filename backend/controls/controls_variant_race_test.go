//go:build integration

package controls_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/controls"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

var errStopped = errors.New("stopped here (test)")

// stopAtStep makes the next stock change stop at step, as a backend that stopped there would.
func stopAtStep(t *testing.T, e *servicetest.Env, step string) {
	t.Helper()
	e.Svc.Controls.Stop = func(s string) error {
		if s == step {
			return errStopped
		}
		return nil
	}
	t.Cleanup(func() { e.Svc.Controls.Stop = nil })
}

// The backend stops between the two stores of a variant's stock change, at each point; the
// client's retry completes the change, counting it once in each store.
func TestAVariantStockChangeStoppedBetweenTheStoresIsCompletedByItsRetry(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := servicetest.WithWho(context.Background())
	sale := e.VariantSale(2, backend.VariantSpec{ID: "a", Stock: 4}, backend.VariantSpec{ID: "b", Stock: 4}, backend.VariantSpec{ID: "c", Stock: 4})
	// A purchase of a in flight (accepted, not written): reconcile cannot give a variant its
	// units back while it lasts, so the retry must finish by itself.
	inFlight, _, ok := e.Buy(sale, "early", "a", 1)
	if !ok {
		t.Fatal("the gate refused")
	}
	retry := func(r controls.StockRequest) admin.ControlResult {
		t.Helper()
		res, err := e.Svc.Controls.ChangeStock(ctx, sale, r)
		if err != nil {
			t.Fatalf("retry of %+v: %v", r, err)
		}
		if st := e.DBInt(`SELECT count(*) FROM stock_changes WHERE request_id = $1 AND status = 'applied'`, r.RequestID); st != 1 {
			t.Fatalf("%s is not applied in the journal", r.RequestID)
		}
		return res
	}

	// 1. An addition stopped after Postgres: Redis lacks the units until the retry.
	stopAtStep(t, e, "add:postgres")
	addA := controls.StockRequest{Add: 3, RequestID: "stop-add-a", Variant: "a"}
	if _, err := e.Svc.Controls.ChangeStock(ctx, sale, addA); !errors.Is(err, errStopped) {
		t.Fatalf("stopped add: %v", err)
	}
	e.Svc.Controls.Stop = nil
	if init, st := e.VariantRow(sale, "a"); init != 7 || st != 7 || e.Meta(sale)["v:a"] != "3" {
		t.Fatalf("after the stop: Postgres a %d/%d, Redis a %s; want Postgres 7/7, Redis 3 (unchanged)", init, st, e.Meta(sale)["v:a"])
	}
	if res := retry(addA); res.Reconcile != nil || *res.Variant.StockRedis != 6 {
		t.Fatalf("retry of the add: %+v (want Redis a 6 without a reconcile)", res)
	}
	if res := retry(addA); !res.Replayed {
		t.Fatal("a second retry was not a replay")
	}

	// 2. The same, but a reconcile ran between the stop and the retry (nothing in flight on
	// b's side either way: the write of the early order lets reconcile repair variants).
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(context.Background(), []contract.OrderMessage{inFlight}); err != nil {
		t.Fatal(err)
	}
	stopAtStep(t, e, "add:postgres")
	addB := controls.StockRequest{Add: 2, RequestID: "stop-add-b", Variant: "b"}
	if _, err := e.Svc.Controls.ChangeStock(ctx, sale, addB); !errors.Is(err, errStopped) {
		t.Fatalf("stopped add: %v", err)
	}
	e.Svc.Controls.Stop = nil
	if rep, err := e.Svc.Reconciler.Reconcile(ctx, sale); err != nil || e.Meta(sale)["v:b"] != "6" {
		t.Fatalf("reconcile between the stop and the retry: %v %+v, Redis b %s", err, rep, e.Meta(sale)["v:b"])
	}
	if res := retry(addB); res.Reconcile == nil || *res.Variant.StockRedis != 6 {
		t.Fatalf("retry after a reconcile: %+v (want Redis b 6: counted once)", res)
	}

	// 3. A removal stopped after its journal row: nothing applied yet.
	stopAtStep(t, e, "remove:journal")
	cutC := controls.StockRequest{Add: -3, RequestID: "stop-cut-c", Variant: "c"}
	if _, err := e.Svc.Controls.ChangeStock(ctx, sale, cutC); !errors.Is(err, errStopped) {
		t.Fatalf("stopped removal: %v", err)
	}
	e.Svc.Controls.Stop = nil
	if e.Meta(sale)["v:c"] != "4" {
		t.Fatal("a removal stopped before Redis changed Redis")
	}
	retry(cutC)
	if init, st := e.VariantRow(sale, "c"); init != 1 || st != 1 || e.Meta(sale)["v:c"] != "1" {
		t.Fatalf("after the retry: Postgres c %d/%d, Redis %s, want 1", init, st, e.Meta(sale)["v:c"])
	}

	// 4. A removal stopped after Redis: Redis has fewer units than Postgres (safe) until the
	// retry cuts Postgres, once.
	stopAtStep(t, e, "remove:redis")
	cutA := controls.StockRequest{Add: -2, RequestID: "stop-cut-a", Variant: "a"}
	if _, err := e.Svc.Controls.ChangeStock(ctx, sale, cutA); !errors.Is(err, errStopped) {
		t.Fatalf("stopped removal: %v", err)
	}
	e.Svc.Controls.Stop = nil
	if _, st := e.VariantRow(sale, "a"); st != 6 || e.Meta(sale)["v:a"] != "4" {
		t.Fatalf("after the stop: Postgres a %d, Redis a %s; want 6 and 4", st, e.Meta(sale)["v:a"])
	}
	retry(cutA)
	retry(cutA)
	if init, st := e.VariantRow(sale, "a"); init != 5 || st != 4 || e.Meta(sale)["v:a"] != "4" {
		t.Fatalf("after the retries: Postgres a %d/%d, Redis a %s; want 5/4 and 4", init, st, e.Meta(sale)["v:a"])
	}
	if m := e.Meta(sale); m["stock"] != "11" || e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale) != 11 {
		t.Fatalf("totals: Redis %s, Postgres %d, want 11 (a 4 + b 6 + c 1)", m["stock"], e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale))
	}
	e.VariantUnits(sale)
	if rep, err := e.Svc.Reconciler.Reconcile(ctx, sale); err != nil || rep.StockDelta != 0 || e.Meta(sale)["v:a"] != "4" {
		t.Fatalf("a final reconcile found something to repair: %v %+v", err, rep)
	}
}

// An addition to a variant of a sharded sale stopped after Postgres: the retry spreads the
// units over the shards itself (reconcile does not repair a sharded variant sale).
func TestAStoppedVariantAddOfAShardedSaleIsSpreadByItsRetry(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := servicetest.WithWho(context.Background())
	sale := e.ShardedVariantSale(2, 2, backend.VariantSpec{ID: "a", Stock: 2}, backend.VariantSpec{ID: "b", Stock: 2})
	stopAtStep(t, e, "add:postgres")
	add := controls.StockRequest{Add: 4, RequestID: "stop-shard-add", Variant: "a"}
	if _, err := e.Svc.Controls.ChangeStock(ctx, sale, add); !errors.Is(err, errStopped) {
		t.Fatal(err)
	}
	e.Svc.Controls.Stop = nil
	res, err := e.Svc.Controls.ChangeStock(ctx, sale, add)
	if err != nil || res.Variant == nil || *res.Variant.StockRedis != 6 || res.Variant.StockDB != 6 {
		t.Fatalf("retry: %v %+v", err, res.Variant)
	}
	for _, id := range contract.ShardIDs(sale, 2) {
		if m := e.Meta(id); m["v:a"] != "3" || m["stock"] != "4" {
			t.Fatalf("shard %s: %v, want a 3 of stock 4", id, m)
		}
	}
}

// Removals of a variant's units race with a crowd buying that variant through the real gate
// script: neither store goes below zero at any moment seen, every unit is sold, removed or
// left exactly once, and the verifier (internal/invariants, per variant, in units) passes once the
// orders are written by the consumer.
func TestVariantRemovalsRacingACrowdKeepBothStoresAtOrAboveZeroAndTheVerifierPasses(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := servicetest.WithWho(context.Background())
	const initialA, crowd = 1000, 2000
	sale := e.VariantSale(2, backend.VariantSpec{ID: "a", Stock: initialA}, backend.VariantSpec{ID: "b", Stock: 10})

	var (
		mu       sync.Mutex
		accepted []contract.OrderMessage
		removed  atomic.Int64
		overlap  atomic.Int64 // removals applied while the crowd was buying
		bought   atomic.Bool  // the crowd is done
		start    = make(chan struct{})
		first    = make(chan struct{}) // the operator's first removal has answered
		negative atomic.Value
		done     = make(chan struct{})
		wg       sync.WaitGroup
	)
	// The crowd: 2000 users, each wanting 1 or 2 units of a (demand 3000 > 1000). It starts with
	// the operator's first removal; all but its first eighth wait for that removal's answer, so
	// that the crowd, however fast, is still buying while the removals are applied. The eighth
	// that does not wait wants at most 375 units: however slow the first removal (a loaded
	// machine), it finds units to remove, and it is applied while the crowd buys. (With half the
	// crowd not waiting, 1500 units of demand, the crowd could sell a out before the first
	// removal ran, and the race did not race.)
	users := make(chan int, crowd)
	for i := 0; i < crowd; i++ {
		users <- i
	}
	close(users)
	errs := make(chan error, 16)
	var crowdWG sync.WaitGroup
	for w := 0; w < 4; w++ {
		crowdWG.Add(1)
		go func() {
			defer crowdWG.Done()
			<-start
			for i := range users {
				if i >= crowd/8 {
					<-first
				}
				user, order, q := "crowd-"+strconv.Itoa(i), uuid.Must(uuid.NewV7()).String(), 1+i%2
				reply, err := lua.GateCall{Sale: sale, User: user, OrderID: order, Group: "relay", Variant: "a", Quantity: q}.Run(context.Background(), e.Redis)
				if err != nil {
					errs <- err
					return
				}
				if reply[0].(int64) == 0 {
					mu.Lock()
					accepted = append(accepted, contract.OrderMessage{OrderID: order, SaleID: sale, UserID: user, AcceptedAt: time.Now().UTC(),
						Variant: reply[3].(string), Quantity: int(reply[4].(int64)), SeqNo: int(reply[5].(int64))})
					mu.Unlock()
				}
			}
		}()
	}
	go func() { crowdWG.Wait(); bought.Store(true) }()
	// The operator: removals of 3 units of a, one after the other, for as long as the crowd
	// buys (at most 100), retried while the lock is busy.
	wg.Add(1)
	go func() {
		defer wg.Done()
		var once sync.Once
		defer once.Do(func() { close(first) })
		close(start)
		for i := 0; i < 100 && (i < 3 || !bought.Load()); i++ {
			if i == 1 {
				once.Do(func() { close(first) })
			}
			for {
				_, err := e.Svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: -3, RequestID: fmt.Sprintf("race-%s-%d", sale, i), Variant: "a"})
				if errors.Is(err, lock.ErrBusy) {
					continue
				}
				if err == nil {
					removed.Add(3)
					if !bought.Load() {
						overlap.Add(1)
					}
				} else if err != controls.ErrInsufficient {
					errs <- err
				}
				break
			}
		}
	}()
	// A watcher: Redis and Postgres, read again and again while both run.
	watch := make(chan struct{})
	go func() {
		defer close(watch)
		for {
			select {
			case <-done:
				return
			default:
			}
			m := e.Redis.HMGet(context.Background(), contract.MetaKey(sale), "v:a", "stock").Val()
			for _, x := range m {
				if n, _ := strconv.Atoi(fmt.Sprint(x)); n < 0 {
					negative.Store(fmt.Sprintf("Redis %v", m))
				}
			}
			var pa, ps int
			if err := e.Pool.QueryRow(context.Background(), `SELECT v.stock, s.stock FROM sale_variants v JOIN sales s ON s.id = v.sale_id
				WHERE v.sale_id = $1 AND v.variant_id = 'a'`, sale).Scan(&pa, &ps); err == nil && (pa < 0 || ps < 0) {
				negative.Store(fmt.Sprintf("Postgres a %d, total %d", pa, ps))
			}
		}
	}()
	wg.Wait()
	crowdWG.Wait()
	close(done)
	<-watch
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v := negative.Load(); v != nil {
		t.Fatalf("a store went below zero: %v", v)
	}
	sold := 0
	for _, m := range accepted {
		sold += m.Units()
	}
	left, _ := strconv.Atoi(e.Meta(sale)["v:a"])
	t.Logf("a: %d units sold to %d buyers, %d removed (%d removals while the crowd bought), %d left in Redis",
		sold, len(accepted), removed.Load(), overlap.Load(), left)
	if sold+int(removed.Load())+left != initialA || left < 0 {
		t.Fatalf("a: sold %d + removed %d + left %d != %d", sold, removed.Load(), left, initialA)
	}
	if overlap.Load() == 0 || sold == 0 {
		t.Fatalf("the race did not race: sold %d, removed %d, none while the crowd bought", sold, removed.Load())
	}

	// The orders through RabbitMQ and the consumer, then the verifier.
	servicetest.Publish(t, e.AMQP, sale, servicetest.Bodies(accepted))
	e.StartConsumer(20)
	testenv.WaitFor(t, 30*time.Second, "every accepted order written", func() bool { return e.Accounted(sale) == len(accepted) })
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status <> 'created'`, sale); n != 0 {
		t.Fatalf("%d orders were not created: the removals took units Redis had sold", n)
	}
	e.VariantUnits(sale)
	acc := make([]invariants.Accepted, len(accepted))
	for i, m := range accepted {
		acc[i] = invariants.Accepted{OrderID: m.OrderID, UserID: m.UserID, At: m.AcceptedAt}
	}
	vhost := e.AMQP[strings.LastIndex(e.AMQP, "/")+1:]
	rep, err := invariants.Verify(context.Background(), invariants.Sources{Redis: e.Redis, PG: e.Pool,
		Dead: invariants.RabbitMgmt{URL: testenv.AMQPMgmtURL(), Vhost: vhost}}, invariants.Run{Sale: sale, Accepted: acc, Demand: crowd, CheckRedis: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verifier:\n%s", rep)
	}
	t.Logf("verifier:\n%s", rep)
}
