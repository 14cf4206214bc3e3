package orders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/seckilledge/seckill/backend/internal/backoff"
	"github.com/seckilledge/seckill/contract"
	"go.opentelemetry.io/otel/trace"
)

// Consumer takes winners from the queue seckill.orders and writes them in batches.
//
// Delivery guarantees: a batch is acknowledged (one multiple ack) only after its transaction
// committed and every batch delivered before it is settled, so a crash anywhere before that
// leaves the messages in RabbitMQ, which redelivers them; the writer is idempotent, so a
// redelivered or duplicated message changes nothing. A batch that cannot be written ends the
// session (nothing after it is acknowledged; everything unacknowledged is redelivered). A
// malformed message, or one for a sale Postgres does not know, is rejected without requeue and
// goes to the dead-letter queue seckill.orders.dead, with its reason logged.
//
// Reconnection is a plain loop rather than amqp091-go's automatic recovery: delivery tags
// belong to one channel, and after a recovery the batch in hand could never be acknowledged
// anyway. Starting a fresh connection, channel and consumer (and redeclaring the topology) on
// every failure is simpler to reason about and the messages in hand are simply redelivered.
type Consumer struct {
	URL         string
	Writer      *Writer
	Compensator *Compensator
	// BatchSize is the most messages a batch (one transaction) holds; default 500.
	BatchSize int
	// BatchWait is the longest a message waits for company while a batch is being written
	// (default 2ms); a message that finds no batch in flight is written at once (collect).
	BatchWait time.Duration
	Log       *slog.Logger
	// ShutdownGrace bounds how long a shutdown waits for the batch in hand to be written.
	ShutdownGrace time.Duration
	// Writers is how many batches are written at once, each in its own transaction (default
	// 3, the best of 1 to 4 on the 2-core benchmark machine): while one waits for its commit's
	// WAL flush or for the sale's row lock, the next one inserts its orders.
	// Acknowledgements still follow delivery order.
	Writers int
	// Written, when set, is called after a batch committed (it wakes the webhook worker).
	Written func()
	// Tracer, when set, wraps each batch write in a span linked to its orders' traces
	// (trace.go); nil when tracing is off.
	Tracer trace.Tracer
}

// Run consumes until ctx ends, reconnecting with backoff.
func (c *Consumer) Run(ctx context.Context) error {
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	if c.BatchWait <= 0 {
		c.BatchWait = 2 * time.Millisecond
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.Writers <= 0 {
		c.Writers = 3
	}
	bo := backoff.New(100*time.Millisecond, 2*time.Second)
	for ctx.Err() == nil {
		started := time.Now()
		err := c.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) > 10*time.Second {
			bo.Reset()
		}
		d := bo.Next()
		c.Log.Warn("consumer disconnected; reconnecting", "err", err, "in", d.String())
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	return nil
}

func (c *Consumer) session(ctx context.Context) error {
	host, _ := os.Hostname()
	conn, err := amqp.DialConfig(c.URL, amqp.Config{
		Heartbeat:  5 * time.Second,
		Properties: amqp.Table{"connection_name": "seckill-backend " + host},
	})
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("channel: %w", err)
	}
	if err := contract.DeclareTopology(ch); err != nil {
		return fmt.Errorf("declare topology: %w", err)
	}
	// Every writer's batch, the one being collected and one arriving.
	if err := ch.Qos((c.Writers+2)*c.BatchSize, 0, false); err != nil {
		return fmt.Errorf("qos: %w", err)
	}
	const tag = "seckill-backend"
	deliveries, err := ch.Consume(contract.Queue, tag, false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	c.Log.Info("consumer connected", "queue", contract.Queue, "batch_size", c.BatchSize, "writers", c.Writers)
	// The next batch is collected while the current ones are written (collect says when it is
	// due). With several writers, batches commit in any order but are acknowledged in delivery
	// order (acks), so a multiple ack never covers a batch that has not committed. The hand-off
	// is unbuffered: a batch goes to a writer when one is free, and until then it keeps growing
	// (up to BatchSize) even after it is due, so busy writers get full batches rather than the
	// partial ones their own slowness would otherwise cut.
	acks := &ackOrder{ready: map[uint64]uint64{}, ack: func(tag uint64) error { return ch.Ack(tag, true) }, broken: func() {
		// A batch is left unacknowledged: nothing after it may be acknowledged with a multiple
		// ack, so this session ends and RabbitMQ redelivers everything not yet acknowledged
		// (the writer finds what was already written).
		go conn.Close()
	}}
	batches := make(chan batchJob)
	f := &flight{freed: make(chan struct{}, 1)}
	var written sync.WaitGroup
	for range c.Writers {
		written.Add(1)
		go func() {
			defer written.Done()
			for j := range batches {
				c.process(ctx, closed, j, acks)
				f.settle()
			}
		}()
	}
	defer func() { close(batches); written.Wait() }()
	var seq uint64
	for {
		batch, handed, open := c.collect(ctx, deliveries, batches, seq, f)
		if len(batch) > 0 {
			if !handed {
				batches <- batchJob{seq: seq, ds: batch}
				f.handed++
			}
			seq++
		}
		if !open {
			if e := <-closed; e != nil {
				return e
			}
			return errors.New("delivery channel closed")
		}
		if ctx.Err() != nil {
			_ = ch.Cancel(tag, false)
			return nil
		}
	}
}

// batchJob is a batch of deliveries with its place in delivery order.
type batchJob struct {
	seq uint64
	ds  []amqp.Delivery
}

// ackOrder acknowledges batches in delivery order, whatever order they commit in: batch n's
// multiple ack is sent once batches 0..n are all settled. A batch left unacknowledged (to be
// redelivered) stops every later acknowledgement: a multiple ack would cover it.
type ackOrder struct {
	ack    func(tag uint64) error // a multiple ack up to tag
	broken func()                 // called once, when a batch is left unacknowledged

	mu     sync.Mutex
	next   uint64            // the first batch not yet settled
	ready  map[uint64]uint64 // settled batches after next: seq -> tag to acknowledge up to (0: none)
	failed bool
}

// settled records that batch seq is written and its dead letters rejected; tag is the highest
// delivery tag of the batch to acknowledge (0: none).
func (a *ackOrder) settled(seq, tag uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed {
		return nil
	}
	if seq != a.next {
		a.ready[seq] = tag
		return nil
	}
	a.next++
	for {
		t, ok := a.ready[a.next]
		if !ok {
			break
		}
		delete(a.ready, a.next)
		a.next++
		tag = max(tag, t)
	}
	if tag == 0 {
		return nil
	}
	// Under the lock: acks leave in order.
	return a.ack(tag)
}

// unsettled records that batch seq is left unacknowledged.
func (a *ackOrder) unsettled(uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.failed {
		a.failed = true
		a.broken()
	}
}

// flight is what the collector knows of the batches being written: it hands them over (its
// own count) and the writers settle them.
type flight struct {
	handed  uint64        // batches handed to a writer (the collector's goroutine only)
	settled atomic.Uint64 // batches whose writer is done with them
	freed   chan struct{} // a batch was settled (capacity 1: a wake-up, not a count)
}

func (f *flight) settle() {
	f.settled.Add(1)
	select {
	case f.freed <- struct{}{}:
	default:
	}
}

// collect gathers one batch and hands it to a writer. It waits for a first message; when no
// batch is being written it hands the batch over at once, with whatever else was already
// delivered. Otherwise it gathers until a batch in flight is settled, the batch is full or
// BatchWait has passed since its first message, and then until a writer takes it (still adding
// messages while there is room). So a lone winner waits for no one, and winners arriving while a
// transaction commits share the next one. handed is false when it returns a batch it could not
// hand over (ctx ended, or the delivery channel closed: open is false).
func (c *Consumer) collect(ctx context.Context, deliveries <-chan amqp.Delivery, writer chan<- batchJob, seq uint64, f *flight) (batch []amqp.Delivery, handed, open bool) {
	select {
	case d, ok := <-deliveries:
		if !ok {
			return nil, false, false
		}
		batch = make([]amqp.Delivery, 0, c.BatchSize)
		batch = append(batch, d)
	case <-ctx.Done():
		return nil, false, true
	}
	in := deliveries
	var out chan<- batchJob // nil (never ready) until the batch is due
	var waited <-chan time.Time
	var freed <-chan struct{}
	settled := f.settled.Load()
	if settled == f.handed {
		out = writer // nothing in flight
	} else {
		timer := time.NewTimer(c.BatchWait)
		defer timer.Stop()
		waited, freed = timer.C, f.freed
	}
	for {
		if len(batch) >= c.BatchSize {
			in, out = nil, writer
		}
		// Messages usually arrive in bursts: take what is already there without the full select.
		if in != nil {
			select {
			case d, ok := <-in:
				if !ok {
					return batch, false, false
				}
				batch = append(batch, d)
				continue
			default:
			}
		}
		select {
		case d, ok := <-in:
			if !ok {
				return batch, false, false
			}
			batch = append(batch, d)
		case <-waited:
			waited, freed, out = nil, nil, writer
		case <-freed:
			if f.settled.Load() != settled { // not a wake-up left from before this batch
				waited, freed, out = nil, nil, writer
			}
		case out <- batchJob{seq: seq, ds: batch}:
			f.handed++
			return batch, true, true
		case <-ctx.Done():
			return batch, false, true
		}
	}
}

// process writes one batch and settles its messages. It retries transient database errors
// with backoff, holding the messages unacknowledged, until the write succeeds, the connection
// to RabbitMQ is gone (the messages will be redelivered) or shutdown's grace period ends.
func (c *Consumer) process(ctx context.Context, closed <-chan *amqp.Error, j batchJob, acks *ackOrder) {
	msgs := make([]contract.OrderMessage, 0, len(j.ds))
	good := make([]amqp.Delivery, 0, len(j.ds))
	for _, d := range j.ds {
		m, err := decodeOrder(d.Body)
		if err != nil {
			c.deadLetter(d, "malformed", err)
			continue
		}
		msgs = append(msgs, m)
		good = append(good, d)
	}
	if len(msgs) == 0 {
		c.settleOrder(acks, j.seq, 0)
		return
	}
	// Shutdown finishes the batch in hand: the write outlives ctx by at most ShutdownGrace.
	wctx, cancel := graceContext(ctx, c.ShutdownGrace)
	defer cancel()

	tctx, endSpan := c.traceBatch(wctx, good, msgs)
	res, err := c.writeRetrying(tctx, closed, msgs)
	endSpan(res, err)
	if err != nil && !Transient(err) {
		// Something in the batch's content is refused by the database: write the messages one
		// by one so that only the culprit is dead-lettered. Each is acknowledged alone (a
		// multiple ack could cover another writer's batch).
		c.Log.Warn("batch refused; writing its messages one by one", "size", len(msgs), "err", err)
		for i := range msgs {
			r, err := c.writeRetrying(wctx, closed, msgs[i:i+1])
			switch {
			case err == nil:
				if c.settle(good[i:i+1], msgs[i:i+1], r) > 0 {
					if err := good[i].Ack(false); err != nil {
						c.Log.Warn("ack failed; the message will be redelivered and found written", "err", err)
					}
				}
				c.compensate(r)
			case Transient(err):
				acks.unsettled(j.seq) // not acknowledged: redelivered
				return
			default:
				c.deadLetter(good[i], "refused by the database", err)
			}
		}
		c.settleOrder(acks, j.seq, 0)
		return
	}
	if err != nil {
		c.Log.Warn("batch left unacknowledged for redelivery", "size", len(msgs), "err", err)
		acks.unsettled(j.seq)
		return
	}
	c.settleOrder(acks, j.seq, c.settle(good, msgs, res))
	c.compensate(res)
	if c.Written != nil {
		c.Written()
	}
}

func (c *Consumer) settleOrder(acks *ackOrder, seq, tag uint64) {
	if err := acks.settled(seq, tag); err != nil {
		c.Log.Warn("ack failed; the batch will be redelivered and found written", "err", err)
	}
}

// settle dead-letters the messages of unknown sales and records the batch's metrics. It
// returns the highest delivery tag left to acknowledge (0: none).
func (c *Consumer) settle(ds []amqp.Delivery, msgs []contract.OrderMessage, res BatchResult) uint64 {
	var dead map[int]bool
	if len(res.UnknownSale) > 0 {
		dead = make(map[int]bool, len(res.UnknownSale))
	}
	for _, i := range res.UnknownSale {
		dead[i] = true
		c.deadLetter(ds[i], "unknown sale", fmt.Errorf("sale %q is not in Postgres", msgs[i].SaleID))
	}
	var last uint64
	for i, d := range ds {
		if !dead[i] && d.DeliveryTag > last {
			last = d.DeliveryTag
		}
	}
	metricConsumed.WithLabelValues("created").Add(float64(res.Created))
	metricConsumed.WithLabelValues("failed").Add(float64(len(res.Failed)))
	metricConsumed.WithLabelValues("duplicate").Add(float64(res.Duplicates))
	metricFailed.WithLabelValues(ReasonSoldOutInDB).Add(float64(len(res.Failed)))
	now := time.Now()
	for i, m := range msgs {
		if !dead[i] {
			metricLag.Observe(now.Sub(m.AcceptedAt).Seconds())
		}
	}
	return last
}

// compensate returns to Redis the units of the orders the batch recorded failed.
func (c *Consumer) compensate(res BatchResult) {
	if len(res.Failed) > 0 && c.Compensator != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Compensator.Compensate(ctx, res.Failed)
	}
}

func (c *Consumer) writeRetrying(ctx context.Context, closed <-chan *amqp.Error, msgs []contract.OrderMessage) (BatchResult, error) {
	bo := backoff.New(50*time.Millisecond, 3*time.Second)
	for {
		start := time.Now()
		res, err := c.Writer.WriteBatch(ctx, msgs)
		if err == nil {
			metricBatchSize.Observe(float64(len(msgs)))
			metricCommit.Observe(time.Since(start).Seconds())
			return res, nil
		}
		if !Transient(err) || ctx.Err() != nil {
			return res, err
		}
		metricWriteErrors.Inc()
		d := bo.Next()
		c.Log.Warn("batch write failed; retrying", "size", len(msgs), "err", err, "in", d.String())
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case e := <-closed:
			if e == nil {
				e = &amqp.Error{Reason: "connection closed"}
			}
			return res, fmt.Errorf("rabbitmq connection lost while retrying: %w", e)
		case <-time.After(d):
		}
	}
}

func (c *Consumer) deadLetter(d amqp.Delivery, reason string, err error) {
	metricConsumed.WithLabelValues("dead_lettered").Inc()
	metricFailed.WithLabelValues("dead_lettered").Inc()
	c.Log.Error("message dead-lettered", "reason", reason, "err", err, "delivery_tag", d.DeliveryTag,
		"redelivered", d.Redelivered, "body_bytes", len(d.Body))
	if nerr := d.Nack(false, false); nerr != nil {
		c.Log.Warn("nack failed; the message will be redelivered", "err", nerr)
	}
}

// graceContext is a context that ends grace after parent ends (or when cancel is called).
func graceContext(parent context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	stop := context.AfterFunc(parent, func() {
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(ctx, func() { t.Stop() })
	})
	return ctx, func() { stop(); cancel() }
}
