package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
	"go.uber.org/zap"
)

// RelayConfig tunes the outbox relay. Every gateway instance runs one relay per config; when
// several seckill_gate handlers configure it, the first one's settings are used.
type RelayConfig struct {
	// Do not run a relay in this instance (another instance, or a separate process, drains the
	// outboxes). Default false: every gateway relays.
	Disabled bool `json:"disabled,omitempty"`

	// Outbox entries read and published per round (they are in flight together, waiting for
	// their confirms). Default 256.
	BatchSize int `json:"batch_size,omitempty"`

	// How often an idle relay looks for new entries. An accepted purchase in this instance
	// wakes it at once; entries written by other instances wait at most this long. Default 100ms.
	PollInterval caddy.Duration `json:"poll_interval,omitempty"`

	// How often the relay rescans the sales index (seckill:sales) for outboxes with entries.
	// Default 2s.
	DiscoverInterval caddy.Duration `json:"discover_interval,omitempty"`

	// How long an entry must have been pending with another relay (a dead or stuck instance)
	// before this one claims it and publishes it again. Default 30s.
	ClaimMinIdle caddy.Duration `json:"claim_min_idle,omitempty"`

	// How long to wait for RabbitMQ's confirms of a round; unconfirmed entries stay pending and
	// are sent again on a fresh channel. Default 10s.
	ConfirmTimeout caddy.Duration `json:"confirm_timeout,omitempty"`

	// Expiry of a drained outbox whose sale has no expiry in Redis. Default 24h.
	Retention caddy.Duration `json:"retention,omitempty"`

	// Relay only the sales this instance accepted orders for, not every sale listed in
	// seckill:sales. Entries another (dead) instance left pending in those sales are still
	// claimed. For several independent deployments (or test runs) sharing one Redis.
	ServedOnly bool `json:"served_only,omitempty"`
}

func (c *RelayConfig) setDefaults() {
	if c.BatchSize <= 0 {
		c.BatchSize = 256
	}
	if c.PollInterval <= 0 {
		c.PollInterval = caddy.Duration(100 * time.Millisecond)
	}
	if c.DiscoverInterval <= 0 {
		c.DiscoverInterval = caddy.Duration(2 * time.Second)
	}
	if c.ClaimMinIdle <= 0 {
		c.ClaimMinIdle = caddy.Duration(30 * time.Second)
	}
	if c.ConfirmTimeout <= 0 {
		c.ConfirmTimeout = caddy.Duration(10 * time.Second)
	}
	if c.Retention <= 0 {
		c.Retention = caddy.Duration(24 * time.Hour)
	}
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

// Relay moves accepted orders from the sales' outbox streams to RabbitMQ. An entry is
// acknowledged and deleted only after the broker confirmed its message, so a crash, a broker
// outage, a nack or a return leaves it pending, to be sent again (by this relay, or claimed by
// another instance's after ClaimMinIdle). Duplicates are possible; losses are not.
type Relay struct {
	// Cork, when set, holds back the connection's writes until uncork (caddymodule's
	// Broker.Cork): a round's messages then leave in one write rather than one each.
	Cork func() (uncork func())

	cfg      RelayConfig
	rdb      redis.UniversalClient
	connect  func(context.Context) (*amqp.Connection, error)
	logger   *zap.Logger
	consumer string

	wake   chan struct{}
	served sync.Map // sale -> struct{}: sales this instance accepted an order for since the last scan

	// Owned by the Run goroutine.
	active    map[string]bool      // sales whose outbox had entries at the last scan, or served
	retryOwn  map[string]bool      // sales with entries pending on this consumer to re-send
	lastClaim map[string]time.Time // last XAUTOCLAIM per sale
	backlog   map[string]bool      // sales with a non-zero backlog gauge

	mu       sync.Mutex
	lastScan map[string]int64 // sale -> outbox length at the last scan, for the status page
	cancel   context.CancelFunc
	done     chan struct{}
}

// NewRelay makes a relay reading outboxes from rdb and publishing on connections from
// connect (which waits for a live connection or fails when ctx ends).
func NewRelay(rdb redis.UniversalClient, connect func(context.Context) (*amqp.Connection, error), cfg RelayConfig, logger *zap.Logger) *Relay {
	cfg.setDefaults()
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Relay{
		cfg: cfg, rdb: rdb, connect: connect, logger: logger, consumer: consumerName,
		wake: make(chan struct{}, 1), active: map[string]bool{}, retryOwn: map[string]bool{},
		lastClaim: map[string]time.Time{}, backlog: map[string]bool{},
	}
}

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

// Start runs the relay in the background until Stop or ctx ends.
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

// openChannelWithin opens a confirm channel, giving up after d: amqp091's calls wait for the
// broker's answer without a deadline, and a connection in the middle of its automatic
// recovery may never give one.
func openChannelWithin(conn *amqp.Connection, batch int, d time.Duration) (*amqp.Channel, chan amqp.Return, error) {
	type opened struct {
		ch      *amqp.Channel
		returns chan amqp.Return
		err     error
	}
	res := make(chan opened, 1)
	abandoned := make(chan struct{})
	go func() {
		ch, returns, err := openChannel(conn, batch)
		select {
		case res <- opened{ch, returns, err}:
		case <-abandoned:
			if ch != nil {
				closeAsync(ch)
			}
		}
	}()
	select {
	case o := <-res:
		return o.ch, o.returns, o.err
	case <-time.After(d):
		close(abandoned)
		return nil, nil, errors.New("opening a channel timed out")
	}
}

// closeAsync closes a channel without waiting: Close waits for the broker's close-ok, which a
// broken connection never sends.
func closeAsync(ch *amqp.Channel) {
	go func() { _ = ch.Close() }()
}

func openChannel(conn *amqp.Connection, batch int) (*amqp.Channel, chan amqp.Return, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, nil, err
	}
	if err := contract.DeclareTopology(ch); err != nil {
		_ = ch.Close()
		return nil, nil, err
	}
	// Buffered beyond a round's size: the reader goroutine of amqp091 delivers a message's
	// return before its confirm, so after a round's confirms every return is already buffered.
	returns := ch.NotifyReturn(make(chan amqp.Return, 2*batch+16))
	return ch, returns, nil
}

var errChannel = errors.New("relay: channel must be replaced")

// serve relays on one channel until it breaks or ctx ends.
func (r *Relay) serve(ctx context.Context, ch *amqp.Channel, returns chan amqp.Return) {
	var nextScan time.Time
	for ctx.Err() == nil {
		if time.Now().After(nextScan) {
			r.scan(ctx)
			nextScan = time.Now().Add(time.Duration(r.cfg.DiscoverInterval))
		}
		r.served.Range(func(k, _ any) bool {
			r.active[k.(string)] = true
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

// scan finds the outboxes with entries: the sales index, plus the sales this instance served.
func (r *Relay) scan(ctx context.Context) {
	sales := map[string]bool{}
	r.served.Range(func(k, _ any) bool {
		sales[k.(string)] = true
		r.served.Delete(k)
		return true
	})
	var members []string
	var err error
	if !r.cfg.ServedOnly {
		members, err = r.rdb.SMembers(ctx, contract.SalesIndexKey).Result()
	}
	if err != nil {
		if ctx.Err() == nil {
			r.logger.Debug("relay: sales index", zap.Error(err))
		}
		for s := range r.active { // keep what we had
			sales[s] = true
		}
	}
	for _, s := range members {
		// The index lists sales and the shards of sharded sales ("<sale>:<i>", each with its
		// own outbox); a relay handles both the same way.
		if contract.ValidSaleOrShard(s) {
			sales[s] = true
		}
	}
	for s := range r.active {
		sales[s] = true
	}
	if len(sales) == 0 {
		return
	}
	names := make([]string, 0, len(sales))
	cmds := make([]*redis.IntCmd, 0, len(sales))
	pipe := r.rdb.Pipeline()
	for s := range sales {
		names = append(names, s)
		cmds = append(cmds, pipe.XLen(ctx, contract.OutboxKey(s)))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return // keep the previous active set
	}
	active := map[string]bool{}
	counts := map[string]int64{}
	for i, s := range names {
		n := cmds[i].Val()
		if n > 0 {
			counts[s] = n
			active[s] = true
			relayBacklog.WithLabelValues(s).Set(float64(n))
			r.backlog[s] = true
		} else if r.backlog[s] {
			relayBacklog.WithLabelValues(s).Set(0)
			delete(r.backlog, s)
		}
	}
	for s := range r.retryOwn {
		if !active[s] {
			delete(r.retryOwn, s)
		}
	}
	for s := range r.lastClaim {
		if !active[s] {
			delete(r.lastClaim, s)
		}
	}
	r.active = active
	r.mu.Lock()
	r.lastScan = counts
	r.mu.Unlock()
}

// Backlog is the relay's view of the outboxes with entries (sale -> entries) as of its last
// scan, for the status page.
func (r *Relay) Backlog() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.lastScan))
	for s, n := range r.lastScan {
		out[s] = n
	}
	return out
}

// drain publishes one round of sale's outbox: entries claimed from dead relays, this
// consumer's own pending entries after a failure, or new entries.
func (r *Relay) drain(ctx context.Context, ch *amqp.Channel, returns chan amqp.Return, sale string) (int, error) {
	key := contract.OutboxKey(sale)
	var msgs []redis.XMessage
	var err error
	claimEvery := min(time.Duration(r.cfg.ClaimMinIdle)/2, 5*time.Second)
	if time.Since(r.lastClaim[sale]) >= claimEvery {
		r.lastClaim[sale] = time.Now()
		msgs, _, err = r.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: key, Group: RelayGroup, Consumer: r.consumer,
			MinIdle: time.Duration(r.cfg.ClaimMinIdle), Start: "0-0", Count: int64(r.cfg.BatchSize),
		}).Result()
		if err != nil && !isNoGroup(err) {
			return 0, err
		}
	}
	if len(msgs) == 0 {
		id := ">"
		if r.retryOwn[sale] {
			id = "0"
		}
		streams, err := r.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: RelayGroup, Consumer: r.consumer, Streams: []string{key, id},
			Count: int64(r.cfg.BatchSize), Block: -1,
		}).Result()
		switch {
		case errors.Is(err, redis.Nil):
		case isNoGroup(err):
			r.ensureGroup(ctx, key)
			return 0, nil
		case err != nil:
			return 0, err
		}
		if len(streams) > 0 {
			msgs = streams[0].Messages
		}
		if id == "0" && len(msgs) == 0 {
			delete(r.retryOwn, sale)
		}
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	return len(msgs), r.publish(ctx, ch, returns, sale, msgs)
}

func isNoGroup(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOGROUP") }

// ensureGroup creates the consumer group of a stream that has none (the gate script creates
// it with the stream; this covers a stream made some other way). From id 0: every entry is
// relayed.
func (r *Relay) ensureGroup(ctx context.Context, key string) {
	err := r.rdb.XGroupCreate(ctx, key, RelayGroup, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") && !strings.Contains(err.Error(), "requires the key to exist") {
		r.logger.Debug("relay: create group", zap.String("key", key), zap.Error(err))
	}
}

var ackScript = lua.Script("outbox_ack")

type inflight struct {
	id      string
	orderID string
	dc      *amqp.DeferredConfirmation
}

// publish sends msgs with publisher confirms, all in flight together, then acknowledges and
// deletes the confirmed ones. Anything not confirmed stays pending for a later round.
func (r *Relay) publish(ctx context.Context, ch *amqp.Channel, returns chan amqp.Return, sale string, msgs []redis.XMessage) error {
	var done []string
	var sent []inflight
	broken := false
	start := time.Now()
	routingKey := contract.RoutingKey(contract.BaseSale(sale))
	// Sent under one cork (when the broker offers it): the whole round leaves in one write,
	// before the wait for its confirms.
	func() {
		if r.Cork != nil {
			uncork := r.Cork()
			defer uncork()
		}
		for _, m := range msgs {
			body, orderID, err := encodeEntry(sale, m)
			if err != nil {
				// Only the gate script writes outboxes, so this is unreachable; an entry no
				// consumer could read must not block the stream forever.
				r.logger.Error("relay: dropping a malformed outbox entry", zap.String("sale", sale), zap.String("id", m.ID), zap.Error(err))
				done = append(done, m.ID)
				continue
			}
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, contract.Exchange, routingKey, true, false, amqp.Publishing{
				ContentType:  "application/json",
				DeliveryMode: amqp.Persistent,
				MessageId:    orderID,
				Timestamp:    time.Now(),
				Body:         body,
			})
			if err != nil || dc == nil {
				broken = true
				return
			}
			sent = append(sent, inflight{id: m.ID, orderID: orderID, dc: dc})
		}
	}()
	timer := time.NewTimer(time.Duration(r.cfg.ConfirmTimeout))
	defer timer.Stop()
	var acked []inflight
confirms:
	for _, f := range sent {
		select {
		case <-f.dc.Done():
			if f.dc.Acked() {
				acked = append(acked, f)
				relayPublishSeconds.Observe(time.Since(start).Seconds())
			} else {
				broken = true
			}
		case <-timer.C:
			// The rest is unconfirmed. Replacing the channel makes sure no late confirm is
			// ever attributed to anything.
			broken = true
			break confirms
		case <-ctx.Done():
			broken = true
			break confirms
		}
	}
	// Returns arrive before the confirm of the same message, so they are buffered by now.
	returned := map[string]bool{}
drainReturns:
	for {
		select {
		case ret, ok := <-returns:
			if !ok {
				break drainReturns
			}
			returned[ret.MessageId] = true
		default:
			break drainReturns
		}
	}
	for _, f := range acked {
		if returned[f.orderID] {
			broken = true // unroutable: redeclare the topology on a fresh channel, then resend
			continue
		}
		done = append(done, f.id)
	}
	failed := len(msgs) - len(done)
	r.logger.Debug("relay: round", zap.String("sale", sale), zap.Int("entries", len(msgs)), zap.Int("sent", len(sent)),
		zap.Int("confirmed", len(acked)), zap.Int("returned", len(returned)), zap.Bool("broken", broken))
	if failed > 0 {
		relayNacked.WithLabelValues(sale).Add(float64(failed))
		r.retryOwn[sale] = true
		broken = true
	}
	if len(done) > 0 {
		args := make([]any, 0, len(done)+2)
		args = append(args, RelayGroup, time.Duration(r.cfg.Retention).Milliseconds())
		for _, id := range done {
			args = append(args, id)
		}
		// Not bound to ctx: a confirmed batch should be acknowledged even while stopping.
		actx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := ackScript.Run(actx, r.rdb, []string{contract.OutboxKey(sale), contract.MetaKey(sale)}, args...).Err()
		cancel()
		if err != nil {
			// They stay pending and will be sent again: duplicates, not losses.
			r.retryOwn[sale] = true
			return fmt.Errorf("acknowledge %d entries: %w", len(done), err)
		}
		relayPublished.WithLabelValues(sale).Add(float64(len(done)))
	}
	if broken {
		return errChannel
	}
	return nil
}

// encodeEntry turns an outbox entry (o: order id, u: user id, t: accepted ms) into the
// contract's message body. sale may be a shard id: the message names the sale.
func encodeEntry(sale string, m redis.XMessage) ([]byte, string, error) {
	sale = contract.BaseSale(sale)
	order, _ := m.Values["o"].(string)
	user, _ := m.Values["u"].(string)
	ts, _ := m.Values["t"].(string)
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, "", fmt.Errorf("bad accepted time %q", ts)
	}
	msg := contract.OrderMessage{OrderID: order, SaleID: sale, UserID: user, AcceptedAt: time.UnixMilli(ms).UTC()}
	if err := msg.Validate(); err != nil {
		return nil, "", err
	}
	body, err := marshalOrder(msg)
	return body, order, err
}

// marshalOrder is json.Marshal(m), byte for byte, without reflection (which was a third of
// the relay's own work per entry). The fast path covers what the relay sends: ids whose bytes
// JSON writes as they are, and a time json.Marshal accepts; anything else takes json.Marshal
// itself. FuzzMarshalOrderMatchesJSON checks the equivalence.
func marshalOrder(m contract.OrderMessage) ([]byte, error) {
	if !plainJSON(m.OrderID) || !plainJSON(m.SaleID) || !plainJSON(m.UserID) {
		return json.Marshal(m)
	}
	if y := m.AcceptedAt.Year(); y < 0 || y > 9999 || m.AcceptedAt.Location() != time.UTC {
		return json.Marshal(m) // its error, or its zone offset
	}
	b := make([]byte, 0, 64+len(m.OrderID)+len(m.SaleID)+len(m.UserID)+len(time.RFC3339Nano))
	b = append(b, `{"order_id":"`...)
	b = append(b, m.OrderID...)
	b = append(b, `","sale_id":"`...)
	b = append(b, m.SaleID...)
	b = append(b, `","user_id":"`...)
	b = append(b, m.UserID...)
	b = append(b, `","accepted_at":"`...)
	b = m.AcceptedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `"}`...)
	return b, nil
}

// plainJSON reports whether json.Marshal writes s as its bytes between quotes: printable ASCII
// other than the quote, the backslash and the HTML characters it escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
