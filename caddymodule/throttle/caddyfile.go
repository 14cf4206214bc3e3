package throttle

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/refusal"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("seckill_throttle", refusal.Directive[Handler])
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
			err = caddymodule.OneString(d, &h.Headers)
		case "retry_jitter":
			err = caddymodule.OneDuration(d, &h.RetryJitter)
		case "disable_autopipeline":
			if d.NextArg() {
				return true, d.ArgErr()
			}
			h.DisableAutopipeline = true
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
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "key":
			err = caddymodule.OneString(d, &z.Key)
		case "limit":
			err = caddymodule.OneInt(d, &z.Limit)
		case "window":
			err = caddymodule.OneDuration(d, &z.Window)
		case "ipv4_prefix":
			err = caddymodule.OneInt(d, &z.IPv4Prefix)
		case "ipv6_prefix":
			err = caddymodule.OneInt(d, &z.IPv6Prefix)
		case "local_limit":
			err = caddymodule.OneInt(d, &z.LocalLimit)
		case "match":
			var set caddy.ModuleMap
			set, err = caddyhttp.ParseCaddyfileNestedMatcherSet(d)
			if err == nil {
				z.MatcherSetsRaw = append(z.MatcherSetsRaw, set)
			}
		case "ban":
			z.Ban = new(Ban)
			err = z.Ban.unmarshal(d)
		case "shadow":
			if d.NextArg() {
				return d.ArgErr()
			}
			z.Shadow = true
		case "on_failure":
			err = caddymodule.OneString(d, &z.OnFailure)
		default:
			return d.Errf("unrecognized zone option '%s'", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *Ban) unmarshal(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "after":
			err = caddymodule.OneInt(d, &b.After)
		case "within":
			err = caddymodule.OneDuration(d, &b.Within)
		case "for":
			err = caddymodule.OneDuration(d, &b.For)
		default:
			return d.Errf("unrecognized ban option '%s'", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *Allow) unmarshal(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "cidrs":
			cidrs := d.RemainingArgs()
			if len(cidrs) == 0 {
				return d.ArgErr()
			}
			a.CIDRs = append(a.CIDRs, cidrs...)
		case "match":
			set, err := caddyhttp.ParseCaddyfileNestedMatcherSet(d)
			if err != nil {
				return err
			}
			a.MatcherSetsRaw = append(a.MatcherSetsRaw, set)
		default:
			return d.Errf("unrecognized allow option '%s'", d.Val())
		}
	}
	return nil
}
