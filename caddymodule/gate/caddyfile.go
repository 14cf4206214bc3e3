package gate

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/refusal"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("seckill_gate", refusal.Directive[Gate])
	// The gate answers the request, so it runs late: after seckill_throttle (after
	// forward_auth) and seckill_token (before respond), just before reverse_proxy, so the same
	// site block can proxy everything else.
	httpcaddyfile.RegisterDirectiveOrder("seckill_gate", httpcaddyfile.Before, "reverse_proxy")
}

// UnmarshalCaddyfile parses
//
//	seckill_gate [<matcher>] {
//		sale          <placeholder>          # default {http.request.uri.path.1}
//		user          <placeholder>          # default {http.auth.user.id}
//		require_token
//		token         <placeholder>          # default {http.request.header.X-Seckill-Token}
//		timeout       <duration>             # default 1s
//		retry_after   <duration>             # default 1s
//		max_pending   <n>                    # default 4096, -1 unbounded
//		handle_errors                        # refusals go to handle_errors routes
//		redis         pipelined|pooled       # default pipelined
//		relay {
//			disabled
//			batch_size        <n>
//			poll_interval     <duration>
//			discover_interval <duration>
//			claim_min_idle    <duration>
//			confirm_timeout   <duration>
//			retention         <duration>
//			served_only
//		}
//	}
func (g *Gate) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return g.UnmarshalBlock(d, "seckill_gate", func(name string) (bool, error) {
		var err error
		switch name {
		case "sale":
			err = caddymodule.OneString(d, &g.Sale)
		case "user":
			err = caddymodule.OneString(d, &g.User)
		case "token":
			err = caddymodule.OneString(d, &g.Token)
		case "require_token":
			if d.NextArg() {
				return true, d.ArgErr()
			}
			g.RequireToken = true
		case "retry_after":
			err = caddymodule.OneDuration(d, &g.RetryAfter)
		case "redis":
			err = caddymodule.OneString(d, &g.Redis)
			if err == nil && g.Redis != RedisPipelined && g.Redis != RedisPooled {
				return true, d.Errf("redis must be %s or %s", RedisPipelined, RedisPooled)
			}
		case "relay":
			g.Relay = new(RelayConfig)
			err = g.Relay.unmarshal(d)
		default:
			return false, nil
		}
		return true, err
	})
}

func (c *RelayConfig) unmarshal(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "disabled":
			if d.NextArg() {
				return d.ArgErr()
			}
			c.Disabled = true
		case "batch_size":
			var s string
			if err = caddymodule.OneString(d, &s); err == nil {
				c.BatchSize, err = strconv.Atoi(s)
				if err != nil || c.BatchSize <= 0 {
					return d.Errf("batch_size must be a positive integer")
				}
			}
		case "poll_interval":
			err = caddymodule.OneDuration(d, &c.PollInterval)
		case "discover_interval":
			err = caddymodule.OneDuration(d, &c.DiscoverInterval)
		case "claim_min_idle":
			err = caddymodule.OneDuration(d, &c.ClaimMinIdle)
		case "confirm_timeout":
			err = caddymodule.OneDuration(d, &c.ConfirmTimeout)
		case "served_only":
			if d.NextArg() {
				return d.ArgErr()
			}
			c.ServedOnly = true
		case "retention":
			err = caddymodule.OneDuration(d, &c.Retention)
		default:
			return d.Errf("unrecognized relay option '%s'", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Gate)(nil)
