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
	"sync/atomic"
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

	wake     chan struct{}
	served   sync.Map     // sale -> struct{}: sales this instance accepted an order for since the last scan
	notified atomic.Int64 // Notify calls since the relay last read the outboxes

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
	r.notified.Add(1)
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

// maxRounds bounds the rounds in flight on one channel. When every one waits for its confirms
// (a slow broker), what arrives gathers into the next round until one is confirmed: the
// rounds grow rather than multiply.
const maxRounds = 4

// pipeline is the rounds in flight on one channel.
type pipeline struct {
	results  chan *round     // rounds whose wait ended
	inflight int             // rounds started and not settled
	bySale   map[string]int  // rounds in flight per sale
	returned map[string]bool // message ids the broker returned, until their round settles
}

// serve relays on one channel until it breaks or ctx ends.
//
// The outboxes are read when nothing is in flight (at once: a lone winner waits for no one),
// and while rounds are in flight, when one of them is confirmed, when batch_wait has passed
// since the first purchase notified after the last read, or when batch_size purchases were
// notified since. So winners who arrive while a round waits for its confirms share the next
// round's confirm, and none waits longer than batch_wait for company.
func (r *Relay) serve(ctx context.Context, ch *amqp.Channel, returns chan amqp.Return) {
	p := &pipeline{results: make(chan *round, maxRounds), bySale: map[string]int{}, returned: map[string]bool{}}
	defer r.finish(p, returns)
	window := time.NewTimer(time.Hour)
	window.Stop()
	defer window.Stop()
	var windowC <-chan time.Time
	var nextScan, lastScan time.Time
	read := true
	for ctx.Err() == nil {
		if read && p.inflight < maxRounds {
			read, windowC = false, nil
			window.Stop()
			r.notified.Store(0)
			// A sale served here whose namespace is not known yet is checked by an early scan
			// (at most one per poll interval, so a Redis outage does not make it spin).
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
			for sale := range r.active {
				if p.inflight >= maxRounds {
					read = true // the other sales when a round settles
					break
				}
				if r.retryOwn[sale] && p.bySale[sale] > 0 {
					// Its own pending entries are re-read once its rounds in flight settle:
					// reading them now would publish those rounds' entries again.
					continue
				}
				rd, err := r.drain(ctx, ch, sale)
				if rd != nil {
					p.inflight++
					p.bySale[sale]++
					go func() {
						rd.wait(ctx, time.Duration(r.cfg.ConfirmTimeout))
						p.results <- rd
					}()
					if len(rd.msgs) >= r.cfg.BatchSize {
						read = true // a full round: its outbox may hold more
					}
				}
				if errors.Is(err, errChannel) {
					return
				}
				if err != nil && ctx.Err() == nil {
					r.logger.Warn("relay: outbox", zap.String("sale", sale), zap.Error(err))
				}
			}
			if ch.IsClosed() {
				return
			}
			if read && p.inflight < maxRounds {
				continue
			}
		}
		var poll <-chan time.Time
		if p.inflight == 0 {
			poll = time.After(time.Duration(r.cfg.PollInterval))
		}
		select {
		case <-ctx.Done():
		case rd := <-p.results:
			if err := r.settleRound(p, rd, returns); errors.Is(err, errChannel) {
				return
			} else if err != nil {
				r.logger.Warn("relay: outbox", zap.String("sale", rd.sale), zap.Error(err))
			}
			read = true
		case ret, ok := <-returns:
			if !ok {
				return
			}
			p.returned[ret.MessageId] = true
		case <-r.wake:
			switch {
			case p.inflight == 0 || r.notified.Load() >= int64(r.cfg.BatchSize):
				read = true
			case windowC == nil:
				window.Reset(time.Duration(r.cfg.BatchWait))
				windowC = window.C
			}
		case <-windowC:
			windowC, read = nil, true
		case <-poll:
			read = true
		}
	}
}

// settleRound settles a round whose wait ended. The broker sends a message's return before
// its confirm, so every return of the round is in returns (or p.returned) by now.
func (r *Relay) settleRound(p *pipeline, rd *round, returns chan amqp.Return) error {
	p.inflight--
	if p.bySale[rd.sale]--; p.bySale[rd.sale] <= 0 {
		delete(p.bySale, rd.sale)
	}
drain:
	for {
		select {
		case ret, ok := <-returns:
			if !ok {
				break drain
			}
			p.returned[ret.MessageId] = true
		default:
			break drain
		}
	}
	return r.settle(rd, p.returned)
}

// finish waits for the rounds still in flight when serve ends and settles them: what was
// confirmed is acknowledged, the rest stays pending to be sent again. Each wait ends within
// confirm_timeout, at once when the channel is closed (amqp091 then fails every pending
// confirm) or ctx ends.
func (r *Relay) finish(p *pipeline, returns chan amqp.Return) {
	for p.inflight > 0 {
		select {
		case rd := <-p.results:
			_ = r.settleRound(p, rd, returns)
		case ret, ok := <-returns:
			if !ok {
				returns = nil // closed channel: no more returns; nil blocks this case
				continue
			}
			p.returned[ret.MessageId] = true
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
