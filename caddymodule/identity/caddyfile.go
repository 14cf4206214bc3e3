package identity

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("seckill_identity", handler.Directive[Identity])
	httpcaddyfile.RegisterHandlerDirective("seckill_session", handler.Directive[Session])
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
//		lane_claim        <claim>                # sets {http.auth.user.lanes}: a string, or strings joined by spaces
//		leeway            <duration>             # default 30s
//		max_age           <duration>             # longest session accepted (exp - iat); default 24h
//		jwks_refresh      <duration>             # default 5m
//		jwks_min_interval <duration>             # default 15s
//		jwks_max_stale    <duration>             # last good keys kept while the JWKS fails; default 6h
//		jwks_allow_http                          # accept a plain-http jwks_url off loopback (warned)
//		verified_cache    <n>                    # sessions remembered once verified; default 100000, 0 off
//		handle_errors                            # refusals go to handle_errors routes
//	}
func (h *Identity) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return handler.ParseDirective(d, "seckill_identity", func(name string) (bool, error) {
		switch name {
		case "handle_errors":
			return true, handler.Flag(d, &h.HandleErrors)
		}
		return h.JWT.unmarshalOption(d, name)
	})
}

// unmarshalOption parses one option of the JWT verifier.
func (p *JWT) unmarshalOption(d *caddyfile.Dispenser, name string) (bool, error) {
	var err error
	switch name {
	case "cookie":
		err = handler.StringArg(d, &p.Cookie)
	case "jwks_url":
		err = handler.StringArg(d, &p.JWKSURL)
	case "key":
		var k StaticKey
		if !d.Args(&k.ID, &k.Algorithm, &k.Value) || d.NextArg() {
			return true, d.Err("key takes <kid> <alg> <value>")
		}
		p.Keys = append(p.Keys, k)
	case "issuer":
		err = handler.StringArg(d, &p.Issuer)
	case "audience":
		err = handler.StringArg(d, &p.Audience)
	case "user_claim":
		err = handler.StringArg(d, &p.UserClaim)
	case "lane_claim":
		err = handler.StringArg(d, &p.LaneClaim)
	case "leeway":
		var l caddy.Duration
		err = handler.DurationArg(d, &l)
		p.Leeway = &l
	case "max_age":
		err = handler.DurationArg(d, &p.MaxAge)
	case "jwks_refresh":
		err = handler.DurationArg(d, &p.JWKSRefresh)
	case "jwks_min_interval":
		err = handler.DurationArg(d, &p.JWKSMinInterval)
	case "jwks_max_stale":
		err = handler.DurationArg(d, &p.JWKSMaxStale)
	case "jwks_allow_http":
		err = handler.Flag(d, &p.JWKSAllowHTTP)
	case "verified_cache":
		var n int
		err = handler.IntArg(d, &n)
		p.VerifiedCache = &n
	default:
		return false, nil
	}
	return true, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens:
//
//	seckill_session [<matcher>] {
//		upstream       <url>         # the shop's session endpoint, required
//		cookie         <name>        # the session cookie (the cache key, with Authorization)
//		user_header    <header>      # default X-User-ID
//		ttl            <duration>    # default 30s
//		signed_out_ttl <duration>    # default 5s
//		max_entries    <n>           # default 100000
//		timeout        <duration>    # default 2s
//		max_idle_conns <n>           # default 64
//		handle_errors                # refusals go to handle_errors routes
//	}
func (h *Session) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return handler.ParseDirective(d, "seckill_session", func(name string) (bool, error) {
		var err error
		switch name {
		case "upstream":
			err = handler.StringArg(d, &h.Upstream)
		case "cookie":
			err = handler.StringArg(d, &h.Cookie)
		case "user_header":
			err = handler.StringArg(d, &h.UserHeader)
		case "ttl":
			err = handler.DurationArg(d, &h.TTL)
		case "signed_out_ttl":
			err = handler.DurationArg(d, &h.SignedOutTTL)
		case "max_entries":
			err = handler.IntArg(d, &h.MaxEntries)
		case "timeout":
			err = handler.DurationArg(d, &h.Timeout)
		case "max_idle_conns":
			err = handler.IntArg(d, &h.MaxIdleConns)
		case "handle_errors":
			err = handler.Flag(d, &h.HandleErrors)
		default:
			return false, nil
		}
		return true, err
	})
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*Identity)(nil)
	_ caddyfile.Unmarshaler = (*Session)(nil)
)
