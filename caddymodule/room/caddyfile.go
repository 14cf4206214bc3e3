package room

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens:
//
//	seckill_room [<matcher>] {
//		prefix          <path>          # default the seckill app's prefix (/seckill)
//		sale            <placeholder>   # default the segment after the prefix ({http.request.uri.path.1} under /seckill)
//		user            <placeholder>   # default {http.auth.user.id}
//		rate            <per second>    # default 50
//		oversubscribe   <factor>        # default 1.5
//		session         <duration>      # default 2m
//		prequeue        <duration>      # default 15m
//		difficulty      <min> <max>     # default 0 0 (no proof of work)
//		difficulty_rate <per second>    # default 100
//		challenge_life  <duration>      # default 30s
//		challenges_per_user <n>         # default 3, -1 unbounded
//		challenges_per_net  <n>         # default 500 (beyond: harder challenges), -1 no rise
//		challenge_prefix <ipv4> <ipv6>  # default 24 48
//		max_waiters     <n>             # default 50 per unit, within [10 000, 2 000 000]
//		frame_ancestors <source...>     # default none: the page is never framed
//		page {                          # the page buyers see (docs/room.md, "The shop's own page")
//			template      <file>        # the shop's html/template file (default: ours)
//			messages      <file|dir...> # the shop's catalogues, <language>.json
//			lang          <tag>         # one language (default: from Accept-Language)
//			image_sources <source...>   # img-src of the page's CSP (default none)
//			sale <id> { template <file>; lang <tag> } # per sale
//		}
//		refresh         <min> <max>     # default 1s 30s
//		retry_after     <duration>      # default 1s
//		cache_ttl       <duration>      # default 2s
//		summary_interval <duration>     # default 500ms
//		front_window    <duration>      # default 10s
//		admit_interval  <duration>      # default 100ms
//		presence_window <duration>|off  # default: each waiter's last refresh_s plus a grace
//		ban_zones       <zone...>       # throttle zones keyed on the user: bans end admissions
//		claim_window    <duration>|off  # default 2 x summary_interval + 2s: a no-show's capacity is passed on
//		oversubscribe_max <f>           # default 4 x oversubscribe: live admissions per unit, no-shows included
//		lane_claims     <placeholder>   # default none: the verified user's claims that pick a claim lane
//		timeout         <duration>      # default 1s (each Redis call)
//		max_pending     <n>             # default 4096, -1 unbounded
//		handle_errors                   # refusals go to handle_errors routes
//		device_binding  off|optional|required  # default off: tickets bound to the page's key (DPoP)
//		proof_max_age   <duration>      # default 60s: how old a DPoP proof may be
//	}
func (h *Room) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return h.Unmarshal(d, "seckill_room", func(name string) (bool, error) {
		var err error
		switch name {
		case "rate":
			err = handler.FloatArg(d, &h.Rate)
		case "oversubscribe":
			err = handler.FloatArg(d, &h.Oversubscribe)
		case "session":
			err = handler.DurationArg(d, &h.Session)
		case "prequeue":
			var p caddy.Duration
			err = handler.DurationArg(d, &p)
			h.Prequeue = &p
		case "difficulty":
			h.Difficulty, err = parseDifficulty(d)
		case "max_waiters":
			h.MaxWaiters, err = parseMaxWaiters(d)
		case "refresh":
			h.RefreshMin, h.RefreshMax, err = parseRefresh(d)
		case "summary_interval":
			err = handler.DurationArg(d, &h.SummaryInterval)
		case "front_window":
			err = handler.DurationArg(d, &h.FrontWindow)
		case "admit_interval":
			err = handler.DurationArg(d, &h.AdmitInterval)
		case "ban_zones":
			h.BanZones = d.RemainingArgs()
			if len(h.BanZones) == 0 {
				err = d.Errf("ban_zones takes one or more throttle zone names")
			}
		case "oversubscribe_max":
			err = handler.FloatArg(d, &h.OversubscribeMax)
		case "lane_claims":
			err = handler.StringArg(d, &h.LaneClaims)
		case "claim_window":
			var v string
			if err = handler.StringArg(d, &v); err == nil {
				if v == "off" {
					h.ClaimWindow = -1
				} else if p, perr := caddy.ParseDuration(v); perr != nil || p <= 0 {
					err = d.Errf("claim_window: %q is not a positive duration or off", v)
				} else {
					h.ClaimWindow = caddy.Duration(p)
				}
			}
		case "presence_window":
			var v string
			if err = handler.StringArg(d, &v); err == nil {
				if v == "off" {
					h.PresenceWindow = -1
				} else if p, perr := caddy.ParseDuration(v); perr != nil {
					err = d.Errf("presence_window: %q is not a duration or off", v)
				} else {
					h.PresenceWindow = caddy.Duration(p)
				}
			}
		default:
			return h.Settings.Option(d, name)
		}
		return true, err
	})
}

func parseDifficulty(d *caddyfile.Dispenser) ([]int, error) {
	args := d.RemainingArgs()
	if len(args) != 2 {
		return nil, d.Errf("difficulty takes <min> <max> (bits)")
	}
	bits := make([]int, 2)
	for i, a := range args {
		n, err := strconv.Atoi(a)
		if err != nil {
			return nil, d.Errf("difficulty: %q is not an integer", a)
		}
		bits[i] = n
	}
	return bits, nil
}

func parseMaxWaiters(d *caddyfile.Dispenser) (int64, error) {
	var n int
	if err := handler.IntArg(d, &n); err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, d.Errf("max_waiters must be at least 1")
	}
	return int64(n), nil
}

func parseRefresh(d *caddyfile.Dispenser) (lo, hi caddy.Duration, err error) {
	args := d.RemainingArgs()
	if len(args) != 2 {
		return 0, 0, d.Errf("refresh takes <min> <max> (durations)")
	}
	l, err1 := caddy.ParseDuration(args[0])
	u, err2 := caddy.ParseDuration(args[1])
	if err1 != nil || err2 != nil {
		return 0, 0, d.Errf("refresh: durations like 1s 30s")
	}
	return caddy.Duration(l), caddy.Duration(u), nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Room)(nil)
