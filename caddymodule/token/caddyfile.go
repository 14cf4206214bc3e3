package token

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botcheckcaddy"
	"github.com/seckilledge/seckill/caddymodule/handler"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("seckill_token", handler.Directive[Issuer])
	// Before respond: after every request-shaping and authentication directive and after
	// seckill_throttle (registered after forward_auth), before seckill_gate (registered before
	// reverse_proxy, which comes after respond). Each of the three plugins is anchored to a
	// different standard directive, so the order throttle -> token -> gate holds whatever
	// order the packages' init functions run in.
	httpcaddyfile.RegisterDirectiveOrder("seckill_token", httpcaddyfile.Before, "respond")
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens:
//
//	seckill_token [<matcher>] {
//		prefix      <path>          # default the seckill app's prefix (/seckill)
//		sale        <placeholder>   # default the segment after the prefix ({http.request.uri.path.1} under /seckill)
//		user        <placeholder>   # default {http.auth.user.id}
//		ttl         <duration>      # default 2m
//		lead_time   <duration>      # default 5m
//		timeout     <duration>      # default 1s
//		retry_after <duration>      # default 1s
//		require_admission           # sales with a waiting room: a live admission is needed
//		max_pending <n>             # default 4096, -1 unbounded
//		handle_errors               # refusals go to handle_errors routes
//		device_binding off|optional|required  # default off: bind tokens to the page's key (DPoP)
//		proof_max_age <duration>    # default 60s: how old a DPoP proof may be
//		challenge_provider turnstile|hcaptcha|recaptcha|privacypass { ... }  # a bot challenge per token (botcheckcaddy)
//	}
func (h *Issuer) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return h.UnmarshalBlock(d, "seckill_token", func(name string) (bool, error) {
		var err error
		switch name {
		case "ttl":
			err = handler.DurationArg(d, &h.TTL)
		case "lead_time":
			var lead caddy.Duration
			err = handler.DurationArg(d, &lead)
			h.LeadTime = &lead
		case "retry_after":
			err = handler.DurationArg(d, &h.RetryAfter)
		case "require_admission":
			err = handler.Flag(d, &h.RequireAdmission)
		case "challenge_provider":
			h.ChallengeProvider = new(botcheckcaddy.Provider)
			err = h.ChallengeProvider.UnmarshalCaddyfile(d)
		default:
			return h.Settings.Option(d, name)
		}
		return true, err
	}, &h.Subject)
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Issuer)(nil)
