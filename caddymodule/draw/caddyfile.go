package draw

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens:
//
//	seckill_draw [<matcher>] {
//		prefix          <path>          # default the seckill app's prefix (/seckill)
//		sale            <placeholder>   # default the segment after the prefix ({http.request.uri.path.1} under /seckill)
//		user            <placeholder>   # default {http.auth.user.id}
//		difficulty_rate <per second>    # default 100
//		challenge_life  <duration>      # default 30s
//		challenges_per_user <n>         # default 3, -1 unbounded
//		challenges_per_net  <n>         # default 500 (beyond: harder challenges), -1 no rise
//		challenge_prefix <ipv4> <ipv6>  # default 24 48
//		frame_ancestors <source...>     # default none: the page is never framed
//		page {                          # the page buyers see (docs/room.md, "The shop's own page")
//			template      <file>        # the shop's html/template file (default: ours)
//			messages      <file|dir...> # the shop's catalogues, <language>.json
//			lang          <tag>         # one language (default: from Accept-Language)
//			image_sources <source...>   # img-src of the page's CSP (default none)
//			sale <id> { template <file>; lang <tag> } # per sale
//		}
//		retry_after     <duration>      # default 1s
//		cache_ttl       <duration>      # default 2s
//		timeout         <duration>      # default 1s (each Redis call)
//		max_pending     <n>             # default 4096, -1 unbounded
//		handle_errors                   # refusals go to handle_errors routes
//	}
func (h *Draw) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	// Every option of the draw is one it shares with the waiting room (roomkit.Kit).
	return h.Unmarshal(d, "seckill_draw", func(string) (bool, error) { return false, nil })
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Draw)(nil)
