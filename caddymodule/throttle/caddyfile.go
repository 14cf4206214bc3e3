package throttle

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("seckill_throttle", handler.Directive[Handler])
	// After forward_auth, so a user zone can key on {http.auth.user.id} set by basic_auth or
	// forward_auth; before request_header, handle/route, respond and reverse_proxy, so a
	// refused request costs nothing downstream. seckill_token (before respond) and
	// seckill_gate (before reverse_proxy) come later in the chain.
	httpcaddyfile.RegisterDirectiveOrder("seckill_throttle", httpcaddyfile.After, "forward_auth")
}

// UnmarshalCaddyfile sets up the handler:
//
//	seckill_throttle [<matcher>] {
//		zone <name> [<key> <limit> <window>] {
//			key         <placeholders>
//			limit       <n>
//			window      <duration>
//			ipv4_prefix <bits>
//			ipv6_prefix <bits>
//			local_limit <n>|-1
//			match {
//				<matchers>
//			}
//			ban {
//				after  <violations>
//				within <duration>
//				for    <duration>
//			}
//			shadow
//			on_failure fail_open|fail_closed
//		}
//		allow {
//			cidrs <cidr>...
//			match {
//				<matchers>
//			}
//		}
//		headers       ietf|legacy|none
//		retry_jitter  <duration>
//		timeout       <duration>
//		max_pending   <n>
//		handle_errors
//		disable_autopipeline
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return h.UnmarshalBlock(d, "seckill_throttle", func(name string) (bool, error) {
		var err error
		switch name {
		case "zone":
			z := new(Zone)
			if err := z.unmarshal(d); err != nil {
				return true, err
			}
			h.Zones = append(h.Zones, z)
		case "allow":
			if h.Allow == nil {
				h.Allow = new(Allow)
			}
			err = h.Allow.unmarshal(d)
		case "headers":
			err = handler.StringArg(d, &h.Headers)
		case "retry_jitter":
			err = handler.DurationArg(d, &h.RetryJitter)
		case "disable_autopipeline":
			err = handler.Flag(d, &h.DisableAutopipeline)
		default:
			return false, nil
		}
		return true, err
	})
}

func (z *Zone) unmarshal(d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	z.Name = d.Val()
	if args := d.RemainingArgs(); len(args) > 0 {
		if len(args) != 3 {
			return d.Errf("zone %s: want `zone <name> <key> <limit> <window>` or a block", z.Name)
		}
		z.Key = args[0]
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return d.Errf("zone %s: limit '%s' is not an integer", z.Name, args[1])
		}
		z.Limit = n
		w, err := caddy.ParseDuration(args[2])
		if err != nil {
			return d.Errf("zone %s: window '%s' is not a duration: %v", z.Name, args[2], err)
		}
		z.Window = caddy.Duration(w)
	}
	return handler.ParseBlock(d, "zone", func(name string) (bool, error) {
		switch name {
		case "key":
			return true, handler.StringArg(d, &z.Key)
		case "limit":
			return true, handler.IntArg(d, &z.Limit)
		case "window":
			return true, handler.DurationArg(d, &z.Window)
		case "ipv4_prefix":
			return true, handler.IntArg(d, &z.IPv4Prefix)
		case "ipv6_prefix":
			return true, handler.IntArg(d, &z.IPv6Prefix)
		case "local_limit":
			return true, handler.IntArg(d, &z.LocalLimit)
		case "match":
			set, err := caddyhttp.ParseCaddyfileNestedMatcherSet(d)
			z.MatcherSetsRaw = append(z.MatcherSetsRaw, set)
			return true, err
		case "ban":
			z.Ban = new(Ban)
			return true, z.Ban.unmarshal(d)
		case "shadow":
			return true, handler.Flag(d, &z.Shadow)
		case "on_failure":
			return true, handler.StringArg(d, &z.OnFailure)
		}
		return false, nil
	})
}

func (b *Ban) unmarshal(d *caddyfile.Dispenser) error {
	return handler.ParseBlock(d, "ban", func(name string) (bool, error) {
		switch name {
		case "after":
			return true, handler.IntArg(d, &b.After)
		case "within":
			return true, handler.DurationArg(d, &b.Within)
		case "for":
			return true, handler.DurationArg(d, &b.For)
		}
		return false, nil
	})
}

func (a *Allow) unmarshal(d *caddyfile.Dispenser) error {
	return handler.ParseBlock(d, "allow", func(name string) (bool, error) {
		switch name {
		case "cidrs":
			cidrs := d.RemainingArgs()
			if len(cidrs) == 0 {
				return true, d.ArgErr()
			}
			a.CIDRs = append(a.CIDRs, cidrs...)
			return true, nil
		case "match":
			set, err := caddyhttp.ParseCaddyfileNestedMatcherSet(d)
			a.MatcherSetsRaw = append(a.MatcherSetsRaw, set)
			return true, err
		}
		return false, nil
	})
}
