//go:build integration

package backend

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// TestMain lets a test re-execute its own binary as a backend process (for kill -9 tests).
func TestMain(m *testing.M) {
	if os.Getenv("SECKILL_BACKEND_CHILD") == "1" {
		cfg, err := ConfigFromFlags(flagSet(), nil)
		if err == nil {
			ctx, cancel := signalContext()
			err = Run(ctx, cfg)
			cancel()
		}
		if err != nil {
			slog.Error("child backend", "err", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type env struct {
	t    testing.TB
	pg   string
	pool *pgxpool.Pool
	rdb  *redis.Client
	amqp string
	// opts are what svc was built from (rebuild changes them and builds it again).
	opts Options
	svc  *Service
}

// rebuild changes the env's options and builds its service again (New builds every part once:
// a setting changed on the parts afterwards would reach only some of them). Servers started
// before keep the service they were given.
func (e *env) rebuild(change func(o *Options)) {
	change(&e.opts)
	e.svc = New(e.opts)
}

func quietLog() *slog.Logger {
	return slog.New(slog.NewJSONHandler(io.Discard, nil))
}

// newEnv gives a test its own database (a copy of the migrated template), the shared Redis and
// its own vhost. With its own sale ids too, nothing it touches is another test's, so the tests
// over an env run in parallel (t.Parallel); the ones that stay serial say why: fault tests
// (fault_test.go), the cockpit's browser tests (t.Setenv, one Chromium at a time) and the
// Redis outage of the sweeper.
func newEnv(t testing.TB) *env {
	t.Helper()
	url := backendtest.MigratedURL(t)
	return newEnvOn(t, url, testenv.RabbitVhost(t))
}

func newEnvOn(t testing.TB, pgURL, amqpURL string) *env {
	t.Helper()
	ctx := context.Background()
	if err := Migrate(ctx, pgURL); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rdb := testenv.Redis(t)
	comp := &orders.Compensator{Pool: pool, Redis: rdb, Log: quietLog()}
	tokens, err := ParseTokens("admin:"+testAdminToken+":admin,shop:"+testShopToken+":shop,look:"+testViewerToken+":viewer", "")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, 5*time.Second), Compensator: comp,
		Log: quietLog(), Tokens: tokens, Retention: time.Hour, Grace: time.Minute,
		SweeperLock: testenv.ID("sweeper-")}
	t.Cleanup(func() { rdb.Del(context.Background(), lockRedisKeys(opts.SweeperLock)...) })
	return &env{t: t, pg: pgURL, pool: pool, rdb: rdb, amqp: amqpURL, opts: opts, svc: New(opts)}
}

// sale creates an open sale with stock units in Postgres and preheats it into Redis.
func (e *env) sale(stock int) string {
	e.t.Helper()
	id := testenv.ID("s")
	now := time.Now()
	if _, err := e.svc.Sales.CreateSale(context.Background(), SaleSpec{ID: id, Stock: stock, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PayWithin: "15m"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.svc.Sales.Preheat(context.Background(), id); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx := context.Background()
		e.rdb.Del(ctx, contract.MetaKey(id), contract.BuyersKey(id), contract.CompensatedKey(id))
		e.rdb.Del(ctx, lockRedisKeys(lock.SaleKey(id))...)
		e.rdb.SRem(ctx, contract.SalesIndexKey, id)
	})
	return id
}

// accept does what the gate does for n buyers: stock - 1 and buyer recorded, per buyer. It
// returns their messages.
func (e *env) accept(sale string, n int) []contract.OrderMessage {
	e.t.Helper()
	ctx := context.Background()
	msgs := make([]contract.OrderMessage, n)
	pipe := e.rdb.Pipeline()
	for i := range msgs {
		msgs[i] = contract.OrderMessage{OrderID: uuid.Must(uuid.NewV7()).String(), SaleID: sale,
			UserID: "u" + strconv.Itoa(i) + "-" + testenv.ID(""), AcceptedAt: time.Now().UTC()}
		pipe.HIncrBy(ctx, contract.MetaKey(sale), contract.FieldStock, -1)
		pipe.HSet(ctx, contract.BuyersKey(sale), msgs[i].UserID, msgs[i].OrderID)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		e.t.Fatal(err)
	}
	return msgs
}

func (e *env) redisStock(sale string) int {
	e.t.Helper()
	n, err := e.rdb.HGet(context.Background(), contract.MetaKey(sale), contract.FieldStock).Int()
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) dbInt(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// publish sends bodies persistently to the exchange with publisher confirms.
func publish(t testing.TB, url string, sale string, bodies [][]byte) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.DeclareTopology(ch); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var pending []*amqp.DeferredConfirmation
	flush := func() {
		for _, c := range pending {
			if ok, err := c.WaitContext(ctx); err != nil || !ok {
				t.Fatalf("publish not confirmed: %v", err)
			}
		}
		pending = pending[:0]
	}
	for _, b := range bodies {
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, contract.Exchange, contract.RoutingKey(sale), false, false,
			amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: b})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, c)
		if len(pending) == 500 {
			flush()
		}
	}
	flush()
}

func bodies(msgs []contract.OrderMessage) [][]byte {
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i], _ = json.Marshal(m)
	}
	return out
}

func shuffled[T any](s []T) []T {
	out := append([]T(nil), s...)
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// startConsumer runs a consumer in this process until the test ends.
func (e *env) startConsumer(batch int) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c := &orders.Consumer{URL: e.amqp, Writer: &orders.Writer{Pool: e.pool}, Compensator: e.svc.Compensator, BatchSize: batch,
		BatchWait: 10 * time.Millisecond, Log: quietLog()}
	go func() { defer close(done); _ = c.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
}

// queueDepth is the number of messages ready in a queue (unacknowledged ones are not counted).
func queueDepth(t testing.TB, url, queue string) int {
	t.Helper()
	n, _ := queueStat(t, url, queue)
	return n
}

// queueStat is a queue's ready messages and consumers, read in one passive declare: for a
// quorum queue both come from one state of the queue, so a consumer that is gone has also had
// its unacknowledged messages returned by then.
func queueStat(t testing.TB, url, queue string) (messages, consumers int) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	args := contract.QueueArgs()
	if queue == contract.DeadQueue {
		args = amqp.Table{"x-queue-type": "quorum"}
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, args)
	if err != nil {
		t.Fatal(err)
	}
	return q.Messages, q.Consumers
}

// accounted counts a sale's orders, whatever their status.
func (e *env) accounted(sale string) int {
	return e.dbInt(`SELECT count(*) FROM orders WHERE sale_id = $1`, sale)
}

// checkExactlyOnce asserts that every message is one order (created or failed), none twice.
func (e *env) checkExactlyOnce(sale string, msgs []contract.OrderMessage, stock int) {
	e.t.Helper()
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.OrderID
	}
	if n := e.dbInt(`SELECT count(*) FROM orders WHERE order_id = ANY($1)`, ids); n != len(msgs) {
		e.t.Fatalf("%d of %d messages are orders", n, len(msgs))
	}
	if n := e.dbInt(`SELECT count(*) FROM orders WHERE sale_id = $1`, sale); n != len(msgs) {
		e.t.Fatalf("sale has %d orders for %d messages", n, len(msgs))
	}
	created := e.dbInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'created'`, sale)
	dbStock := e.dbInt(`SELECT stock FROM sales WHERE id = $1`, sale)
	if created+dbStock != stock {
		e.t.Fatalf("created %d + stock %d != initial %d", created, dbStock, stock)
	}
}

func doJSON(t testing.TB, method, url string, headers map[string]string, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = stringsReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, url, b, err)
		}
	}
	return resp.StatusCode
}

// lockRedisKeys are the Redis keys of the lock called name (as redislock names them).
func lockRedisKeys(name string) []string {
	k := "seckill:lock:{" + name + "}"
	return []string{k, k + ":fence", k + ":released"}
}

// servers starts the service's two listeners' handlers: the order API and the admin API.
func (e *env) servers(baselines bool) (orders, admin *httptest.Server) {
	e.t.Helper()
	orders = httptest.NewServer(e.svc.OrderHandler())
	admin = httptest.NewServer(e.svc.Handler(NewMetricsRegistry(), baselines))
	e.t.Cleanup(orders.Close)
	e.t.Cleanup(admin.Close)
	return orders, admin
}
