package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
	"go.uber.org/zap"
)

// errChannel asks Run for a fresh channel: the current one broke, or left confirms unknown.
var errChannel = errors.New("relay: channel must be replaced")

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
			Stream: key, Group: Group, Consumer: r.consumer,
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
			Group: Group, Consumer: r.consumer, Streams: []string{key, id},
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

// ensureGroup creates the consumer group of a stream that has none (preheat.lua creates it
// with the stream; this covers a sale preheated by an older backend, or an outbox that expired
// after it drained and was made again by a purchase). From id 0: every entry is relayed.
func (r *Relay) ensureGroup(ctx context.Context, key string) {
	err := r.rdb.XGroupCreate(ctx, key, Group, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") && !strings.Contains(err.Error(), "requires the key to exist") {
		r.logger.Debug("relay: create group", zap.String("key", key), zap.Error(err))
	}
}

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
		if r.cork != nil {
			uncork := r.cork()
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
			headers, endSpan := traceEntry(ctx, sale, orderID, m) // nil, no span: an untraced entry
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, contract.Exchange, routingKey, true, false, amqp.Publishing{
				ContentType:  "application/json",
				DeliveryMode: amqp.Persistent,
				MessageId:    orderID,
				Timestamp:    time.Now(),
				Headers:      headers,
				Body:         body,
			})
			endSpan()
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
		// Not bound to ctx: a confirmed batch should be acknowledged even while stopping.
		actx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := lua.OutboxAckCall{Sale: sale, Group: Group, Retention: time.Duration(r.cfg.Retention), IDs: done}.Run(actx, r.rdb)
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
