//go:build integration

package systemtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/relay"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// The winner's path after the gate: the relay (outbox -> RabbitMQ, publisher confirms) and the
// backend's consumer (RabbitMQ -> Postgres, one transaction per batch), each gathering what
// arrives while it has work in flight, for at most its window (docs/gate.md "The relay",
// docs/backend.md "The consumer").

// pipeline is one sale of a system with a relay and a consumer of its own.
type pipeline struct {
	s     *system
	sale  string
	stock int
	relay *relay.Relay
	// writes is the consumer's own pool: closing it ends its server processes, which flushes
	// their statistics (pg_stat_database) at once.
	writes *pgxpool.Pool

	mu       sync.Mutex
	accepted map[string]time.Time // order id -> when the gate script was called for it
	users    int
}

// pipeline starts a relay (rc: its config, zero values the defaults) and a consumer on the
// system for a new sale of stock units; consumerWait is the consumer's window (0: the default).
func (s *system) pipeline(t testing.TB, stock int, rc relay.Config, consumerWait time.Duration) *pipeline {
	t.Helper()
	ctx := context.Background()
	p := &pipeline{s: s, sale: s.sale(stock), stock: stock, accepted: map[string]time.Time{}}
	zlog, slogger := zap.NewNop(), quietLog()
	if os.Getenv("SECKILL_TEST_LOG") != "" { // the relay's and the consumer's logs on stderr
		zlog, _ = zap.NewDevelopment()
		slogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	broker := caddymodule.NewBroker(s.amqp, zlog)
	t.Cleanup(func() { _ = broker.Destruct() })
	p.relay = relay.New(relay.Options{Redis: s.rdb, Connect: broker.WaitConnection, Cork: broker.Cork, Namespace: s.ns,
		Config: rc, Logger: zlog})
	p.relay.Start(ctx)
	t.Cleanup(func() { _ = p.relay.Stop() })

	writes, err := pgxpool.NewWithConfig(ctx, s.pool.Config())
	if err != nil {
		t.Fatal(err)
	}
	p.writes = writes
	cctx, cancel := context.WithCancel(ctx)
	c := &orders.Consumer{URL: s.amqp, Writer: &orders.Writer{Pool: writes}, Compensator: s.svc.Compensator,
		BatchWait: consumerWait, Log: slogger}
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(cctx) }()
	t.Cleanup(func() { cancel(); <-done; writes.Close() })
	return p
}

// accept does what the gate does for one new winner: the gate script (stock, buyer, outbox
// entry), then the relay's wake-up. It returns the order id.
func (p *pipeline) accept() (string, error) {
	p.mu.Lock()
	user := "u" + strconv.Itoa(p.users)
	p.users++
	p.mu.Unlock()
	order := uuid.Must(uuid.NewV7()).String()
	at := time.Now()
	res, err := lua.GateCall{Sale: p.sale, User: user, OrderID: order, Group: relay.Group}.Run(context.Background(), p.s.rdb)
	if err != nil {
		return "", err
	}
	if len(res) < 1 || res[0] != int64(0) {
		return "", fmt.Errorf("the gate did not accept %s: %v", user, res)
	}
	p.relay.Notify(p.sale)
	p.mu.Lock()
	p.accepted[order] = at
	p.mu.Unlock()
	return order, nil
}

// arrive accepts winners at rate per second for d, each at its time on a fixed schedule (an
// open model: a late arrival does not delay the next ones), and returns how many it accepted.
func (p *pipeline) arrive(rate int, d time.Duration) (int, error) {
	start := time.Now()
	n := int(d.Seconds() * float64(rate))
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := p.accept(); err != nil {
			return i, err
		}
	}
	return n, nil
}

func (p *pipeline) orderIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, 0, len(p.accepted))
	for id := range p.accepted {
		ids = append(ids, id)
	}
	return ids
}

// rows counts the sale's orders, or -1 while the database does not answer.
func (p *pipeline) rows() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var n int
	if err := p.s.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE sale_id = $1`, p.sale).Scan(&n); err != nil {
		return -1
	}
	return n
}

// settled reports whether the relay has acknowledged every outbox entry (none left, none
// pending).
func (p *pipeline) settled() bool {
	return p.s.rdb.XLen(context.Background(), contract.OutboxKey(p.sale)).Val() == 0
}

// outboxState says what the sale's outbox holds, for a failure's message.
func (p *pipeline) outboxState() string {
	ctx := context.Background()
	key := contract.OutboxKey(p.sale)
	pend, err := p.s.rdb.XPending(ctx, key, relay.Group).Result()
	if err != nil {
		return fmt.Sprintf("outbox: %d entries, pending unknown (%v)", p.s.rdb.XLen(ctx, key).Val(), err)
	}
	return fmt.Sprintf("outbox: %d entries, %d pending (%v)", p.s.rdb.XLen(ctx, key).Val(), pend.Count, pend.Consumers)
}

// brokerState says whether the broker at url takes connections and what its queue holds.
func brokerState(url string) string {
	conn, err := amqp.Dial(url)
	if err != nil {
		return "no connection: " + err.Error()
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return "no channel: " + err.Error()
	}
	q, err := ch.QueueDeclarePassive(contract.Queue, true, false, false, false, contract.QueueArgs())
	if err != nil {
		return "queue: " + err.Error()
	}
	return fmt.Sprintf("queue %d ready, %d consumers", q.Messages, q.Consumers)
}

// waitsByOrder is, per winner, the time from the gate's acceptance to the start of the
// transaction that wrote its order (created_at is the transaction's now()): what the relay, the
// broker and the consumer's collection took, the commit itself left out.
func (p *pipeline) waitsByOrder(t testing.TB) map[string]time.Duration {
	t.Helper()
	rows, err := p.s.pool.Query(context.Background(), `SELECT order_id, created_at FROM orders WHERE sale_id = $1`, p.sale)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]time.Duration{}
	for rows.Next() {
		var id string
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		if a, ok := p.accepted[id]; ok {
			out[id] = at.Sub(a)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// waits are waitsByOrder's times, sorted.
func (p *pipeline) waits(t testing.TB) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, d := range p.waitsByOrder(t) {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// tap binds a queue of its own to the orders exchange (a copy of every message the relay
// publishes) and records when each order arrives through it: the relay's part of a winner's
// wait, without taking messages from the consumer.
func (p *pipeline) tap(t testing.TB) map[string]time.Time {
	t.Helper()
	conn, err := amqp.Dial(p.s.amqp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, contract.RoutingKey(p.sale), contract.Exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]time.Time{}
	go func() {
		for d := range ds {
			now := time.Now()
			p.mu.Lock()
			if _, ok := seen[d.MessageId]; !ok {
				seen[d.MessageId] = now
			}
			p.mu.Unlock()
		}
	}()
	return seen
}

// relayWaits are, per winner tapped, the time from acceptance to the tap's delivery, sorted.
func (p *pipeline) relayWaits(seen map[string]time.Time) []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Duration
	for id, at := range seen {
		if a, ok := p.accepted[id]; ok {
			out = append(out, at.Sub(a))
		}
	}
	slices.Sort(out)
	return out
}

// checkEveryWinnerOnce fails the test unless every accepted winner is exactly one order of the
// sale (none lost, none twice, no other), its units taken once, and the outbox drained.
func (p *pipeline) checkEveryWinnerOnce(t testing.TB) {
	t.Helper()
	ids := p.orderIDs()
	var found, all, created, stock int
	ctx := context.Background()
	if err := p.s.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE order_id = ANY($1)`, ids).Scan(&found); err != nil {
		t.Fatal(err)
	}
	if err := p.s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'created') FROM orders WHERE sale_id = $1`,
		p.sale).Scan(&all, &created); err != nil {
		t.Fatal(err)
	}
	if err := p.s.pool.QueryRow(ctx, `SELECT stock FROM sales WHERE id = $1`, p.sale).Scan(&stock); err != nil {
		t.Fatal(err)
	}
	if found != len(ids) {
		t.Errorf("%d of %d accepted winners have an order: %d lost", found, len(ids), len(ids)-found)
	}
	if all != len(ids) {
		t.Errorf("the sale has %d orders for %d winners", all, len(ids))
	}
	if created != len(ids) || created+stock != p.stock {
		t.Errorf("%d created orders and %d units left of %d, for %d winners", created, stock, p.stock, len(ids))
	}
	key := contract.OutboxKey(p.sale)
	if n := p.s.rdb.XLen(ctx, key).Val(); n != 0 {
		t.Errorf("the outbox still holds %d entries", n)
	}
	if pend, err := p.s.rdb.XPending(ctx, key, relay.Group).Result(); err != nil || pend.Count != 0 {
		t.Errorf("outbox entries pending: %+v, %v", pend, err)
	}
}

// histogram is a histogram's count and sum, read from collectors (the relay's or the
// backend's, which are process-wide: a test takes the difference over its run).
func histogram(t testing.TB, name string, cs ...prometheus.Collector) (count uint64, sum float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			count += m.GetHistogram().GetSampleCount()
			sum += m.GetHistogram().GetSampleSum()
		}
		return count, sum
	}
	t.Fatalf("no metric %s", name)
	return 0, 0
}

// counts are what the relay and the consumer did so far: confirm rounds and the entries they
// carried, transactions and the messages they wrote.
type counts struct {
	rounds, txs     uint64
	entries, writes float64
}

func countsNow(t testing.TB) counts {
	var c counts
	c.rounds, c.entries = histogram(t, "seckill_relay_round_entries", relay.Collectors()...)
	c.txs, c.writes = histogram(t, "seckill_backend_batch_size", orders.Collectors()...)
	return c
}

func (c counts) since(before counts) counts {
	return counts{rounds: c.rounds - before.rounds, txs: c.txs - before.txs,
		entries: c.entries - before.entries, writes: c.writes - before.writes}
}

// A lone winner is never held for company: with windows of 5 s on the relay and the consumer,
// each winner arriving when nothing is in flight reaches Postgres in a small part of that.
func TestALoneWinnerWaitsForNoWindow(t *testing.T) {
	const window = 5 * time.Second
	s := newSystem(t)
	// The relay's idle poll is longer than the test: only the purchase's own wake-up moves it.
	p := s.pipeline(t, 100, relay.Config{BatchWait: relay.Duration(window), PollInterval: relay.Duration(time.Minute)}, window)
	for i := range 5 {
		if _, err := p.accept(); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, 3*window, "the winner's order", func() bool { return p.rows() == i+1 })
		// Nothing in flight before the next one: the relay acknowledged the entry, and the
		// consumer settled its batch (its ack follows the commit within microseconds).
		testenv.WaitFor(t, 3*window, "the relay's acknowledgement", p.settled)
		time.Sleep(50 * time.Millisecond)
	}
	waits := p.waits(t)
	if len(waits) != 5 {
		t.Fatalf("%d waits for 5 winners", len(waits))
	}
	t.Logf("acceptance to transaction, lone winners: %v", waits)
	if worst := waits[len(waits)-1]; worst >= window/2 {
		t.Fatalf("a lone winner waited %v with windows of %v: it was held for company", worst, window)
	}
}

// The windows lose no winner and write none twice when the broker goes down in the middle of a
// stream of winners at 600/s: rounds and batches in flight at the fault are sent and written
// again, and deduplicated. The broker is restarted as in a rolling upgrade: its connections die
// with rounds and batches in flight either way, and after a kill -9 the single-node quorum
// queue took more than 60 s to take a consumer again here (Ra's recovery, which the chaos
// suite leaves out for the same reason).
func TestWindowBatchingLosesNoWinnerAcrossABrokerRestart(t *testing.T) {
	rb := testenv.StartRabbit(t)
	s := newSystemOn(t, rb.AMQPURL())
	p := s.pipeline(t, 5000, relay.Config{}, 0)
	before := countsNow(t)
	type result struct {
		n   int
		err error
	}
	arrived := make(chan result, 1)
	go func() {
		n, err := p.arrive(600, 4*time.Second)
		arrived <- result{n, err}
	}()
	// The fault comes while the relay holds entries read and not yet confirmed.
	key := contract.OutboxKey(p.sale)
	testenv.WaitFor(t, 20*time.Second, "orders written and entries in flight", func() bool {
		pend, err := s.rdb.XPending(context.Background(), key, relay.Group).Result()
		return p.rows() > 300 && err == nil && pend.Count > 0
	})
	atKill := p.rows()
	rb.Stop()
	rb.Start()
	res := <-arrived
	if res.err != nil {
		t.Fatalf("after %d winners: %v", res.n, res.err)
	}
	if atKill >= res.n {
		t.Fatalf("every winner was written before the fault (%d): the test proved nothing", atKill)
	}
	t0 := time.Now()
	for p.rows() != res.n || !p.settled() {
		if time.Since(t0) > 120*time.Second {
			t.Fatalf("after the broker's restart, 120 s: %d orders for %d winners, %s; broker: %s", p.rows(), res.n, p.outboxState(), brokerState(rb.AMQPURL()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.checkEveryWinnerOnce(t)
	c := countsNow(t).since(before)
	t.Logf("%d winners, %d written at the fault, all in %v after the restart; relay: %d rounds for %.0f publishes; consumer: %d transactions for %.0f messages",
		res.n, atKill, time.Since(t0), c.rounds, c.entries, c.txs, c.writes)
	if c.rounds == 0 || c.entries <= float64(c.rounds) {
		t.Errorf("no relay round carried more than one winner (%d rounds, %.0f publishes): the windows were not exercised", c.rounds, c.entries)
	}
}

// xactCommit is pg_stat_database's commit count of the system's database, read on a connection
// of its own (closed at once, so its own transaction is flushed with it).
func (s *system) xactCommit(t testing.TB) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[len(ds)/2]
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// BenchmarkALoneWinner measures what the windows add to a lone winner: winners one at a time
// (each after the previous one is written and settled), alternating between a pipeline with the
// default windows and one whose windows are 1 ns (nothing is ever gathered: what a pipeline
// without windows does). It reports the median acceptance-to-transaction time of each, and the
// median of the differences between consecutive pairs (the machine's load drifts less within
// a pair). Run with -benchtime 1x: each iteration is 90 pairs.
func BenchmarkALoneWinner(b *testing.B) {
	s := newSystem(b)
	windows := s.pipeline(b, 100_000, relay.Config{}, 0)
	none := s.pipeline(b, 100_000, relay.Config{BatchWait: relay.Duration(time.Nanosecond)}, time.Nanosecond)
	lone := func(p *pipeline) string {
		n := p.rows()
		order, err := p.accept()
		if err != nil {
			b.Fatal(err)
		}
		for p.rows() != n+1 || !p.settled() {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		return order
	}
	type pair struct{ windows, none string }
	var pairs []pair
	for range b.N {
		for range 90 {
			pairs = append(pairs, pair{lone(windows), lone(none)})
		}
	}
	w, n := windows.waitsByOrder(b), none.waitsByOrder(b)
	var ws, ns, diffs []time.Duration
	for _, pr := range pairs {
		ws, ns = append(ws, w[pr.windows]), append(ns, n[pr.none])
		diffs = append(diffs, w[pr.windows]-n[pr.none])
	}
	slices.Sort(ws)
	slices.Sort(ns)
	slices.Sort(diffs)
	b.ReportMetric(float64(median(ws).Microseconds())/1000, "ms-windows")
	b.ReportMetric(float64(median(ns).Microseconds())/1000, "ms-none")
	b.ReportMetric(float64(median(diffs).Microseconds())/1000, "ms-added")
}

// BenchmarkWinnersAt600PerSecond runs winners at 600/s for 3 s through a pipeline with the
// default windows and reports the server work per winner: relay confirm rounds (the broker's
// fsync-and-confirm cycles), consumer transactions (and pg_stat_database's commits, which
// count them from Postgres's side), the acceptance-to-transaction time (p50, p99) and its
// relay part, acceptance to delivery (a queue of the benchmark's own bound beside the
// consumer's). BENCH_RELAY_WAIT and BENCH_CONSUMER_WAIT replace the relay's and the
// consumer's windows (a duration; 1ns: no window), to see what each window does. Run with
// -benchtime 1x.
func BenchmarkWinnersAt600PerSecond(b *testing.B) {
	s := newSystem(b)
	for range b.N {
		rw, _ := time.ParseDuration(os.Getenv("BENCH_RELAY_WAIT"))
		cw, _ := time.ParseDuration(os.Getenv("BENCH_CONSUMER_WAIT"))
		p := s.pipeline(b, 2000, relay.Config{BatchWait: relay.Duration(rw)}, cw)
		seen := p.tap(b)
		time.Sleep(500 * time.Millisecond) // the consumer's session is up
		x0 := s.xactCommit(b)
		before := countsNow(b)
		n, err := p.arrive(600, 3*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		for c := countsNow(b).since(before); c.writes < float64(n) || !p.settled(); c = countsNow(b).since(before) {
			time.Sleep(10 * time.Millisecond)
		}
		c := countsNow(b).since(before)
		p.writes.Close() // its server processes flush their statistics as they exit
		time.Sleep(200 * time.Millisecond)
		xacts := s.xactCommit(b) - x0 - 1 // less the first reading's own
		waits := p.waits(b)
		if len(waits) != n {
			b.Fatal(errors.New("not every winner was written"))
		}
		b.ReportMetric(float64(c.rounds)/float64(n), "rounds/winner")
		b.ReportMetric(c.entries/float64(c.rounds), "publishes/round")
		b.ReportMetric(float64(c.txs)/float64(n), "txs/winner")
		b.ReportMetric(float64(xacts)/float64(n), "xact_commit/winner")
		rws := p.relayWaits(seen)
		b.ReportMetric(float64(median(rws).Microseconds())/1000, "ms-relay-p50")
		b.ReportMetric(float64(quantile(rws, 0.99).Microseconds())/1000, "ms-relay-p99")
		b.ReportMetric(float64(median(waits).Microseconds())/1000, "ms-p50")
		b.ReportMetric(float64(quantile(waits, 0.99).Microseconds())/1000, "ms-p99")
	}
}
