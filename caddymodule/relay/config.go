package relay

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Config tunes the outbox relay. It is app-wide: the `seckill` app runs one relay per config
// (JSON "relay" on the app, `relay { ... }` in the `seckill` global option, parsed by the
// app's Caddyfile code: this package links no Caddy, so its tests do not either).
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
	BatchWait Duration `json:"batch_wait,omitempty"`

	// How often an idle relay looks for new entries. An accepted purchase in this instance
	// wakes it at once; entries written by other instances wait at most this long. Default 100ms.
	PollInterval Duration `json:"poll_interval,omitempty"`

	// How often the relay rescans the sales index (seckill:sales) for outboxes with entries.
	// Default 2s.
	DiscoverInterval Duration `json:"discover_interval,omitempty"`

	// How long an entry must have been pending with another relay (a dead or stuck instance)
	// before this one claims it and publishes it again. Default 30s.
	ClaimMinIdle Duration `json:"claim_min_idle,omitempty"`

	// How long to wait for RabbitMQ's confirms of a round; unconfirmed entries stay pending and
	// are sent again on a fresh channel. Default 10s.
	ConfirmTimeout Duration `json:"confirm_timeout,omitempty"`

	// Expiry of a drained outbox whose sale has no expiry in Redis. Default 24h.
	Retention Duration `json:"retention,omitempty"`

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
		c.BatchWait = Duration(time.Millisecond)
	}
	if c.PollInterval <= 0 {
		c.PollInterval = Duration(100 * time.Millisecond)
	}
	if c.DiscoverInterval <= 0 {
		c.DiscoverInterval = Duration(2 * time.Second)
	}
	if c.ClaimMinIdle <= 0 {
		c.ClaimMinIdle = Duration(30 * time.Second)
	}
	if c.ConfirmTimeout <= 0 {
		c.ConfirmTimeout = Duration(10 * time.Second)
	}
	if c.Retention <= 0 {
		c.Retention = Duration(24 * time.Hour)
	}
}

// Duration is a length of time in the relay's JSON config, read as Caddy reads its own
// (caddy.Duration): an integer of nanoseconds, or a string time.ParseDuration reads with "d"
// for 24h days too ("1d12h", "1.5d"). It is written as an integer of nanoseconds, as
// caddy.Duration is. internal/conformance holds it to caddy.Duration's reading.
type Duration time.Duration

// UnmarshalJSON reads an integer of nanoseconds or a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) == 0 {
		return errors.New("relay: an empty duration")
	}
	var v time.Duration
	var err error
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		v, err = ParseDuration(strings.Trim(string(b), `"`))
	} else {
		err = json.Unmarshal(b, &v)
	}
	*d = Duration(v)
	return err
}

// ParseDuration is time.ParseDuration with a "d" unit, a day of 24h: each number followed by
// "d" is rewritten in hours before time.ParseDuration reads the string.
func ParseDuration(s string) (time.Duration, error) {
	if len(s) > 1024 {
		return 0, errors.New("parsing duration: input string too long")
	}
	var out strings.Builder
	written := 0 // s[:written] is in out
	start := 0   // where the number being read starts
	inNum := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 'd' {
			days, err := strconv.ParseFloat(s[start:i], 64)
			if err != nil {
				return 0, err
			}
			out.WriteString(s[written:start])
			out.WriteString(strconv.FormatFloat(days*24, 'f', -1, 64))
			out.WriteByte('h')
			written, start, inNum = i+1, i+1, false
			continue
		}
		if !inNum {
			start = i
		}
		inNum = (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+'
	}
	out.WriteString(s[written:])
	return time.ParseDuration(out.String())
}
