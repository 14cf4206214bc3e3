package gate

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/seckilledge/seckill/caddymodule/handler"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("seckill_gate", handler.Directive[Gate])
	// The gate answers the request, so it runs late: after seckill_throttle (after
	// forward_auth) and seckill_token (before respond), just before reverse_proxy, so the same
	// site block can proxy everything else.
	httpcaddyfile.RegisterDirectiveOrder("seckill_gate", httpcaddyfile.Before, "reverse_proxy")
}

// UnmarshalCaddyfile parses
//
//	seckill_gate [<matcher>] {
//		prefix        <path>                 # default the seckill app's prefix (/seckill)
//		sale          <placeholder>          # default the segment after the prefix ({http.request.uri.path.1} under /seckill)
//		user          <placeholder>          # default {http.auth.user.id}
//		require_token
//		require_admission                    # sales with a waiting room: a live admission is needed
//		token         <placeholder>          # default {http.request.header.X-Seckill-Token}
//		timeout       <duration>             # default 1s
//		retry_after   <duration>             # default 1s
//		max_pending   <n>                    # default 4096, -1 unbounded
//		handle_errors                        # refusals go to handle_errors routes
//		redis         pipelined|pooled       # default pipelined
//		device_binding off|optional|required # default off: tokens bound to the page's key (DPoP)
//		proof_max_age  <duration>            # default 60s: how old a DPoP proof may be
//	}
func (g *Gate) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return g.UnmarshalBlock(d, "seckill_gate", func(name string) (bool, error) {
		var err error
		switch name {
		case "token":
			err = handler.StringArg(d, &g.Token)
		case "require_token":
			err = handler.Flag(d, &g.RequireToken)
		case "require_admission":
			err = handler.Flag(d, &g.RequireAdmission)
		case "retry_after":
			err = handler.DurationArg(d, &g.RetryAfter)
		case "redis":
			err = handler.StringArg(d, &g.Redis)
			if err == nil && g.Redis != RedisPipelined && g.Redis != RedisPooled {
				return true, d.Errf("redis must be %s or %s", RedisPipelined, RedisPooled)
			}
		case "relay":
			// The relay belongs to the app: the block is refused with a pointer to it.
			return true, d.Err(errRelayMoved.Error())
		default:
			return g.Settings.Option(d, name)
		}
		return true, err
	}, &g.Subject)
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Gate)(nil)
