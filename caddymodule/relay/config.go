package relay

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

// Config tunes the outbox relay. It is app-wide: the `seckill` app runs one relay per config
// (JSON "relay" on the app, `relay { ... }` in the `seckill` global option).
type Config struct {
	// Do not run a relay in this instance (another instance, or a separate process, drains the
	// outboxes). Default false: every gateway relays.
	Disabled bool `json:"disabled,omitempty"`

	// Outbox entries read and published per round at most (they are in flight together,
	// waiting for their confirms). Default 256.
	BatchSize int `json:"batch_size,omitempty"`

	// The longest an entry waits for the round in flight before it. An entry that finds no
	// round in flight is read and published at once; entries written while a round waits for
	// its confirms are gathered and published together in one round when that round is
	// confirmed, when batch_wait has passed since the first of them (the new round then flies
	// beside the old one), or at once when batch_size of them are waiting. So a lone winner
	// never waits for company, and winners close together share a confirm. Default 1ms.
	BatchWait caddy.Duration `json:"batch_wait,omitempty"`

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

	// Relay only the sales this instance accepted orders for, not every sale of its namespace
	// listed in seckill:sales. Entries another (dead) instance left pending in those sales are
	// still claimed. Deployments sharing one Redis are kept apart by the app's namespace;
	// this narrows a relay further, to its own instance's sales.
	ServedOnly bool `json:"served_only,omitempty"`
}

func (c *Config) setDefaults() {
	if c.BatchSize <= 0 {
		c.BatchSize = 256
	}
	if c.BatchWait <= 0 {
		c.BatchWait = caddy.Duration(time.Millisecond)
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

// UnmarshalBlock parses the block of a `relay` subdirective (the dispenser is on the
// `relay` token):
//
//	relay {
//		disabled
//		batch_size        <n>
//		batch_wait        <duration>
//		poll_interval     <duration>
//		discover_interval <duration>
//		claim_min_idle    <duration>
//		confirm_timeout   <duration>
//		retention         <duration>
//		served_only
//	}
func (c *Config) UnmarshalBlock(d *caddyfile.Dispenser) error {
	return handler.ParseBlock(d, "relay", func(name string) (bool, error) {
		switch name {
		case "disabled":
			return true, handler.Flag(d, &c.Disabled)
		case "served_only":
			return true, handler.Flag(d, &c.ServedOnly)
		case "batch_size":
			if err := handler.IntArg(d, &c.BatchSize); err != nil || c.BatchSize <= 0 {
				return true, d.Errf("batch_size must be a positive integer")
			}
			return true, nil
		case "batch_wait":
			return true, handler.DurationArg(d, &c.BatchWait)
		case "poll_interval":
			return true, handler.DurationArg(d, &c.PollInterval)
		case "discover_interval":
			return true, handler.DurationArg(d, &c.DiscoverInterval)
		case "claim_min_idle":
			return true, handler.DurationArg(d, &c.ClaimMinIdle)
		case "confirm_timeout":
			return true, handler.DurationArg(d, &c.ConfirmTimeout)
		case "retention":
			return true, handler.DurationArg(d, &c.Retention)
		}
		return false, nil
	})
}
