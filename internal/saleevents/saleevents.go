// Package saleevents is the one subscription loop to the sale events broadcast on
// contract.EventsChannel ("sold_out:<sale>", "restock:<sale>"; a sharded sale's events name
// one shard). The gateway keeps its sold-out flags with it; the backend's rebalancer follows
// the shards that run dry.
//
// Pub/sub delivers at most once: whatever is published while a subscription is down is lost.
// Each user is told of every (re)subscription (Handler.Subscribed) so it can drop what it may
// have missed.
package saleevents

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
)

// Handler is what a subscription reports to. Every field is optional; the calls come from the
// Run goroutine, one at a time.
type Handler struct {
	// Subscribed is called on every (re)subscription confirmation.
	Subscribed func()
	// Event is called with each well-formed event.
	Event func(Event)
	// Lost is called when an established subscription fails, before Run resubscribes.
	Lost func(err error)
}

// Event is one sale event.
type Event struct {
	Kind string // contract.EventSoldOut or contract.EventRestock (others are passed on as they are)
	// Sale is a sale id or a shard id ("<sale>:<i>"), or one of those and a variant
	// ("<sale or shard>/<variant>", contract.VariantTarget: "sold_out:s1/red" says that
	// variant has no unit left, the others may). contract.SplitVariantTarget splits it.
	Sale string
}

// Parse reads an event payload "<kind>:<sale or shard>[/<variant>]". ok is false for a payload
// without a kind or with an invalid id.
func Parse(payload string) (ev Event, ok bool) {
	kind, rest, found := strings.Cut(payload, ":")
	if !found || kind == "" {
		return Event{}, false
	}
	if _, _, ok := contract.SplitVariantTarget(rest); !ok {
		return Event{}, false
	}
	return Event{Kind: kind, Sale: rest}, true
}

// Timing of the loop; tests shorten them.
var (
	pingAfter  = 15 * time.Second       // a quiet subscription is pinged after this long
	minBackoff = 100 * time.Millisecond // first wait before resubscribing
	maxBackoff = 2 * time.Second        // longest wait before resubscribing
)

// Run subscribes client to contract.EventsChannel and reports to h until ctx ends. A failed
// subscription is made again after a backoff (100ms doubling up to 2s); a quiet one is pinged
// every 15s so that a dead connection is noticed rather than waited on.
func Run(ctx context.Context, client redis.UniversalClient, h Handler) {
	backoff := minBackoff
	for ctx.Err() == nil {
		ps := client.Subscribe(ctx, contract.EventsChannel)
		// A blocked read does not watch ctx: closing the subscription ends it.
		stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
		if receive(ctx, ps, h) {
			backoff = minBackoff // it was up: the next failure starts the backoff afresh
		}
		stop()
		_ = ps.Close()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// receive reads until the subscription fails and reports whether it was ever confirmed.
// go-redis resubscribes a PubSub by itself after a broken connection; each confirmation is
// reported.
func receive(ctx context.Context, ps *redis.PubSub, h Handler) (confirmed bool) {
	for {
		msg, err := ps.ReceiveTimeout(ctx, pingAfter)
		if err != nil {
			if ctx.Err() != nil {
				return confirmed
			}
			var nerr interface{ Timeout() bool }
			if errors.As(err, &nerr) && nerr.Timeout() {
				if perr := ps.Ping(ctx); perr == nil {
					continue // quiet channel, live connection
				}
			}
			if confirmed && h.Lost != nil {
				h.Lost(err)
			}
			return confirmed
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				confirmed = true
				if h.Subscribed != nil {
					h.Subscribed()
				}
			}
		case *redis.Message:
			if ev, ok := Parse(m.Payload); ok && h.Event != nil {
				h.Event(ev)
			}
		}
	}
}
