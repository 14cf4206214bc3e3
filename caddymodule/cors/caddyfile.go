package cors

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("seckill_cors", handler.Directive[CORS])
	// Before any authentication: a preflight carries no credentials, and the throttle and the
	// handlers need the origin's mark.
	httpcaddyfile.RegisterDirectiveOrder("seckill_cors", httpcaddyfile.Before, "basic_auth")
}

// UnmarshalCaddyfile parses
//
//	seckill_cors [<matcher>] [<origin>...] {
//		origins <origin>...   # scheme://host[:port]; placeholders split at spaces and commas
//		headers <name>...     # request headers besides the client's (X-User-ID on a demo)
//		max_age <duration>    # how long a preflight is kept; default 10m
//	}
func (h *CORS) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive's name
	h.Origins = append(h.Origins, d.RemainingArgs()...)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "origins":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.ArgErr()
			}
			h.Origins = append(h.Origins, args...)
		case "headers":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.ArgErr()
			}
			h.Headers = append(h.Headers, args...)
		case "max_age":
			if err := handler.DurationArg(d, &h.MaxAge); err != nil {
				return err
			}
		default:
			return d.Errf("unrecognized seckill_cors option '%s'", d.Val())
		}
	}
	return nil
}

var _ caddyfile.Unmarshaler = (*CORS)(nil)
