package botcheckcaddy

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

// UnmarshalCaddyfile reads the option with d at its name:
//
//	challenge_provider turnstile|hcaptcha|recaptcha|privacypass {
//		site_key       <key>
//		secret         <secret>            # {env.NAME}
//		verify_url     <url>
//		widget_script_url <url>            # the pages' widget script
//		hostnames      <host...>
//		action         <action>
//		min_score      <0..1>
//		flag_below     <0..1>              # the same as min_score
//		on_fail        refuse|flag         # room, draw
//		issuer_name    <name>              # privacypass
//		issuer_key     <base64url>         # privacypass
//		context_window <duration>          # privacypass
//		timeout        <duration>
//		fail_open | fail_closed
//	}
func (p *Provider) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.Errf("challenge_provider takes the provider's name: turnstile, hcaptcha, recaptcha or privacypass")
	}
	p.Name = d.Val()
	return handler.ParseBlock(d, "challenge_provider", func(name string) (bool, error) {
		var err error
		switch name {
		case "site_key":
			err = handler.StringArg(d, &p.SiteKey)
		case "secret":
			err = handler.StringArg(d, &p.Secret)
		case "verify_url":
			err = handler.StringArg(d, &p.VerifyURL)
		case "widget_script_url":
			err = handler.StringArg(d, &p.WidgetScriptURL)
		case "hostnames":
			p.Hostnames = d.RemainingArgs()
			if len(p.Hostnames) == 0 {
				err = d.ArgErr()
			}
		case "action":
			err = handler.StringArg(d, &p.Action)
		case "min_score", "flag_below":
			err = handler.FloatArg(d, &p.MinScore)
		case "on_fail":
			err = handler.StringArg(d, &p.OnFail)
		case "issuer_name":
			err = handler.StringArg(d, &p.IssuerName)
		case "issuer_key":
			err = handler.StringArg(d, &p.IssuerKey)
		case "context_window":
			err = handler.DurationArg(d, &p.ContextWindow)
		case "timeout":
			err = handler.DurationArg(d, &p.Timeout)
		case "fail_open":
			err = handler.Flag(d, &p.FailOpen)
		case "fail_closed":
			var closed bool
			err = handler.Flag(d, &closed)
			p.FailOpen = false
		default:
			return false, nil
		}
		return true, err
	})
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Provider)(nil)
