//go:build integration

package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/lua"
)

// noDeadLetters is the dead-letter source of a test that publishes nothing to RabbitMQ.
type noDeadLetters struct{}

func (noDeadLetters) DeadLetters(context.Context) ([][]byte, error) { return nil, nil }

// unitWorld is a unit sale under test: what the gate accepted, for the verifier.
type unitWorld struct {
	e        *servicetest.Env
	sale     string
	k        int
	accepted []invariants.Accepted
}

// buyAs runs the real gate script for one purchase with the given order id, on the user's
// shard, and returns the message the relay would send (ok false: refused).
func (w *unitWorld) buyAs(user, order, variant string, q int) (contract.OrderMessage, bool) {
	w.e.T.Helper()
	target := contract.UserShardID(w.sale, user, w.k)
	reply, err := lua.GateCall{Sale: target, User: user, OrderID: order, Group: "relay", Variant: variant, Quantity: q}.Run(context.Background(), w.e.Redis)
	if err != nil {
		w.e.T.Fatal(err)
	}
	if reply[0].(int64) != 0 {
		return contract.OrderMessage{}, false
	}
	m := contract.OrderMessage{OrderID: order, SaleID: w.sale, UserID: user, AcceptedAt: time.Now().UTC()}
	if len(reply) > 3 {
		m.Variant, m.Quantity, m.SeqNo = reply[3].(string), int(reply[4].(int64)), int(reply[5].(int64))
	}
	w.accepted = append(w.accepted, invariants.Accepted{OrderID: order, UserID: user, At: time.Now()})
	return m, true
}

func (w *unitWorld) mustBuy(user, variant string, q int) contract.OrderMessage {
	w.e.T.Helper()
	m, ok := w.buyAs(user, uuid.Must(uuid.NewV7()).String(), variant, q)
	if !ok {
		w.e.T.Fatalf("the gate refused %s %d of %q", user, q, variant)
	}
	return m
}

func (w *unitWorld) write(msgs ...contract.OrderMessage) {
	w.e.T.Helper()
	if _, err := (&orders.Writer{Pool: w.e.Pool}).WriteBatch(context.Background(), msgs); err != nil {
		w.e.T.Fatal(err)
	}
}

// verify runs the whole-system verifier on the sale (Redis compared with Postgres).
func (w *unitWorld) verify() invariants.Report {
	w.e.T.Helper()
	rep, err := invariants.Verify(context.Background(), invariants.Sources{Redis: w.e.Redis, PG: w.e.Pool, Dead: noDeadLetters{}},
		invariants.Run{Sale: w.sale, Accepted: w.accepted, CheckRedis: true})
	if err != nil {
		w.e.T.Fatal(err)
	}
	return rep
}

func (w *unitWorld) mustPass(when string) {
	w.e.T.Helper()
	if rep := w.verify(); !rep.OK() {
		w.e.T.Fatalf("%s: the verifier fails:\n%s", when, rep)
	}
}

func (w *unitWorld) reconcile() admin.ReconcileReport {
	w.e.T.Helper()
	rep, err := w.e.Svc.Reconciler.Reconcile(context.Background(), w.sale)
	if err != nil {
		w.e.T.Fatal(err)
	}
	w.e.T.Logf("reconcile: %+v", rep)
	return rep
}

// A buyer of a variant sale with limit 2 whose message never arrived: reconcile records the
// latest order failed (lost_in_transit) with the user's units, returns them to the stock and
// lowers the user's held units; the variant gets its unit back from Postgres once nothing is in
// flight; a late message changes nothing; the verifier passes.
func TestReconcileRecordsALostOrderOfAVariantSaleFailedAndReturnsItsUnits(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	w := &unitWorld{e: e, sale: e.VariantSale(2, backend.VariantSpec{ID: "red", Stock: 5}, backend.VariantSpec{ID: "blue", Stock: 5}), k: 1}
	// The shop has a receiver: the lost order's order.failed event must be enqueued for it.
	if _, err := e.Pool.Exec(ctx, `UPDATE sales SET webhook_url = 'http://127.0.0.1:9/hook' WHERE id = $1`, w.sale); err != nil {
		t.Fatal(err)
	}
	w.write(w.mustBuy("ann", "red", 2), w.mustBuy("bob", "blue", 1))
	// bob's second purchase, accepted two hours ago, never reached Postgres.
	lostID := backendtest.OrderIDAt(t, time.Now().Add(-2*time.Hour))
	lostMsg, ok := w.buyAs("bob", lostID, "red", 1)
	if !ok {
		t.Fatal("the gate refused the lost purchase")
	}
	// carl's purchase is in flight (accepted a moment ago): left alone.
	inflight := w.mustBuy("carl", "blue", 2)
	if rep := w.verify(); rep.OK() {
		t.Fatalf("the verifier passes a sale with a lost order:\n%s", rep)
	}

	rep := w.reconcile()
	if len(rep.LostFailed) != 1 || rep.LostFailed[0] != lostID {
		t.Fatalf("lost orders %v, want [%s]", rep.LostFailed, lostID)
	}
	if rep.InFlight != 2 {
		t.Errorf("in flight %d, want carl's 2 units", rep.InFlight)
	}
	var status, reason, variant string
	var q, seq int
	if err := e.Pool.QueryRow(ctx, `SELECT status, reason, variant_id, quantity, seq FROM orders WHERE order_id = $1`, lostID).
		Scan(&status, &reason, &variant, &q, &seq); err != nil {
		t.Fatal(err)
	}
	if status != "failed" || reason != reconcile.ReasonLost || variant != "" || q != 1 || seq != 2 {
		t.Fatalf("lost order %s/%s variant %q quantity %d seq %d, want failed/%s '' 1 2", status, reason, variant, q, seq, reconcile.ReasonLost)
	}
	if n := e.DBInt(`SELECT count(*) FROM webhook_deliveries WHERE order_id = $1 AND type = $2`, lostID, contract.EventOrderFailed); n != 1 {
		t.Errorf("%d order.failed events for the lost order, want 1", n)
	}
	held := e.Redis.HGetAll(ctx, contract.HeldKey(w.sale)).Val()
	if held["bob"] != "1" || held["carl"] != "2" || held["ann"] != "2" {
		t.Fatalf("held after reconcile: %v", held)
	}
	// Postgres 10 - 3 = 7 units; carl's 2 are promised: Redis 5. Red lacks the lost unit until
	// nothing is in flight (the lost message's variant is unknown to the backend).
	if s := e.RedisStock(w.sale); s != 5 {
		t.Fatalf("redis stock %d, want 5", s)
	}

	w.write(inflight)
	rep = w.reconcile()
	meta := e.Redis.HGetAll(ctx, contract.MetaKey(w.sale)).Val()
	if meta["v:red"] != "3" || meta["v:blue"] != "2" || meta["stock"] != "5" {
		t.Fatalf("after the write: meta %v, want red 3 blue 2 stock 5", meta)
	}
	w.mustPass("after reconcile")

	// The lost message arrives after all: nothing changes.
	w.write(lostMsg)
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE order_id = $1 AND status = 'failed'`, lostID); n != 1 {
		t.Fatal("the late message changed the lost order")
	}
	w.mustPass("after the late message")
	if rep = w.reconcile(); len(rep.Actions) != 0 {
		t.Fatalf("a third reconcile found more to do: %v", rep.Actions)
	}
	// bob's units went back to him: he may buy one more (his limit is 2), his third purchase.
	m := w.mustBuy("bob", "red", 1)
	if m.SeqNo != 3 {
		t.Fatalf("bob's next purchase has seq %d, want 3", m.SeqNo)
	}
}

// Redis lost the held hash of a sale with limit 3: reconcile rebuilds each user's units and
// purchase counter from Postgres, so the next purchase of a user gets the next purchase
// number and lands in Postgres (the unique live (sale, user, seq) index would refuse a reused
// one), and the limit still holds.
func TestReconcileRebuildsHeldUnitsAndPurchaseCountersRedisLost(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	w := &unitWorld{e: e, sale: e.VariantSale(3, backend.VariantSpec{ID: "red", Stock: 10}), k: 1}
	w.write(w.mustBuy("ann", "red", 1), w.mustBuy("ann", "red", 1), w.mustBuy("bob", "red", 2))
	e.Redis.Del(ctx, contract.HeldKey(w.sale))
	if rep := w.verify(); rep.OK() {
		t.Fatalf("the verifier passes a sale whose held hash is gone:\n%s", rep)
	}
	rep := w.reconcile()
	held := e.Redis.HGetAll(ctx, contract.HeldKey(w.sale)).Val()
	if held["ann"] != "2" || held["#ann"] != "2" || held["bob"] != "2" {
		t.Fatalf("held after reconcile: %v (report %v)", held, rep.Actions)
	}
	if exp, meta := e.Redis.PExpireTime(ctx, contract.HeldKey(w.sale)).Val(), e.Redis.PExpireTime(ctx, contract.MetaKey(w.sale)).Val(); exp != meta {
		t.Fatalf("rebuilt held hash expires at %v, the sale at %v", exp, meta)
	}
	w.mustPass("after reconcile")
	m := w.mustBuy("ann", "red", 1)
	if m.SeqNo != 3 {
		t.Fatalf("ann's next purchase has seq %d, want 3", m.SeqNo)
	}
	w.write(m)
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE order_id = $1 AND status = 'created' AND seq = 3`, m.OrderID); n != 1 {
		t.Fatal("ann's next purchase did not land in Postgres")
	}
	if _, ok := w.buyAs("ann", uuid.Must(uuid.NewV7()).String(), "red", 1); ok {
		t.Fatal("ann bought a fourth unit with a limit of 3")
	}
	w.mustPass("after the next purchase")
}

// A sharded (3 shards) variant sale with limit 2: one shard's variant and stock corrupted,
// another shard's held hash lost. Reconcile repairs them over the shards; the verifier passes.
func TestReconcileRepairsAShardedVariantSale(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	w := &unitWorld{e: e, sale: e.ShardedVariantSale(3, 2, backend.VariantSpec{ID: "a", Stock: 30}, backend.VariantSpec{ID: "b", Stock: 30}), k: 3}
	var msgs []contract.OrderMessage
	for i := 0; i < 6; i++ {
		u := "user" + string(rune('a'+i))
		msgs = append(msgs, w.mustBuy(u, []string{"a", "b"}[i%2], 1+i%2))
		if i%2 == 0 {
			msgs = append(msgs, w.mustBuy(u, "a", 1))
		}
	}
	w.write(msgs...)
	w.mustPass("before the corruption")
	ids := contract.ShardIDs(w.sale, 3)
	// Shard 1 believes it has 3 more units of a than it has; shard 2 lost one of b.
	e.Redis.HIncrBy(ctx, contract.MetaKey(ids[1]), "v:a", 3)
	e.Redis.HIncrBy(ctx, contract.MetaKey(ids[1]), "stock", 3)
	e.Redis.HIncrBy(ctx, contract.MetaKey(ids[2]), "v:b", -1)
	e.Redis.HIncrBy(ctx, contract.MetaKey(ids[2]), "stock", -1)
	// The shard with the most buyers lost its held hash.
	victim := ids[0]
	for _, id := range ids {
		if e.Redis.HLen(ctx, contract.HeldKey(id)).Val() > e.Redis.HLen(ctx, contract.HeldKey(victim)).Val() {
			victim = id
		}
	}
	lostHeld := e.Redis.HGetAll(ctx, contract.HeldKey(victim)).Val()
	if len(lostHeld) == 0 {
		t.Fatal("no shard has buyers")
	}
	e.Redis.Del(ctx, contract.HeldKey(victim))
	if rep := w.verify(); rep.OK() {
		t.Fatalf("the verifier passes the corrupted sale:\n%s", rep)
	}
	rep := w.reconcile()
	if rep.StockDelta != -2 {
		t.Errorf("stock delta %d, want -2", rep.StockDelta)
	}
	w.mustPass("after reconcile")
	rebuilt := e.Redis.HGetAll(ctx, contract.HeldKey(victim)).Val()
	for u, n := range lostHeld {
		if rebuilt[u] != n {
			t.Errorf("shard %s held %s = %q, was %s (rebuilt %v)", victim, u, rebuilt[u], n, rebuilt)
		}
	}
	for _, id := range ids {
		m := e.Redis.HGetAll(ctx, contract.MetaKey(id)).Val()
		a, b, s := atoi(m["v:a"]), atoi(m["v:b"]), atoi(m["stock"])
		if a < 0 || b < 0 || a+b != s {
			t.Errorf("shard %s: a %d + b %d != stock %d", id, a, b, s)
		}
	}
	if rep = w.reconcile(); rep.StockDelta != 0 || len(rep.BuyersRestored) != 0 || len(rep.LostFailed) != 0 {
		t.Fatalf("a second reconcile found more to do: %+v", rep)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c == '-' {
			return -atoi(s[1:])
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// A limit-1 sale with variants counts a user's units from the buyers hash (contract.UsesHeld):
// a held hash the gate may still write for it is ignored, even when wrong. A lost order is
// recorded failed with its one unit, a forgotten buyer restored, and the verifier passes.
func TestReconcileOfALimitOneVariantSaleCountsBuyersNotHeld(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	w := &unitWorld{e: e, sale: e.VariantSale(1, backend.VariantSpec{ID: "s", Stock: 4}, backend.VariantSpec{ID: "m", Stock: 4}), k: 1}
	ann, bob := w.mustBuy("ann", "s", 1), w.mustBuy("bob", "m", 1)
	w.write(ann, bob)
	lostID := backendtest.OrderIDAt(t, time.Now().Add(-2*time.Hour))
	if _, ok := w.buyAs("cat", lostID, "m", 1); !ok {
		t.Fatal("the gate refused cat")
	}
	e.Redis.HDel(ctx, contract.BuyersKey(w.sale), "ann")
	e.Redis.HSet(ctx, contract.HeldKey(w.sale), "bob", 7, "dan", 3) // nonsense a limit-1 sale must not read
	rep := w.reconcile()
	if len(rep.LostFailed) != 1 || rep.LostFailed[0] != lostID || rep.InFlight != 0 {
		t.Fatalf("lost %v in flight %d, want [%s] and 0", rep.LostFailed, rep.InFlight, lostID)
	}
	if len(rep.BuyersRestored) != 1 || rep.BuyersRestored[0] != "ann" {
		t.Fatalf("restored %v, want [ann]", rep.BuyersRestored)
	}
	if e.Redis.HGet(ctx, contract.BuyersKey(w.sale), "ann").Val() != ann.OrderID || e.Redis.HExists(ctx, contract.BuyersKey(w.sale), "cat").Val() {
		t.Fatalf("buyers after reconcile: %v", e.Redis.HGetAll(ctx, contract.BuyersKey(w.sale)).Val())
	}
	meta := e.Redis.HGetAll(ctx, contract.MetaKey(w.sale)).Val()
	if meta["stock"] != "6" || meta["v:s"] != "3" || meta["v:m"] != "3" {
		t.Fatalf("meta after reconcile %v, want stock 6, s 3, m 3", meta)
	}
	if q := e.DBInt(`SELECT quantity FROM orders WHERE order_id = $1 AND status = 'failed'`, lostID); q != 1 {
		t.Fatalf("lost order quantity %d", q)
	}
	w.mustPass("after reconcile")
	// ann holds her unit again: the gate tells her so.
	if _, ok := w.buyAs("ann", uuid.Must(uuid.NewV7()).String(), "m", 1); ok {
		t.Fatal("ann bought twice in a limit-1 sale")
	}
}
