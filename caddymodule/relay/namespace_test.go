//go:build integration

package relay

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// preheatIn preheats a sale of the namespace ns (as the backend does with SECKILL_NAMESPACE),
// lists it in the sales index and writes n entries to its outbox, as the gate script would.
func preheatIn(t *testing.T, rdb redis.UniversalClient, ns string, n int) (sale string, orders []string) {
	t.Helper()
	ctx := context.Background()
	sale = testenv.ID("s")
	now := time.Now()
	if _, _, err := (lua.PreheatCall{Sale: sale, Stock: 100, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour),
		Retention: time.Minute, Namespace: ns}).Run(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	rdb.SAdd(ctx, contract.SalesIndexKey, sale)
	t.Cleanup(func() {
		rdb.SRem(context.Background(), contract.SalesIndexKey, sale)
		rdb.Del(context.Background(), contract.MetaKey(sale), contract.OutboxKey(sale))
	})
	// preheat.lua made the outbox with the relay's group, as the backend's preheat does.
	if g, err := rdb.XInfoGroups(ctx, contract.OutboxKey(sale)).Result(); err != nil || len(g) != 1 || g[0].Name != Group {
		t.Fatalf("outbox groups after preheat = %+v, %v; want %q", g, err, Group)
	}
	orders = addEntries(t, rdb, sale, n)
	return sale, orders
}

func addEntries(t *testing.T, rdb redis.UniversalClient, sale string, n int) []string {
	t.Helper()
	var orders []string
	ms := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for i := range n {
		id := testenv.ID("o")
		orders = append(orders, id)
		if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: contract.OutboxKey(sale),
			Values: []any{"o", id, "u", "u" + strconv.Itoa(i), "t", ms}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return orders
}

// received collects the order ids of the messages reaching seckill.orders in a vhost.
type received struct {
	mu    sync.Mutex
	sales map[string]string // order id -> sale id
}

func consume(t *testing.T, url string) *received {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.DeclareTopology(ch); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(contract.Queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &received{sales: map[string]string{}}
	go func() {
		for d := range deliveries {
			if m, err := contract.DecodeOrderMessage(d.Body); err == nil {
				r.mu.Lock()
				r.sales[m.OrderID] = m.SaleID
				r.mu.Unlock()
			}
		}
	}()
	return r
}

func (r *received) has(ids []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if _, ok := r.sales[id]; !ok {
			return false
		}
	}
	return true
}

func (r *received) of(sale string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.sales {
		if s == sale {
			n++
		}
	}
	return n
}

func startRelay(t *testing.T, rdb redis.UniversalClient, vhost, ns string) *Relay {
	t.Helper()
	r := New(Options{
		Redis:     rdb,
		Connect:   func(context.Context) (*amqp.Connection, error) { return amqp.Dial(vhost) },
		Namespace: ns,
		Config:    Config{PollInterval: Duration(20 * time.Millisecond), DiscoverInterval: Duration(50 * time.Millisecond)},
	})
	r.Start(context.Background())
	t.Cleanup(func() { _ = r.Stop() })
	return r
}

// Two deployments share one Redis: the relay of namespace A takes A's outbox, never B's (nor
// an unnamed deployment's), even when told B's sale was served here; B's own relay then takes
// B's entries, so they were there to take.
func TestARelayNeverTakesAnotherNamespacesOutbox(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	nsA, nsB := testenv.ID("nsa-"), testenv.ID("nsb-")
	saleA, ordersA := preheatIn(t, rdb, nsA, 5)
	saleB, ordersB := preheatIn(t, rdb, nsB, 5)
	unnamed, _ := preheatIn(t, rdb, "", 3)

	vhostA := testenv.RabbitVhost(t)
	gotA := consume(t, vhostA)
	ra := startRelay(t, rdb, vhostA, nsA)
	ra.Notify(saleB) // a misrouted purchase of B's sale served by A's gateway
	testenv.WaitFor(t, 20*time.Second, "A's orders in A's broker", func() bool { return gotA.has(ordersA) })

	// More of A after the first round: its delivery means A's relay scanned and served again
	// since, with B's and the unnamed sale's entries in plain sight all along.
	ra.Notify(saleB)
	more := addEntries(t, rdb, saleA, 3)
	ra.Notify(saleA)
	testenv.WaitFor(t, 20*time.Second, "A's later orders in A's broker", func() bool { return gotA.has(more) })

	for _, s := range []string{saleB, unnamed} {
		if n := gotA.of(s); n != 0 {
			t.Errorf("A's broker received %d orders of %s, a sale of another namespace", n, s)
		}
	}
	// (The unnamed sale's outbox is not checked further: an unnamed deployment's relay may be
	// running against this shared Redis, and it may take it.)
	if p := rdb.XPending(ctx, contract.OutboxKey(saleB), Group).Val(); p.Count != 0 {
		t.Errorf("A's relay read %d entries of B's sale", p.Count)
	}
	if n := rdb.XLen(ctx, contract.OutboxKey(saleB)).Val(); n != 5 {
		t.Errorf("B's outbox holds %d entries, want its 5", n)
	}
	if b := ra.Backlog(); b[saleB] != 0 || b[unnamed] != 0 {
		t.Errorf("A's backlog lists other namespaces' sales: %v", b)
	}

	vhostB := testenv.RabbitVhost(t)
	gotB := consume(t, vhostB)
	startRelay(t, rdb, vhostB, nsB)
	testenv.WaitFor(t, 20*time.Second, "B's orders in B's broker", func() bool { return gotB.has(ordersB) })
	if n := gotB.of(saleA); n != 0 {
		t.Errorf("B's broker received %d orders of A's sale", n)
	}
}

// A sale preheated by an older backend has an outbox without the relay's group (preheat.lua
// did not make it, and the gate script no longer does): the relay creates the group from id 0
// and delivers every entry written before it did.
func TestARelayDeliversAnOutboxPreheatedWithoutItsGroup(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	ns := testenv.ID("nsold-")
	sale := testenv.ID("s")
	now := time.Now()
	if err := lua.Preheat.Run(ctx, rdb, []string{contract.MetaKey(sale)}, sale, 10, now.Add(-time.Minute).UnixMilli(),
		now.Add(time.Hour).UnixMilli(), "init", time.Minute.Milliseconds(), "", ns).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.SAdd(ctx, contract.SalesIndexKey, sale)
	t.Cleanup(func() {
		rdb.SRem(context.Background(), contract.SalesIndexKey, sale)
		rdb.Del(context.Background(), contract.MetaKey(sale), contract.BuyersKey(sale), contract.OutboxKey(sale))
	})
	var orders []string
	for i := range 4 {
		order := testenv.ID("o")
		res, err := lua.GateCall{Sale: sale, User: "u" + strconv.Itoa(i), OrderID: order, Group: Group}.Run(ctx, rdb)
		if err != nil || len(res) < 2 || res[0] != int64(0) {
			t.Fatalf("gate: %v, %v", res, err)
		}
		orders = append(orders, order)
	}
	if g, err := rdb.XInfoGroups(ctx, contract.OutboxKey(sale)).Result(); err != nil || len(g) != 0 {
		t.Fatalf("the outbox has groups %+v (%v) before any relay ran; the test needs none", g, err)
	}
	vhost := testenv.RabbitVhost(t)
	got := consume(t, vhost)
	r := startRelay(t, rdb, vhost, ns)
	r.Notify(sale)
	testenv.WaitFor(t, 20*time.Second, "the orders of a sale preheated without the group", func() bool { return got.has(orders) })
}
