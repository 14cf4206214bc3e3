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

// drain starts one round of sale's outbox: entries claimed from dead relays, this consumer's own
// pending entries after a failure, or new entries, published and left waiting for their
// confirms (nil: nothing to publish). errChannel with a round: a publish failed, and the
// round's sent part is still to be waited for.
func (r *Relay) drain(ctx context.Context, ch *amqp.Channel, sale string) (*round, error) {
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
			return nil, err
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
			return nil, nil
		case err != nil:
			return nil, err
		}
		if len(streams) > 0 {
			msgs = streams[0].Messages
		}
		if id == "0" && len(msgs) == 0 {
			delete(r.retryOwn, sale)
		}
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	rd := r.send(ctx, ch, sale, msgs)
	if rd.broken {
		// A publish failed: the round still waits for what it sent, on a channel to replace.
		return rd, errChannel
	}
	return rd, nil
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

// round is one sale's batch of entries published together, from its publishes to its
// acknowledgement in the outbox.
type round struct {
	sale  string
	msgs  []redis.XMessage
	start time.Time
	done  []string   // entry ids to acknowledge without a confirm (malformed entries)
	sent  []inflight // published, in publish order
	acked []inflight // confirmed by the broker (set by wait)
	// broken: a publish failed, a confirm was a nack, or the wait ended before every confirm.
	broken bool
}

// send publishes msgs with publisher confirms, all in flight together; wait then collects
// the confirms and settle acknowledges the confirmed entries.
func (r *Relay) send(ctx context.Context, ch *amqp.Channel, sale string, msgs []redis.XMessage) *round {
	rd := &round{sale: sale, msgs: msgs, start: time.Now(), sent: make([]inflight, 0, len(msgs))}
	routingKey := contract.RoutingKey(contract.BaseSale(sale))
	// Sent under one cork (when the broker offers it): the whole round leaves in one write,
	// before the wait for its confirms.
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
			rd.done = append(rd.done, m.ID)
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
			rd.broken = true
			break
		}
		rd.sent = append(rd.sent, inflight{id: m.ID, orderID: orderID, dc: dc})
	}
	relayRoundEntries.Observe(float64(len(rd.sent)))
	return rd
}

// wait collects the round's confirms, for at most timeout (or until ctx ends). It runs on a
// goroutine of its own and touches only rd.
func (rd *round) wait(ctx context.Context, timeout time.Duration) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for _, f := range rd.sent {
		select {
		case <-f.dc.Done():
			if f.dc.Acked() {
				rd.acked = append(rd.acked, f)
				relayPublishSeconds.Observe(time.Since(rd.start).Seconds())
			} else {
				rd.broken = true
			}
		case <-timer.C:
			// The rest is unconfirmed. Replacing the channel makes sure no late confirm is
			// ever attributed to anything.
			rd.broken = true
			return
		case <-ctx.Done():
			rd.broken = true
			return
		}
	}
}

// settle acknowledges and deletes the round's confirmed entries that were not returned
// (returned: the message ids of the channel's returns so far; the ones of this round are
// removed). Anything else stays pending for a later round; errChannel asks for a new channel.
func (r *Relay) settle(rd *round, returned map[string]bool) error {
	done := rd.done
	broken, nReturned := rd.broken, 0
	for _, f := range rd.acked {
		if returned[f.orderID] {
			delete(returned, f.orderID)
			nReturned++
			broken = true // unroutable: redeclare the topology on a fresh channel, then resend
			continue
		}
		done = append(done, f.id)
	}
	sale := rd.sale
	failed := len(rd.msgs) - len(done)
	r.logger.Debug("relay: round", zap.String("sale", sale), zap.Int("entries", len(rd.msgs)), zap.Int("sent", len(rd.sent)),
		zap.Int("confirmed", len(rd.acked)), zap.Int("returned", nReturned), zap.Bool("broken", broken))
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
			if broken {
				return errChannel
			}
			return fmt.Errorf("acknowledge %d entries: %w", len(done), err)
		}
		relayPublished.WithLabelValues(sale).Add(float64(len(done)))
	}
	if broken {
		return errChannel
	}
	return nil
}
