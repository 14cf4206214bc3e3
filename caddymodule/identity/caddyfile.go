package identity

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/seckilledge/seckill/caddymodule/internal/directive"
	"github.com/seckilledge/seckill/caddymodule/refusal"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("seckill_identity", refusal.Directive[Identity])
	httpcaddyfile.RegisterHandlerDirective("seckill_session", refusal.Directive[Session])
	// Identity comes before everything that needs it. seckill_throttle is ordered after
	// forward_auth; these two sit between basic_auth and forward_auth (identity first), so in a
	// plain site block the order basic_auth, seckill_identity, seckill_session, forward_auth,
	// seckill_throttle holds whatever order the plugins' init functions run in.
	httpcaddyfile.RegisterDirectiveOrder("seckill_identity", httpcaddyfile.After, "basic_auth")
	httpcaddyfile.RegisterDirectiveOrder("seckill_session", httpcaddyfile.Before, "forward_auth")
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens:
//
//	seckill_identity [<matcher>] {
//		cookie            <name>                 # the session cookie; Authorization: Bearer is also read
//		jwks_url          <url>                  # the shop's published keys
//		key               <kid> <alg> <value>    # or keys here (repeatable): HS256 secret or PEM public key, usually {env.VAR}
//		issuer            <iss>                  # required value of iss
//		audience          <aud>                  # required member of aud
//		user_claim        <claim>                # default sub
//		leeway            <duration>             # default 30s
//		jwks_refresh      <duration>             # default 5m
//		jwks_min_interval <duration>             # default 15s
//		handle_errors                            # refusals go to handle_errors routes
//	}
func (h *Identity) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return directive.Top(d, "seckill_identity", func(name string) (bool, error) {
		switch name {
		case "handle_errors":
			return true, directive.Flag(d, &h.HandleErrors)
		}
		return h.JWT.unmarshalOption(d, name)
	})
}

// unmarshalOption parses one option of the JWT verifier.
func (p *JWT) unmarshalOption(d *caddyfile.Dispenser, name string) (bool, error) {
	var err error
	switch name {
	case "cookie":
		err = directive.String(d, &p.Cookie)
	case "jwks_url":
		err = directive.String(d, &p.JWKSURL)
	case "key":
		var k StaticKey
		if !d.Args(&k.ID, &k.Algorithm, &k.Value) || d.NextArg() {
			return true, d.Err("key takes <kid> <alg> <value>")
		}
		p.Keys = append(p.Keys, k)
	case "issuer":
		err = directive.String(d, &p.Issuer)
	case "audience":
		err = directive.String(d, &p.Audience)
	case "user_claim":
		err = directive.String(d, &p.UserClaim)
	case "leeway":
		var l caddy.Duration
		err = directive.Duration(d, &l)
		p.Leeway = &l
	case "jwks_refresh":
		err = directive.Duration(d, &p.JWKSRefresh)
	case "jwks_min_interval":
		err = directive.Duration(d, &p.JWKSMinInterval)
	default:
		return false, nil
	}
	return true, err
}

// UnmarshalCaddyfile sets up the provider from Caddyfile tokens (the options of
// seckill_identity but handle_errors), for a JSON config written by hand or another adapter.
func (p *JWT) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return directive.Top(d, "seckill_jwt", func(name string) (bool, error) {
		return p.unmarshalOption(d, name)
	})
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*Identity)(nil)
	_ caddyfile.Unmarshaler = (*JWT)(nil)
)
