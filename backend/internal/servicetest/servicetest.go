// Package servicetest starts the whole backend over the real servers for the tests of the
// backend's packages (their external test packages, package orders_test and so on, which may
// import the backend's root through it without an import cycle). New gives a test an Env: a
// database of its own (a copy of the migrated template, backendtest.MigratedURL), the shared
// Redis, a RabbitMQ vhost of its own (testenv.RabbitVhost) and the Service backend.New builds
// over them, with the tokens below. With its own sale ids (testenv.ID) nothing it touches is
// another test's, so tests over an Env run in parallel. The Env's methods and the functions
// here are what the tests do with it: sales created and preheated (plain, with variants,
// sharded, in draw mode), buyers accepted as the gate accepts them, messages published,
// consumers, the admin and order listeners, webhook receivers, a child backend for kill -9.
//
// A test that calls New reaches the servers: it is in the integration tier
// (internal/testlayout lists New and NewOn). A test binary that starts a child backend
// (Env.Child) calls Main from its TestMain.
package servicetest

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/controls"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// FlagSet is an empty flag set for backend.ConfigFromFlags, which then reads the environment.
func FlagSet() *flag.FlagSet { return flag.NewFlagSet("child", flag.ContinueOnError) }

// SignalContext ends on SIGINT or SIGTERM, as the backend binary's does (Main's child).
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// ControlServer serves e.Svc's admin API with an admin named alice and a viewer named vera.
func (e *Env) ControlServer() *httptest.Server {
	e.T.Helper()
	toks, err := backend.ParseTokens("alice:"+AliceToken+":admin,vera:"+ViewerToken+":viewer", "")
	if err != nil {
		e.T.Fatal(err)
	}
	e.Rebuild(func(o *backend.Options) { o.Tokens = toks })
	srv := httptest.NewServer(e.Svc.Handler(backend.NewMetricsRegistry(), false))
	e.T.Cleanup(srv.Close)
	return srv
}

// Call sends an admin request with token and decodes the answer into out.
func Call(t testing.TB, srv *httptest.Server, method, path, token, body string, out any) int {
	t.Helper()
	return DoJSON(t, method, srv.URL+path, map[string]string{"Authorization": "Bearer " + token}, body, out)
}

// Subscribe listens on the events channel; the subscription is confirmed when it returns.
func Subscribe(t testing.TB, rdb *redis.Client) <-chan *redis.Message {
	t.Helper()
	ps := rdb.Subscribe(context.Background(), contract.EventsChannel)
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps.Channel()
}

// Await waits for event payload on ch.
func Await(t testing.TB, ch <-chan *redis.Message, payload string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case m := <-ch:
			if m.Payload == payload {
				return
			}
		case <-timeout:
			t.Fatalf("no event %q within 5s", payload)
		}
	}
}

// Audit is the sale's audit trail, newest first, as the admin API lists it.
func (e *Env) Audit(sale string) []admin.AuditEntry {
	e.T.Helper()
	entries, err := e.Svc.Controls.Audit(context.Background(), sale, 100)
	if err != nil {
		e.T.Fatal(err)
	}
	return entries
}

// WithWho is ctx with an admin principal, as the admin routes give the controls.
func WithWho(ctx context.Context) context.Context {
	return httpapi.WithPrincipal(ctx, httpapi.Principal{Name: "test", Role: httpapi.RoleAdmin})
}

// Meta is the sale's meta hash in Redis.
func (e *Env) Meta(id string) map[string]string {
	e.T.Helper()
	return e.Redis.HGetAll(context.Background(), contract.MetaKey(id)).Val()
}

// VariantRow is a variant's initial stock and stock in Postgres.
func (e *Env) VariantRow(sale, v string) (initial, stock int) {
	e.T.Helper()
	if err := e.Pool.QueryRow(context.Background(), `SELECT initial_stock, stock FROM sale_variants WHERE sale_id = $1 AND variant_id = $2`,
		sale, v).Scan(&initial, &stock); err != nil {
		e.T.Fatal(err)
	}
	return initial, stock
}

// DrawReadSale makes a sale whose draw is closed with one entry (the user "u1"), straight in
// Postgres, for the listeners' safety tests.
func DrawReadSale(t *testing.T, e *Env) string {
	t.Helper()
	sale := testenv.ID("d")
	now := time.Now()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := e.Pool.Exec(context.Background(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at) VALUES ($1, 1, 1, $2, $3)`, sale, now, now.Add(time.Hour))
	exec(`INSERT INTO draws (sale_id, opens_at, closes_at, claim_within_ms, seed_commitment, state, entries, entries_root)
		VALUES ($1, $2, $3, 60000, 'c0', 'closed', 1, 'ab')`, sale, now.Add(-3*time.Hour), now.Add(-2*time.Hour))
	exec(`INSERT INTO draw_entries (sale_id, entry_id, user_id, variant, idx, leaf) VALUES ($1, '00000001', 'u1', '', 0, '\xab')`, sale)
	return sale
}

// FaultMessages is the number of messages a fault test sends through its consumer.
const FaultMessages = 6000

// SoftAccounted counts a sale's orders, or -1 while the database does not answer.
func (e *Env) SoftAccounted(sale string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var n int
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE sale_id = $1`, sale).Scan(&n); err != nil {
		return -1
	}
	return n
}

// Child starts this test binary as a backend process (see Main), with extra environment.
func (e *Env) Child(batch int, extra ...string) *exec.Cmd {
	e.T.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SECKILL_BACKEND_CHILD=1", "SECKILL_PG_URL="+e.PG, "SECKILL_AMQP_URL="+e.AMQP,
		"SECKILL_REDIS_ADDR="+testenv.RedisAddr(), "SECKILL_ADMIN_TOKEN=child-admin-token-0123456789-abcdef",
		"SECKILL_BACKEND_LISTEN=127.0.0.1:"+strconv.Itoa(testenv.FreePort(e.T)),
		"SECKILL_BACKEND_ADMIN_LISTEN=127.0.0.1:"+strconv.Itoa(testenv.FreePort(e.T)), "SECKILL_BATCH_SIZE="+strconv.Itoa(batch),
		"SECKILL_BATCH_WAIT=5ms")
	cmd.Env = append(cmd.Env, extra...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// RunUntilFault waits until part of the messages are written, then calls fault; it fails the
// test when the fault came too late to hit a run in progress.
func (e *Env) RunUntilFault(sale string, fault func()) {
	e.T.Helper()
	testenv.WaitFor(e.T, 40*time.Second, "the first orders", func() bool { return e.SoftAccounted(sale) >= FaultMessages/10 })
	fault()
}

// AliceToken (admin) and ViewerToken (viewer) are the cockpit tests' named tokens.
const (
	AliceToken  = "alice-admin-token-0123456789-abcdef"
	ViewerToken = "vera-viewer-token-0123456789-abcdef"
)

// The tokens of New's service: admin, shop and viewer.
const (
	TestAdminToken  = "test-admin-token-0123456789-abcdefgh"
	TestShopToken   = "test-shop-token-0123456789-abcdefghi"
	TestViewerToken = "test-viewer-token-0123456789-abcdefg"
)

// AdminAuth and ShopAuth are the Authorization headers of TestAdminToken and TestShopToken.
var (
	AdminAuth = map[string]string{"Authorization": "Bearer " + TestAdminToken}
	ShopAuth  = map[string]string{"Authorization": "Bearer " + TestShopToken}
)

// HookSecretNew and HookSecretOld are webhook signing secrets (a rotation: new first).
const (
	HookSecretNew = "hook-secret-new-0123456789"
	HookSecretOld = "hook-secret-old-0123456789"
)

// Main lets a test re-execute its own binary as a backend process (for kill -9 tests).
func Main(m *testing.M) {
	if os.Getenv("SECKILL_BACKEND_CHILD") == "1" {
		cfg, err := backend.ConfigFromFlags(FlagSet(), nil)
		if err == nil {
			ctx, cancel := SignalContext()
			err = backend.Run(ctx, cfg)
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

// Env is one test's whole backend: its own database (Migrate's schema), the shared Redis, its
// own RabbitMQ vhost and the Service New builds over them (backend.New from Opts).
type Env struct {
	T     testing.TB
	PG    string
	Pool  *pgxpool.Pool
	Redis *redis.Client
	AMQP  string
	// Opts are what Svc was built from (Rebuild changes them and builds it again).
	Opts backend.Options
	Svc  *backend.Service
}

// Rebuild changes the env's options and builds its service again (New builds every part once:
// a setting changed on the parts afterwards would reach only some of them). Servers started
// before keep the service they were given.
func (e *Env) Rebuild(change func(o *backend.Options)) {
	change(&e.Opts)
	e.Svc = backend.New(e.Opts)
}

// QuietLog is a logger that writes nowhere.
func QuietLog() *slog.Logger {
	return slog.New(slog.NewJSONHandler(io.Discard, nil))
}

// New gives a test its own database (a copy of the migrated template), the shared Redis and
// its own vhost. With its own sale ids too, nothing it touches is another test's, so the tests
// over an env run in parallel (t.Parallel); the ones that stay serial say why: fault tests
// (backend/orders/fault_test.go), the cockpit's browser tests (t.Setenv, one Chromium at a time) and the
// Redis outage of the sweeper.
func New(t testing.TB) *Env {
	t.Helper()
	url := backendtest.MigratedURL(t)
	return NewOn(t, url, testenv.RabbitVhost(t))
}

// NewOn is New over the given database and vhost (a fault test's private servers): it migrates
// the database, and its Service has the three tokens (TestAdminToken, TestShopToken,
// TestViewerToken), a sweeper lock of its own and a one-minute reconcile grace.
func NewOn(t testing.TB, pgURL, amqpURL string) *Env {
	t.Helper()
	ctx := context.Background()
	if err := backend.Migrate(ctx, pgURL); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rdb := testenv.Redis(t)
	comp := &orders.Compensator{Pool: pool, Redis: rdb, Log: QuietLog()}
	tokens, err := backend.ParseTokens("admin:"+TestAdminToken+":admin,shop:"+TestShopToken+":shop,look:"+TestViewerToken+":viewer", "")
	if err != nil {
		t.Fatal(err)
	}
	opts := backend.Options{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, 5*time.Second), Compensator: comp,
		Log: QuietLog(), Tokens: tokens, Retention: time.Hour, Grace: time.Minute,
		SweeperLock: testenv.ID("sweeper-")}
	t.Cleanup(func() { rdb.Del(context.Background(), LockRedisKeys(opts.SweeperLock)...) })
	return &Env{T: t, PG: pgURL, Pool: pool, Redis: rdb, AMQP: amqpURL, Opts: opts, Svc: backend.New(opts)}
}

// Sale creates an open sale with stock units in Postgres and preheats it into Redis.
func (e *Env) Sale(stock int) string {
	e.T.Helper()
	id := testenv.ID("s")
	now := time.Now()
	if _, err := e.Svc.Sales.CreateSale(context.Background(), backend.SaleSpec{ID: id, Stock: stock, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PayWithin: "15m"}); err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.Svc.Sales.Preheat(context.Background(), id); err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() {
		ctx := context.Background()
		e.Redis.Del(ctx, contract.MetaKey(id), contract.BuyersKey(id), contract.CompensatedKey(id))
		e.Redis.Del(ctx, LockRedisKeys(lock.SaleKey(id))...)
		e.Redis.SRem(ctx, contract.SalesIndexKey, id)
	})
	return id
}

// Accept does what the gate does for n buyers: stock - 1 and buyer recorded, per buyer. It
// returns their messages.
func (e *Env) Accept(sale string, n int) []contract.OrderMessage {
	e.T.Helper()
	ctx := context.Background()
	msgs := make([]contract.OrderMessage, n)
	pipe := e.Redis.Pipeline()
	for i := range msgs {
		msgs[i] = contract.OrderMessage{OrderID: uuid.Must(uuid.NewV7()).String(), SaleID: sale,
			UserID: "u" + strconv.Itoa(i) + "-" + testenv.ID(""), AcceptedAt: time.Now().UTC()}
		pipe.HIncrBy(ctx, contract.MetaKey(sale), contract.FieldStock, -1)
		pipe.HSet(ctx, contract.BuyersKey(sale), msgs[i].UserID, msgs[i].OrderID)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		e.T.Fatal(err)
	}
	return msgs
}

// RedisStock is the sale's stock in Redis (its meta's stock field).
func (e *Env) RedisStock(sale string) int {
	e.T.Helper()
	n, err := e.Redis.HGet(context.Background(), contract.MetaKey(sale), contract.FieldStock).Int()
	if err != nil {
		e.T.Fatal(err)
	}
	return n
}

// DBInt runs a query returning one integer on the env's database.
func (e *Env) DBInt(q string, args ...any) int {
	e.T.Helper()
	var n int
	if err := e.Pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.T.Fatalf("%s: %v", q, err)
	}
	return n
}

// Publish sends bodies persistently to the exchange with publisher confirms.
func Publish(t testing.TB, url string, sale string, bodies [][]byte) {
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

// Bodies are the messages as the gate publishes them (JSON).
func Bodies(msgs []contract.OrderMessage) [][]byte {
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i], _ = json.Marshal(m)
	}
	return out
}

// Shuffled is a shuffled copy of s.
func Shuffled[T any](s []T) []T {
	out := append([]T(nil), s...)
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// StartConsumer runs a consumer in this process until the test ends.
func (e *Env) StartConsumer(batch int) {
	e.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c := &orders.Consumer{URL: e.AMQP, Writer: &orders.Writer{Pool: e.Pool}, Compensator: e.Svc.Compensator, BatchSize: batch,
		BatchWait: 10 * time.Millisecond, Log: QuietLog()}
	go func() { defer close(done); _ = c.Run(ctx) }()
	e.T.Cleanup(func() { cancel(); <-done })
}

// QueueDepth is the number of messages ready in a queue (unacknowledged ones are not counted).
func QueueDepth(t testing.TB, url, queue string) int {
	t.Helper()
	n, _ := QueueStat(t, url, queue)
	return n
}

// QueueStat is a queue's ready messages and consumers, read in one passive declare: for a
// quorum queue both come from one state of the queue, so a consumer that is gone has also had
// its unacknowledged messages returned by then.
func QueueStat(t testing.TB, url, queue string) (messages, consumers int) {
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

// Accounted counts a sale's orders, whatever their status.
func (e *Env) Accounted(sale string) int {
	return e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1`, sale)
}

// CheckExactlyOnce asserts that every message is one order (created or failed), none twice.
func (e *Env) CheckExactlyOnce(sale string, msgs []contract.OrderMessage, stock int) {
	e.T.Helper()
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.OrderID
	}
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE order_id = ANY($1)`, ids); n != len(msgs) {
		e.T.Fatalf("%d of %d messages are orders", n, len(msgs))
	}
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1`, sale); n != len(msgs) {
		e.T.Fatalf("sale has %d orders for %d messages", n, len(msgs))
	}
	created := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'created'`, sale)
	dbStock := e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale)
	if created+dbStock != stock {
		e.T.Fatalf("created %d + stock %d != initial %d", created, dbStock, stock)
	}
}

// DoJSON sends one request with headers and body ("" for none), decodes a JSON answer into
// out (nil: ignored) and returns the status.
func DoJSON(t testing.TB, method, url string, headers map[string]string, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
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

// LockRedisKeys are the Redis keys of the lock called name (as redislock names them).
func LockRedisKeys(name string) []string {
	k := "seckill:lock:{" + name + "}"
	return []string{k, k + ":fence", k + ":released"}
}

// Servers starts the service's two listeners' handlers: the order API and the admin API.
func (e *Env) Servers(baselines bool) (orders, admin *httptest.Server) {
	e.T.Helper()
	orders = httptest.NewServer(e.Svc.OrderHandler())
	admin = httptest.NewServer(e.Svc.Handler(backend.NewMetricsRegistry(), baselines))
	e.T.Cleanup(orders.Close)
	e.T.Cleanup(admin.Close)
	return orders, admin
}

// Hunger is sales.Hunger (the shards that asked for units), named for the sharding tests.
type Hunger = sales.Hunger

// HungryShards is sales.HungryShards.
func HungryShards(s []bool) *Hunger { return sales.HungryShards(s) }

// ShardStocks is sales.ShardStocks: each shard's stock of the sales ids.
func ShardStocks(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]int64, error) {
	return sales.ShardStocks(ctx, rdb, ids)
}

// ShardedSale creates an open sale of stock units over k shards and preheats it.
func (e *Env) ShardedSale(stock, k int) string {
	e.T.Helper()
	return ShardedSaleOn(e.T, e.Svc, e.Redis, stock, k)
}

// ShardedSaleOn creates and preheats an open sale of stock units over k shards through svc,
// and removes its Redis keys when the test ends.
func ShardedSaleOn(t testing.TB, svc *backend.Service, rdb redis.UniversalClient, stock, k int) string {
	t.Helper()
	ctx := context.Background()
	id := testenv.ID("s")
	now := time.Now()
	if _, err := svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: id, Stock: stock, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PayWithin: "15m", Shards: k}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Sales.Preheat(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range contract.ShardIDs(id, k) {
			for _, key := range []string{contract.MetaKey(s), contract.BuyersKey(s), contract.CompensatedKey(s), contract.OutboxKey(s),
				contract.MovesKey(s), contract.MovedInKey(s)} {
				rdb.Del(ctx, key)
			}
			rdb.SRem(ctx, contract.SalesIndexKey, s)
		}
		rdb.Del(ctx, contract.MetaKey(id))
		rdb.Del(ctx, LockRedisKeys(lock.SaleKey(id))...)
		rdb.SRem(ctx, contract.SalesIndexKey, id)
	})
	return id
}

// ShardedVariantSale creates an open sale of the given variants over k shards, with limit,
// and preheats it (each shard gets its part of every variant).
func (e *Env) ShardedVariantSale(k, limit int, variants ...backend.VariantSpec) string {
	e.T.Helper()
	ctx := context.Background()
	id := testenv.ID("svr")
	now := time.Now()
	if _, err := e.Svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: id, Shards: k, PerUserLimit: limit, Variants: variants,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PayWithin: "15m"}); err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() {
		for _, s := range contract.ShardIDs(id, k) {
			e.Redis.Del(ctx, contract.MetaKey(s), contract.BuyersKey(s), contract.CompensatedKey(s), contract.HeldKey(s),
				contract.OutboxKey(s), contract.TokensKey(s), contract.MovesKey(s), contract.MovedInKey(s), controls.StockRequestsKey(s))
			e.Redis.SRem(ctx, contract.SalesIndexKey, s)
		}
		e.Redis.Del(ctx, contract.MetaKey(id))
		e.Redis.Del(ctx, LockRedisKeys(lock.SaleKey(id))...)
		e.Redis.SRem(ctx, contract.SalesIndexKey, id)
	})
	if _, err := e.Svc.Sales.Preheat(ctx, id); err != nil {
		e.T.Fatal(err)
	}
	return id
}

// PlaceVariants overwrites every shard's units: units[i][v] of variant v on shard i, the
// shard's stock their sum (the sale's variants must be the same).
func (e *Env) PlaceVariants(sale string, units []map[string]int) {
	e.T.Helper()
	for i, us := range units {
		sum := 0
		fields := []any{}
		for v, n := range us {
			fields = append(fields, contract.VariantField(v), n)
			sum += n
		}
		fields = append(fields, contract.FieldStock, sum)
		if err := e.Redis.HSet(context.Background(), contract.MetaKey(contract.ShardID(sale, i)), fields...).Err(); err != nil {
			e.T.Fatal(err)
		}
	}
}

// StartRebalancer runs RunRebalancer until the test ends and waits for its subscription.
func (e *Env) StartRebalancer() {
	e.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	subscribed := make(chan struct{}, 1)
	e.Svc.Sales.Subscribed = func() {
		select {
		case subscribed <- struct{}{}:
		default:
		}
	}
	stopped := make(chan struct{})
	go func() { e.Svc.Sales.RunRebalancer(ctx); close(stopped) }()
	e.T.Cleanup(func() { cancel(); <-stopped })
	select {
	case <-subscribed:
	case <-time.After(5 * time.Second):
		e.T.Fatal("the rebalancer did not subscribe")
	}
}

// DrawSaleThroughTheAPI creates a draw sale through POST /admin/sales as alice (its entries
// open an hour ago and close in an hour, its purchase window follows; stocks per variant, or
// {"": n} for a sale without variants), preheats it (which draws
// its seed into Redis) and returns its id and the start of its purchase window. Every Redis key
// of the sale is removed at the end.
func (e *Env) DrawSaleThroughTheAPI(srv string, stocks map[string]int) (string, time.Time) {
	e.T.Helper()
	return e.DrawSaleClosingAt(srv, stocks, time.Now().UTC().Truncate(time.Second).Add(time.Hour))
}

// DrawSaleClosingAt is drawSaleThroughTheAPI with the entries closing at closes (whole
// seconds), the purchase window starting then and lasting an hour.
func (e *Env) DrawSaleClosingAt(srv string, stocks map[string]int, closes time.Time) (string, time.Time) {
	e.T.Helper()
	id := testenv.ID("d")
	spec := map[string]any{"id": id, "starts_at": closes, "ends_at": closes.Add(time.Hour),
		"draw": map[string]any{"opens_at": closes.Add(-2 * time.Hour), "closes_at": closes, "claim_within": "10m"}}
	if n, ok := stocks[""]; ok {
		spec["stock"] = n
	} else {
		variants := make([]map[string]any, 0, len(stocks))
		for v, n := range stocks {
			variants = append(variants, map[string]any{"id": v, "stock": n})
		}
		spec["variants"] = variants
	}
	body, _ := json.Marshal(spec)
	e.T.Cleanup(func() {
		// The sale's keys all share its hash tag; the draw adds some (entries, spent nonces,
		// waves) beside the meta, so they are found by it rather than listed.
		ctx := context.Background()
		keys, _ := e.Redis.Keys(ctx, "seckill:"+contract.SaleTag(id)+"*").Result()
		if len(keys) > 0 {
			e.Redis.Del(ctx, keys...)
		}
		e.Redis.Del(ctx, LockRedisKeys(lock.SaleKey(id))...)
		e.Redis.SRem(ctx, contract.SalesIndexKey, id)
	})
	alice := map[string]string{"Authorization": "Bearer " + AliceToken}
	var st admin.SaleStatus
	if code := DoJSON(e.T, "POST", srv+"/admin/sales", alice, string(body), &st); code != http.StatusCreated || st.Draw == nil {
		e.T.Fatalf("create the draw sale: %d %+v", code, st)
	}
	if code := DoJSON(e.T, "POST", srv+"/admin/sales/"+id+"/preheat", alice, "", nil); code != http.StatusOK {
		e.T.Fatalf("preheat the draw sale: %d", code)
	}
	return id, closes
}

// EnterDraw enters user into sale's draw for variant with draw_enter.lua, the very call the
// gateway's draw handler makes (caddymodule/draw), or withdraws the entry.
func (e *Env) EnterDraw(sale, user, variant string, withdraw bool) {
	e.T.Helper()
	rep, err := lua.DrawEnterCall{Sale: sale, User: user, Variant: variant, Withdraw: withdraw}.Run(context.Background(), e.Redis)
	if err != nil || rep.Code != 0 {
		e.T.Fatalf("draw_enter.lua for %s (%q, withdraw %v): code %d, %v", user, variant, withdraw, rep.Code, err)
	}
}

// VariantSale creates and preheats an open sale with the given variants (id:stock) and limit.
func (e *Env) VariantSale(limit int, variants ...backend.VariantSpec) string {
	e.T.Helper()
	id := testenv.ID("sv")
	now := time.Now()
	if _, err := e.Svc.Sales.CreateSale(context.Background(), backend.SaleSpec{ID: id, Variants: variants, PerUserLimit: limit,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PayWithin: "15m"}); err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.Svc.Sales.Preheat(context.Background(), id); err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() {
		ctx := context.Background()
		e.Redis.Del(ctx, contract.MetaKey(id), contract.BuyersKey(id), contract.CompensatedKey(id), contract.HeldKey(id),
			contract.OutboxKey(id), contract.TokensKey(id))
		e.Redis.Del(ctx, LockRedisKeys(lock.SaleKey(id))...)
		e.Redis.SRem(ctx, contract.SalesIndexKey, id)
	})
	return id
}

// Buy runs the real gate script for one purchase and returns the message the relay would send
// (ok false: refused, with the reply).
func (e *Env) Buy(sale, user, variant string, q int) (contract.OrderMessage, []any, bool) {
	e.T.Helper()
	order := uuid.Must(uuid.NewV7()).String()
	reply, err := lua.GateCall{Sale: sale, User: user, OrderID: order, Group: "relay", Variant: variant, Quantity: q}.Run(context.Background(), e.Redis)
	if err != nil {
		e.T.Fatal(err)
	}
	if reply[0].(int64) != 0 {
		return contract.OrderMessage{}, reply, false
	}
	m := contract.OrderMessage{OrderID: order, SaleID: sale, UserID: user, AcceptedAt: time.Now().UTC()}
	if len(reply) > 3 {
		m.Variant, m.Quantity, m.SeqNo = reply[3].(string), int(reply[4].(int64)), int(reply[5].(int64))
	}
	return m, reply, true
}

// VariantUnits checks per variant, in Postgres: stock + units held by created/paid orders ==
// initial stock, and the sale's total is the sum of its variants'. It returns the units held
// per variant.
func (e *Env) VariantUnits(sale string) map[string]int {
	e.T.Helper()
	ctx := context.Background()
	rows, err := e.Pool.Query(ctx, `SELECT v.variant_id, v.initial_stock, v.stock,
			COALESCE((SELECT sum(quantity) FROM orders o WHERE o.sale_id = v.sale_id AND o.variant_id = v.variant_id AND o.status IN ('created', 'paid')), 0)::int
		FROM sale_variants v WHERE v.sale_id = $1`, sale)
	if err != nil {
		e.T.Fatal(err)
	}
	held := map[string]int{}
	sumStock, sumInitial := 0, 0
	for rows.Next() {
		var v string
		var initial, stock, units int
		if err := rows.Scan(&v, &initial, &stock, &units); err != nil {
			e.T.Fatal(err)
		}
		if stock+units != initial {
			e.T.Errorf("variant %s: postgres stock %d + %d units held != initial %d", v, stock, units, initial)
		}
		held[v] = units
		sumStock += stock
		sumInitial += initial
	}
	var total, initial int
	if err := e.Pool.QueryRow(ctx, `SELECT stock, initial_stock FROM sales WHERE id = $1`, sale).Scan(&total, &initial); err != nil {
		e.T.Fatal(err)
	}
	if total != sumStock || initial != sumInitial {
		e.T.Errorf("sale stock %d / initial %d, variants' sum %d / %d", total, initial, sumStock, sumInitial)
	}
	return held
}

// publicDNS answers every name with a public address: the world as the create-time check saw
// it, before the name was pointed inside.
// allowLoopback is SECKILL_WEBHOOK_ALLOW_CIDRS=127.0.0.1/32, make run's: the tests' receivers
// are httptest servers there.
var AllowLoopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// Receiver is a shop's webhook endpoint: it checks the signature (with the old secret: the
// sender is mid-rotation), dedupes by event id, and can fail or stall on purpose.
type Receiver struct {
	T testing.TB
	// Fail is the share of requests answered 500 without being recorded; Stall the share
	// recorded and then held for StallFor before the 200 (past the sender's timeout: the
	// sender retries an event the shop already has).
	Fail, Stall float64
	StallFor    time.Duration

	Mu        sync.Mutex
	Events    map[string]contract.WebhookEvent // by id, first copy
	Received  map[string]time.Time             // first arrival, by id
	PerOrder  map[string][]string              // event types in first-arrival order, by order
	Requests  int
	Failed    int
	Stalled   int
	Dups      int
	BadSig    int
	Arrivals  chan struct{}
	Srv       *httptest.Server
	FirstSeen time.Time
}

// NewReceiver starts a webhook receiver (Receiver) on a local server closed when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{T: t, Events: map[string]contract.WebhookEvent{}, Received: map[string]time.Time{},
		PerOrder: map[string][]string{}, Arrivals: make(chan struct{}, 1)}
	r.Srv = httptest.NewServer(r)
	t.Cleanup(r.Srv.Close)
	return r
}

// ServeHTTP checks one delivery's signature and records its events (or fails or stalls as told).
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(400)
		return
	}
	r.Mu.Lock()
	r.Requests++
	r.Mu.Unlock()
	if err := contract.VerifyWebhook(HookSecretOld, req.Header.Get(contract.SignatureHeader), body, time.Minute, time.Now()); err != nil {
		r.Mu.Lock()
		r.BadSig++
		r.Mu.Unlock()
		w.WriteHeader(400)
		return
	}
	x := rand.Float64()
	if x < r.Fail {
		r.Mu.Lock()
		r.Failed++
		r.Mu.Unlock()
		w.WriteHeader(500)
		return
	}
	var ev contract.WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" || ev.ID != req.Header.Get("Idempotency-Key") {
		r.Mu.Lock()
		r.BadSig++
		r.Mu.Unlock()
		w.WriteHeader(400)
		return
	}
	r.Mu.Lock()
	if _, ok := r.Events[ev.ID]; ok {
		r.Dups++
	} else {
		r.Events[ev.ID] = ev
		r.Received[ev.ID] = time.Now()
		r.PerOrder[ev.OrderID] = append(r.PerOrder[ev.OrderID], ev.Type)
	}
	stall := x < r.Fail+r.Stall
	if stall {
		r.Stalled++
	}
	r.Mu.Unlock()
	select {
	case r.Arrivals <- struct{}{}:
	default:
	}
	if stall {
		time.Sleep(r.StallFor)
	}
	w.WriteHeader(200)
}

// Unique is the number of distinct events received.
func (r *Receiver) Unique() int {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	return len(r.Events)
}

// StartHooks runs a delivery worker for the env's service until the test ends (called twice:
// two workers, as in two backend instances; the service wakes the last). Its receivers are
// httptest servers on 127.0.0.1, so it allows receivers there (SECKILL_WEBHOOK_ALLOW_CIDRS=127.0.0.1/32).
func (e *Env) StartHooks(url string, timeout time.Duration, attempts int) *webhook.Worker {
	return e.StartHooksWith(&webhook.Worker{DefaultURL: url, Timeout: timeout, MaxAttempts: attempts, Allow: AllowLoopback})
}

// StartHooksWith runs h as StartHooks does; its zero fields take the tests' values (fast
// retries, 32 in flight, both secrets). Allow is h's own: none keeps the whole egress guard.
func (e *Env) StartHooksWith(h *webhook.Worker) *webhook.Worker {
	e.T.Helper()
	pool, err := webhook.NewPool(context.Background(), e.PG, 10)
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(pool.Close)
	h.Pool, h.Log = pool, QuietLog()
	if h.Secrets == nil {
		h.Secrets = []string{HookSecretNew, HookSecretOld}
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
	e.Rebuild(func(o *backend.Options) { o.Webhooks = h })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	e.T.Cleanup(func() { cancel(); <-done })
	return h
}

// ExpectedTypes is what a shop must have heard of each order of the sale, from Postgres.
func (e *Env) ExpectedTypes(sale string) map[string][]string {
	e.T.Helper()
	rows, err := e.Pool.Query(context.Background(), `SELECT order_id, status FROM orders WHERE sale_id = $1`, sale)
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string][]string{}
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			e.T.Fatal(err)
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
		e.T.Fatal(err)
	}
	return out
}

// CheckDelivered asserts that the receiver holds every event of the sale exactly once after
// deduplication, each order's events in the order they happened, and that Postgres agrees.
func (e *Env) CheckDelivered(r *Receiver, sale string) {
	e.T.Helper()
	want := e.ExpectedTypes(sale)
	r.Mu.Lock()
	defer r.Mu.Unlock()
	got := 0
	for id, ev := range r.Events {
		if ev.SaleID != sale {
			continue
		}
		got++
		if ev.Variant != "" || ev.Quantity != 1 || ev.UserID == "" || ev.At.IsZero() {
			e.T.Fatalf("event %s: %+v", id, ev)
		}
	}
	total := 0
	for order, types := range want {
		total += len(types)
		if !slices.Equal(r.PerOrder[order], types) {
			e.T.Fatalf("order %s: received %v, want %v in that order", order, r.PerOrder[order], types)
		}
	}
	if got != total {
		e.T.Fatalf("received %d distinct events of the sale, want %d", got, total)
	}
	if n := e.DBInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND state <> 'delivered'`, sale); n != 0 {
		e.T.Fatalf("%d events not marked delivered", n)
	}
	if n := e.DBInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1`, sale); n != total {
		e.T.Fatalf("%d events recorded, want %d", n, total)
	}
	if r.BadSig != 0 {
		e.T.Fatalf("%d requests had a bad signature or body", r.BadSig)
	}
}
