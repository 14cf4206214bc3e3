// Package relay moves accepted orders from the sales' outbox streams in Redis to RabbitMQ with
// publisher confirms. The `seckill` app runs one relay per config; seckill_gate wakes it when
// it accepts an order.
//
// An entry is acknowledged and deleted only after the broker confirmed its message, so a
// crash, a broker outage, a nack or a return leaves it pending, to be sent again (by this
// relay, or claimed by another instance's after ClaimMinIdle). Duplicates are possible;
// losses are not.
//
// A relay takes only the outboxes of its deployment's sales: those whose meta hash records the
// relay's namespace (contract.FieldNamespace, written by the backend at preheat). So two
// deployments sharing one Redis (staging next to production, a test run next to a demo) never
// carry each other's orders into their own brokers.
package relay

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Group is the consumer group of the outbox streams. preheat.lua creates it with the stream
// (ensureGroup when a stream has none); it must equal the name written there.
const Group = "relay"

// Options are what a relay works with.
type Options struct {
	// Redis holds the outboxes and the sales index.
	Redis redis.UniversalClient
	// Connect waits for a live RabbitMQ connection, or fails when ctx ends.
	Connect func(ctx context.Context) (*amqp.Connection, error)
	// Cork, when set, holds back the connection's writes until uncork (caddymodule's
	// Broker.Cork): a round's messages then leave in one write rather than one each.
	Cork func() (uncork func())
	// Namespace of the deployment: only sales whose meta records it are relayed ("" is the
	// unnamed deployment, which also owns sales preheated without a namespace).
	Namespace string
	// Config tunes the relay; zero values take the documented defaults.
	Config Config
	// Logger; nil discards.
	Logger *zap.Logger
}

// consumerName names this process in the outbox consumer groups. It is stable across config
// reloads, so a new config's relay re-sends what the previous one left pending at once, without
// waiting for ClaimMinIdle.
var consumerName = func() string {
	h, _ := os.Hostname()
	if h == "" {
		h = "gateway"
	}
	return h + "-" + strconv.Itoa(os.Getpid())
}()

// Relay is one outbox relay. Make it with New.
type Relay struct {
	cfg       Config
	rdb       redis.UniversalClient
	connect   func(context.Context) (*amqp.Connection, error)
	cork      func() (uncork func())
	namespace string
	logger    *zap.Logger
	consumer  string

	wake   chan struct{}
	served sync.Map // sale -> struct{}: sales this instance accepted an order for since the last scan

	// Owned by the Run goroutine.
	active    map[string]bool      // sales whose outbox had entries at the last scan, or served
	owned     map[string]bool      // sales of the index seen at the last scan: true ours, false another namespace's
	retryOwn  map[string]bool      // sales with entries pending on this consumer to re-send
	lastClaim map[string]time.Time // last XAUTOCLAIM per sale
	backlog   map[string]bool      // sales with a non-zero backlog gauge

	mu       sync.Mutex
	lastScan map[string]int64 // sale -> outbox length at the last scan, for the status page
	cancel   context.CancelFunc
	done     chan struct{}
}

// New makes a relay. It does no I/O until Start (or Run).
func New(o Options) *Relay {
	o.Config.setDefaults()
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return &Relay{
		cfg: o.Config, rdb: o.Redis, connect: o.Connect, cork: o.Cork, namespace: o.Namespace,
		logger: o.Logger, consumer: consumerName,
		wake: make(chan struct{}, 1), active: map[string]bool{}, owned: map[string]bool{},
		retryOwn: map[string]bool{}, lastClaim: map[string]time.Time{}, backlog: map[string]bool{},
	}
}

// Namespace is the deployment namespace whose sales this relay takes.
func (r *Relay) Namespace() string { return r.namespace }

// Notify tells the relay that sale's outbox has a new entry. It never blocks.
func (r *Relay) Notify(sale string) {
	if _, ok := r.served.Load(sale); !ok {
		r.served.Store(sale, struct{}{})
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Start runs the relay in the background until Stop or ctx ends. A second call does nothing.
func (r *Relay) Start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		r.Run(ctx)
	}()
}

// Stop stops the relay and waits for it. Entries in flight stay pending and are re-sent later.
func (r *Relay) Stop() error {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

// Run relays until ctx ends.
func (r *Relay) Run(ctx context.Context) {
	for ctx.Err() == nil {
		conn, err := r.connect(ctx)
		if err != nil || conn == nil {
			sleep(ctx, time.Duration(r.cfg.PollInterval))
			continue
		}
		ch, returns, err := openChannelWithin(conn, r.cfg.BatchSize, time.Duration(r.cfg.ConfirmTimeout))
		if err != nil {
			r.logger.Warn("relay: cannot open a confirm channel", zap.Error(err))
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		r.logger.Debug("relay: publishing on a new channel")
		r.serve(ctx, ch, returns)
		r.logger.Debug("relay: channel replaced")
		closeAsync(ch)
		// After a broken channel, resend what this consumer left pending.
		for sale := range r.active {
			r.retryOwn[sale] = true
		}
		sleep(ctx, 200*time.Millisecond) // do not spin on a broker that refuses every channel
	}
}

// serve relays on one channel until it breaks or ctx ends.
func (r *Relay) serve(ctx context.Context, ch *amqp.Channel, returns chan amqp.Return) {
	var nextScan, lastScan time.Time
	for ctx.Err() == nil {
		// A sale served here whose namespace is not known yet is checked by an early scan (at
		// most one per poll interval, so a Redis outage does not make it spin).
		early := time.Since(lastScan) >= time.Duration(r.cfg.PollInterval) && r.servedUnknown()
		if early || time.Now().After(nextScan) {
			r.scan(ctx)
			lastScan = time.Now()
			nextScan = lastScan.Add(time.Duration(r.cfg.DiscoverInterval))
		}
		r.served.Range(func(k, _ any) bool {
			if r.owned[k.(string)] {
				r.active[k.(string)] = true
			}
			return true
		})
		worked := false
		for sale := range r.active {
			n, err := r.drain(ctx, ch, returns, sale)
			if errors.Is(err, errChannel) {
				return
			}
			if err != nil && ctx.Err() == nil {
				r.logger.Warn("relay: outbox", zap.String("sale", sale), zap.Error(err))
			}
			if n > 0 {
				worked = true
			}
		}
		if ch.IsClosed() {
			return
		}
		if !worked {
			select {
			case <-ctx.Done():
			case <-r.wake:
			case <-time.After(time.Duration(r.cfg.PollInterval)):
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
