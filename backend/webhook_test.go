//go:build integration

package backend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// receiver is a shop's webhook endpoint: it checks the signature (with the old secret: the
// sender is mid-rotation), dedupes by event id, and can fail or stall on purpose.
type receiver struct {
	t testing.TB
	// Fail is the share of requests answered 500 without being recorded; Stall the share
	// recorded and then held for StallFor before the 200 (past the sender's timeout: the
	// sender retries an event the shop already has).
	Fail, Stall float64
	StallFor    time.Duration

	mu        sync.Mutex
	events    map[string]contract.WebhookEvent // by id, first copy
	received  map[string]time.Time             // first arrival, by id
	perOrder  map[string][]string              // event types in first-arrival order, by order
	requests  int
	failed    int
	stalled   int
	dups      int
	badSig    int
	arrivals  chan struct{}
	srv       *httptest.Server
	firstSeen time.Time
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{t: t, events: map[string]contract.WebhookEvent{}, received: map[string]time.Time{},
		perOrder: map[string][]string{}, arrivals: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(400)
		return
	}
	r.mu.Lock()
	r.requests++
	r.mu.Unlock()
	if err := contract.VerifyWebhook(hookSecretOld, req.Header.Get(contract.SignatureHeader), body, time.Minute, time.Now()); err != nil {
		r.mu.Lock()
		r.badSig++
		r.mu.Unlock()
		w.WriteHeader(400)
		return
	}
	x := rand.Float64()
	if x < r.Fail {
		r.mu.Lock()
		r.failed++
		r.mu.Unlock()
		w.WriteHeader(500)
		return
	}
	var ev contract.WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" || ev.ID != req.Header.Get("Idempotency-Key") {
		r.mu.Lock()
		r.badSig++
		r.mu.Unlock()
		w.WriteHeader(400)
		return
	}
	r.mu.Lock()
	if _, ok := r.events[ev.ID]; ok {
		r.dups++
	} else {
		r.events[ev.ID] = ev
		r.received[ev.ID] = time.Now()
		r.perOrder[ev.OrderID] = append(r.perOrder[ev.OrderID], ev.Type)
	}
	stall := x < r.Fail+r.Stall
	if stall {
		r.stalled++
	}
	r.mu.Unlock()
	select {
	case r.arrivals <- struct{}{}:
	default:
	}
	if stall {
		time.Sleep(r.StallFor)
	}
	w.WriteHeader(200)
}

func (r *receiver) unique() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// startHooks runs a delivery worker for the env's service until the test ends (called twice:
// two workers, as in two backend instances; the service wakes the last). Its receivers are
// httptest servers on 127.0.0.1, so it allows receivers there (SECKILL_WEBHOOK_ALLOW_CIDRS=127.0.0.1/32).
func (e *env) startHooks(url string, timeout time.Duration, attempts int) *webhook.Worker {
	return e.startHooksWith(&webhook.Worker{DefaultURL: url, Timeout: timeout, MaxAttempts: attempts, Allow: allowLoopback})
}

// startHooksWith runs h as startHooks does; its zero fields take the tests' values (fast
// retries, 32 in flight, both secrets). Allow is h's own: none keeps the whole egress guard.
func (e *env) startHooksWith(h *webhook.Worker) *webhook.Worker {
	e.t.Helper()
	pool, err := webhook.NewPool(context.Background(), e.pg, 10)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(pool.Close)
	h.Pool, h.Log = pool, quietLog()
	if h.Secrets == nil {
		h.Secrets = []string{hookSecretNew, hookSecretOld}
	}
	if h.RetryMin == 0 {
		h.RetryMin, h.RetryMax = 10*time.Millisecond, 200*time.Millisecond
	}
	if h.Concurrency == 0 {
		h.Concurrency = 32
	}
	if h.Poll == 0 {
		h.Poll = 20 * time.Millisecond
	}
	e.rebuild(func(o *Options) { o.Webhooks = h })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
	return h
}

// expectedTypes is what a shop must have heard of each order of the sale, from Postgres.
func (e *env) expectedTypes(sale string) map[string][]string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT order_id, status FROM orders WHERE sale_id = $1`, sale)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string][]string{}
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			e.t.Fatal(err)
		}
		switch st {
		case contract.StatusCreated:
			out[id] = []string{contract.EventOrderCreated}
		case contract.StatusPaid:
			out[id] = []string{contract.EventOrderCreated, contract.EventOrderPaid}
		case contract.StatusCancelled:
			out[id] = []string{contract.EventOrderCreated, contract.EventOrderCancelled}
		case contract.StatusFailed:
			out[id] = []string{contract.EventOrderFailed}
		}
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// checkDelivered asserts that the receiver holds every event of the sale exactly once after
// deduplication, each order's events in the order they happened, and that Postgres agrees.
func (e *env) checkDelivered(r *receiver, sale string) {
	e.t.Helper()
	want := e.expectedTypes(sale)
	r.mu.Lock()
	defer r.mu.Unlock()
	got := 0
	for id, ev := range r.events {
		if ev.SaleID != sale {
			continue
		}
		got++
		if ev.Variant != "" || ev.Quantity != 1 || ev.UserID == "" || ev.At.IsZero() {
			e.t.Fatalf("event %s: %+v", id, ev)
		}
	}
	total := 0
	for order, types := range want {
		total += len(types)
		if !slices.Equal(r.perOrder[order], types) {
			e.t.Fatalf("order %s: received %v, want %v in that order", order, r.perOrder[order], types)
		}
	}
	if got != total {
		e.t.Fatalf("received %d distinct events of the sale, want %d", got, total)
	}
	if n := e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND state <> 'delivered'`, sale); n != 0 {
		e.t.Fatalf("%d events not marked delivered", n)
	}
	if n := e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1`, sale); n != total {
		e.t.Fatalf("%d events recorded, want %d", n, total)
	}
	if r.badSig != 0 {
		e.t.Fatalf("%d requests had a bad signature or body", r.badSig)
	}
}

func TestOrderEventsAreRecordedWithTheirChangeAndDeliveredSignedInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	r := newReceiver(t)
	// No default URL: the sale's own webhook_url decides (created through the admin API).
	e.startHooks("", time.Second, 10)
	_, admin := e.servers(false)
	sale := testenv.ID("hook")
	now := time.Now()
	spec := SaleSpec{ID: sale, Stock: 3, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), WebhookURL: r.srv.URL + "/hooks"}
	b, _ := json.Marshal(spec)
	if code := doJSON(t, "POST", admin.URL+"/admin/sales", adminAuth, string(b), nil); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if _, err := e.svc.Sales.Preheat(ctx, sale); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rdb.Del(context.Background(), contract.MetaKey(sale), contract.BuyersKey(sale)) })
	msgs := e.accept(sale, 5) // 3 fit, 2 fail in Postgres: the split path writes both kinds
	if _, err := (&orders.Writer{Pool: e.pool}).WriteBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	if n := e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND type = 'order.created'`, sale); n != 3 {
		t.Fatalf("%d order.created events for 3 created orders", n)
	}
	var created []string
	rows, _ := e.pool.Query(ctx, `SELECT order_id FROM orders WHERE sale_id = $1 AND status = 'created' ORDER BY order_id`, sale)
	created, _ = pgx.CollectRows(rows, pgx.RowTo[string])
	if _, err := e.svc.Shop.MarkPaid(ctx, created[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Shop.MarkPaid(ctx, created[0]); err != nil {
		t.Fatal(err)
	}
	_, _ = e.pool.Exec(ctx, `UPDATE orders SET created_at = now() - interval '1 hour' WHERE order_id = $1`, created[1])
	if n, err := e.svc.Sweeper.SweepOnce(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	testenv.WaitFor(t, 20*time.Second, "every event delivered", func() bool {
		return e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND state = 'delivered'`, sale) == 7
	})
	e.checkDelivered(r, sale)
	if r.dups != 0 {
		t.Fatalf("%d duplicates from a healthy receiver", r.dups)
	}
	// A sale without a webhook_url, with no default: nothing is recorded.
	quiet := e.sale(2)
	if _, err := (&orders.Writer{Pool: e.pool}).WriteBatch(ctx, e.accept(quiet, 2)); err != nil {
		t.Fatal(err)
	}
	if n := e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1`, quiet); n != 0 {
		t.Fatalf("%d events for a sale without a receiver", n)
	}
}

func TestADeadWebhookHoldsItsOrdersLaterEventsUntilAnAdminReplaysIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	r := newReceiver(t)
	r.Fail = 1
	e.startHooks(r.srv.URL, time.Second, 3)
	w := &orders.Writer{Pool: e.pool, DefaultWebhook: true}
	sale := e.sale(5)
	m := e.accept(sale, 1)[0]
	if _, err := w.WriteBatch(ctx, []contract.OrderMessage{m}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Shop.MarkPaid(ctx, m.OrderID); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 20*time.Second, "order.created parked dead", func() bool {
		return e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE order_id = $1 AND state = 'dead'`, m.OrderID) == 1
	})
	_, admin := e.servers(false)
	var list struct{ Deliveries []webhook.DeliveryView }
	viewer := map[string]string{"Authorization": "Bearer " + testViewerToken}
	if code := doJSON(t, "GET", admin.URL+"/admin/webhooks?state=dead&sale="+sale, viewer, "", &list); code != 200 || len(list.Deliveries) != 1 {
		t.Fatalf("dead list: %d %+v", code, list)
	}
	dead := list.Deliveries[0]
	if dead.Type != contract.EventOrderCreated || dead.Attempts != 3 || dead.LastStatus == nil || *dead.LastStatus != 500 {
		t.Fatalf("dead delivery %+v", dead)
	}
	// The order.paid event waits behind it: the shop never hears "paid" before "created".
	if n := e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE order_id = $1 AND type = 'order.paid' AND state = 'pending' AND attempts = 0`, m.OrderID); n != 1 {
		t.Fatalf("order.paid was attempted before order.created was delivered")
	}
	var ref contract.Refusal
	if code := doJSON(t, "POST", admin.URL+"/admin/webhooks/"+dead.ID+"/replay", viewer, "", &ref); code != 403 {
		t.Fatalf("a viewer replayed: %d", code)
	}
	r.mu.Lock()
	r.Fail = 0
	r.mu.Unlock()
	var replayed webhook.DeliveryView
	if code := doJSON(t, "POST", admin.URL+"/admin/webhooks/"+dead.ID+"/replay", adminAuth, "", &replayed); code != 200 || replayed.State != "pending" {
		t.Fatalf("replay: %d %+v", code, replayed)
	}
	testenv.WaitFor(t, 20*time.Second, "both events delivered", func() bool {
		return e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE order_id = $1 AND state = 'delivered'`, m.OrderID) == 2
	})
	e.checkDelivered(r, sale)
	if code := doJSON(t, "POST", admin.URL+"/admin/webhooks/"+testenv.ID("none")+"/replay", adminAuth, "", &ref); code != 404 {
		t.Fatalf("replay of an unknown event: %d", code)
	}
}

// webhookSaleSize is the sale of the flaky-receiver test: 10 000 orders, fewer under the race
// detector (several times slower; the full size runs without it and in the benchmark).
func webhookSaleSize() int {
	if raceEnabled {
		return 2000
	}
	return 10000
}

func TestEveryEventReachesAFlakyReceiverExactlyOnceAfterDedupInOrderPerOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	n := webhookSaleSize()
	const soldOutInDB = 50
	r := newReceiver(t)
	r.Fail, r.Stall, r.StallFor = 0.5, 0.01, 400*time.Millisecond
	// Two workers, as two backend instances would run: they share the outbox through
	// Postgres alone.
	e.startHooks(r.srv.URL, 250*time.Millisecond, 1000)
	e.startHooks(r.srv.URL, 250*time.Millisecond, 1000)
	w := &orders.Writer{Pool: e.pool, DefaultWebhook: true}
	sale := e.sale(n)
	_, _ = e.pool.Exec(ctx, `UPDATE sales SET stock = stock - $2, initial_stock = initial_stock - $2 WHERE id = $1`, sale, soldOutInDB)
	msgs := e.accept(sale, n)
	start := time.Now()
	for i := 0; i < n; i += 500 {
		if _, err := w.WriteBatch(ctx, msgs[i:min(i+500, n)]); err != nil {
			t.Fatal(err)
		}
		e.svc.Webhooks.Wake()
	}
	// A third paid by the shop (8 at a time), a third left unpaid and released, while the
	// first events are still being delivered.
	var wg sync.WaitGroup
	ids := make(chan string)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if _, err := e.svc.Shop.MarkPaid(ctx, id); err != nil && !errors.Is(err, orders.ErrNotPayable) {
					t.Error(err)
				}
			}
		}()
	}
	var unpaid []string
	for i, m := range msgs[:n-soldOutInDB] {
		switch i % 3 {
		case 0:
			ids <- m.OrderID
		case 1:
			unpaid = append(unpaid, m.OrderID)
		}
	}
	close(ids)
	wg.Wait()
	_, _ = e.pool.Exec(ctx, `UPDATE orders SET created_at = now() - interval '1 hour' WHERE order_id = ANY($1)`, unpaid)
	if _, err := e.svc.Sweeper.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}
	total := e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1`, sale)
	testenv.WaitFor(t, 3*time.Minute, "every event delivered", func() bool {
		return e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND state = 'delivered'`, sale) == total
	})
	took := time.Since(start)
	e.checkDelivered(r, sale)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == 0 || r.stalled == 0 || r.dups == 0 {
		t.Fatalf("the receiver never failed (%d), stalled (%d) or saw a duplicate (%d): the test proved nothing", r.failed, r.stalled, r.dups)
	}
	lags := make([]time.Duration, 0, len(r.events))
	for id, ev := range r.events {
		lags = append(lags, r.received[id].Sub(ev.At))
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	t.Logf("%d orders, %d events in %v (%.0f events/s) over %d requests: %d refused, %d stalled, %d duplicates; lag p50 %v p99 %v",
		n, total, took.Round(time.Millisecond), float64(total)/took.Seconds(), r.requests, r.failed, r.stalled, r.dups,
		lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)*99/100].Round(time.Millisecond))
}

// BenchmarkWebhookDelivery measures the delivery rate and lag to a healthy local receiver: the
// orders of a 5 000-order sale are written (each writing its order.created event), and the
// clock runs until the last event is acknowledged.
//
//	go test -run '^$' -bench WebhookDelivery -benchtime 3x ./backend/
func BenchmarkWebhookDelivery(b *testing.B) {
	const nOrders = 5000
	e := newEnv(b)
	ctx := context.Background()
	r := newReceiver(b)
	e.startHooks(r.srv.URL, 5*time.Second, 15)
	w := &orders.Writer{Pool: e.pool, DefaultWebhook: true}
	var elapsed time.Duration
	var lags []time.Duration
	for i := 0; i < b.N; i++ {
		sale := e.sale(nOrders)
		msgs := e.accept(sale, nOrders)
		start := time.Now()
		for j := 0; j < nOrders; j += 500 {
			if _, err := w.WriteBatch(ctx, msgs[j:j+500]); err != nil {
				b.Fatal(err)
			}
			e.svc.Webhooks.Wake()
		}
		testenv.WaitFor(b, 5*time.Minute, "every event delivered", func() bool {
			return e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND state = 'delivered'`, sale) == nOrders
		})
		elapsed += time.Since(start)
		r.mu.Lock()
		for id, ev := range r.events {
			if ev.SaleID == sale {
				lags = append(lags, r.received[id].Sub(ev.At))
			}
		}
		r.mu.Unlock()
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	b.ReportMetric(float64(nOrders*b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(lags[len(lags)/2].Milliseconds()), "lag-p50-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Milliseconds()), "lag-p99-ms")
	b.ReportMetric(0, "ns/op")
}
