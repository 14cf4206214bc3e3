package room

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("seckill_room", parseCaddyfile)
	// The room answers its own paths (/seckill/{sale}/room, /challenge, /queue) and is meant
	// for a path matcher of its own, so its place among the other seckill directives does not
	// matter; before respond keeps it ahead of catch-all responses.
	httpcaddyfile.RegisterDirectiveOrder("seckill_room", httpcaddyfile.Before, "respond")
}

// parseCaddyfile sets up the handler from Caddyfile tokens:
//
//	seckill_room [<matcher>] {
//		sale            <placeholder>   # default {http.request.uri.path.1}
//		user            <placeholder>   # default {http.auth.user.id}
//		rate            <per second>    # default 50
//		oversubscribe   <factor>        # default 1.5
//		session         <duration>      # default 2m
//		prequeue        <duration>      # default 15m
//		difficulty      <min> <max>     # default 0 0 (no proof of work)
//		difficulty_rate <per second>    # default 100
//		refresh         <min> <max>     # default 1s 30s
//		timeout         <duration>      # default 1s
//		retry_after     <duration>      # default 1s
//		cache_ttl       <duration>      # default 2s
//	}
func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	r := new(Room)
	err := r.UnmarshalCaddyfile(h.Dispenser)
	return r, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens.
func (h *Room) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		var err error
		switch d.Val() {
		case "sale":
			err = caddymodule.OneString(d, &h.Sale)
		case "user":
			err = caddymodule.OneString(d, &h.User)
		case "rate":
			err = oneFloat(d, &h.Rate)
		case "oversubscribe":
			err = oneFloat(d, &h.Oversubscribe)
		case "session":
			err = caddymodule.OneDuration(d, &h.Session)
		case "prequeue":
			var p caddy.Duration
			err = caddymodule.OneDuration(d, &p)
			h.Prequeue = &p
		case "difficulty":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("difficulty takes <min> <max> (bits)")
			}
			h.Difficulty = make([]int, 2)
			for i, a := range args {
				if h.Difficulty[i], err = strconv.Atoi(a); err != nil {
					return d.Errf("difficulty: %q is not an integer", a)
				}
			}
		case "difficulty_rate":
			err = oneFloat(d, &h.DifficultyRate)
		case "refresh":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("refresh takes <min> <max> (durations)")
			}
			lo, err1 := caddy.ParseDuration(args[0])
			hi, err2 := caddy.ParseDuration(args[1])
			if err1 != nil || err2 != nil {
				return d.Errf("refresh: durations like 1s 30s")
			}
			h.RefreshMin, h.RefreshMax = caddy.Duration(lo), caddy.Duration(hi)
		case "timeout":
			err = caddymodule.OneDuration(d, &h.Timeout)
		case "retry_after":
			err = caddymodule.OneDuration(d, &h.RetryAfter)
		case "cache_ttl":
			err = caddymodule.OneDuration(d, &h.CacheTTL)
		default:
			return d.Errf("unrecognized seckill_room option '%s'", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func oneFloat(d *caddyfile.Dispenser, dst *float64) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	v, err := strconv.ParseFloat(d.Val(), 64)
	if err != nil {
		return d.Errf("%s: %q is not a number", d.Val(), d.Val())
	}
	*dst = v
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Room)(nil)
