package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/seckilledge/seckill/contract"
)

// Consumer takes winners from the queue seckill.orders and writes them in batches.
//
// Delivery guarantees: a batch is acknowledged (one multiple ack) only after its transaction
// committed, so a crash anywhere before that leaves the messages in RabbitMQ, which redelivers
// them; the writer is idempotent, so a redelivered or duplicated message changes nothing. A
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
	BatchSize   int
	BatchWait   time.Duration
	Log         *slog.Logger
	// ShutdownGrace bounds how long a shutdown waits for the batch in hand to be written.
	ShutdownGrace time.Duration
}

// Run consumes until ctx ends, reconnecting with backoff.
func (c *Consumer) Run(ctx context.Context) error {
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	if c.BatchWait <= 0 {
		c.BatchWait = 20 * time.Millisecond
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	backoff := newBackoff(100*time.Millisecond, 2*time.Second)
	for ctx.Err() == nil {
		started := time.Now()
		err := c.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) > 10*time.Second {
			backoff.reset()
		}
		d := backoff.next()
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
	// Three batches' worth: one being written, one being collected, one arriving.
	if err := ch.Qos(3*c.BatchSize, 0, false); err != nil {
		return fmt.Errorf("qos: %w", err)
	}
	const tag = "seckill-backend"
	deliveries, err := ch.Consume(contract.Queue, tag, false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	c.Log.Info("consumer connected", "queue", contract.Queue, "batch_size", c.BatchSize)
	// The next batch is collected while the current one is written: one writer goroutine, so
	// batches commit and are acknowledged in delivery order (a multiple ack never covers a
	// batch that has not committed). The hand-off is unbuffered: a batch goes to the writer
	// when the writer is free, and until then it keeps growing (up to BatchSize) even after
	// BatchWait, so a busy writer gets full batches rather than the partial ones its own
	// slowness would otherwise cut.
	batches := make(chan []amqp.Delivery)
	written := make(chan struct{})
	go func() {
		defer close(written)
		for b := range batches {
			c.process(ctx, ch, closed, b)
		}
	}()
	defer func() { close(batches); <-written }()
	for {
		batch, handed, open := c.collect(ctx, deliveries, batches)
		if len(batch) > 0 && !handed {
			batches <- batch
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

// collect gathers one batch and hands it to the writer: it waits for a first message, then
// takes more until the batch is full or BatchWait has passed since the first, and then until
// the writer takes it (still adding messages while there is room). handed is false when it
// returns a batch it could not hand over (ctx ended, or the delivery channel closed: open is
// false).
func (c *Consumer) collect(ctx context.Context, deliveries <-chan amqp.Delivery, writer chan<- []amqp.Delivery) (batch []amqp.Delivery, handed, open bool) {
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
	timer := time.NewTimer(c.BatchWait)
	defer timer.Stop()
	in, waited := deliveries, timer.C
	var out chan<- []amqp.Delivery // nil (never ready) until the batch is due
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
			waited, out = nil, writer
		case out <- batch:
			return batch, true, true
		case <-ctx.Done():
			return batch, false, true
		}
	}
}

// process writes one batch and settles its messages. It retries transient database errors
// with backoff, holding the messages unacknowledged, until the write succeeds, the connection
// to RabbitMQ is gone (the messages will be redelivered) or shutdown's grace period ends.
func (c *Consumer) process(ctx context.Context, ch *amqp.Channel, closed <-chan *amqp.Error, batch []amqp.Delivery) {
	msgs := make([]contract.OrderMessage, 0, len(batch))
	good := make([]amqp.Delivery, 0, len(batch))
	for _, d := range batch {
		m, err := decodeOrder(d.Body)
		if err != nil {
			c.deadLetter(d, "malformed", err)
			continue
		}
		msgs = append(msgs, m)
		good = append(good, d)
	}
	if len(msgs) == 0 {
		return
	}
	// Shutdown finishes the batch in hand: the write outlives ctx by at most ShutdownGrace.
	wctx, cancel := graceContext(ctx, c.ShutdownGrace)
	defer cancel()

	res, err := c.writeRetrying(wctx, closed, msgs)
	if err != nil && !transient(err) {
		// Something in the batch's content is refused by the database: write the messages one
		// by one so that only the culprit is dead-lettered.
		c.Log.Warn("batch refused; writing its messages one by one", "size", len(msgs), "err", err)
		for i := range msgs {
			r, err := c.writeRetrying(wctx, closed, msgs[i:i+1])
			switch {
			case err == nil:
				c.settle(good[i:i+1], msgs[i:i+1], r)
			case transient(err):
				return // not acknowledged: redelivered
			default:
				c.deadLetter(good[i], "refused by the database", err)
			}
		}
		return
	}
	if err != nil {
		c.Log.Warn("batch left unacknowledged for redelivery", "size", len(msgs), "err", err)
		return
	}
	c.settle(good, msgs, res)
}

// settle dead-letters the messages of unknown sales, acknowledges the rest with one multiple
// ack, then compensates the orders that failed.
func (c *Consumer) settle(ds []amqp.Delivery, msgs []contract.OrderMessage, res BatchResult) {
	dead := map[int]bool{}
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
	if last > 0 {
		if err := ds[0].Acknowledger.Ack(last, true); err != nil {
			c.Log.Warn("ack failed; the batch will be redelivered and found written", "err", err)
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
	if len(res.Failed) > 0 && c.Compensator != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Compensator.Compensate(ctx, res.Failed)
	}
}

func (c *Consumer) writeRetrying(ctx context.Context, closed <-chan *amqp.Error, msgs []contract.OrderMessage) (BatchResult, error) {
	backoff := newBackoff(50*time.Millisecond, 3*time.Second)
	for {
		start := time.Now()
		res, err := c.Writer.WriteBatch(ctx, msgs)
		if err == nil {
			metricBatchSize.Observe(float64(len(msgs)))
			metricCommit.Observe(time.Since(start).Seconds())
			return res, nil
		}
		if !transient(err) || ctx.Err() != nil {
			return res, err
		}
		metricWriteErrors.Inc()
		d := backoff.next()
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

// backoff is a capped exponential backoff with jitter-free doubling (the jitter is irrelevant
// with a handful of backend instances).
type backoff struct{ cur, min, max time.Duration }

func newBackoff(min, max time.Duration) *backoff { return &backoff{min: min, max: max} }

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur *= 2
		if b.cur > b.max {
			b.cur = b.max
		}
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }
