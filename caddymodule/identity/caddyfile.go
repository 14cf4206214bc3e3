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
//		max_age           <duration>             # longest session accepted (exp - iat); default 24h
//		jwks_refresh      <duration>             # default 5m
//		jwks_min_interval <duration>             # default 15s
//		jwks_max_stale    <duration>             # last good keys kept while the JWKS fails; default 6h
//		jwks_allow_http                          # accept a plain-http jwks_url off loopback (warned)
//		verified_cache    <n>                    # sessions remembered once verified; default 100000, 0 off
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
	case "max_age":
		err = directive.Duration(d, &p.MaxAge)
	case "jwks_refresh":
		err = directive.Duration(d, &p.JWKSRefresh)
	case "jwks_min_interval":
		err = directive.Duration(d, &p.JWKSMinInterval)
	case "jwks_max_stale":
		err = directive.Duration(d, &p.JWKSMaxStale)
	case "jwks_allow_http":
		err = directive.Flag(d, &p.JWKSAllowHTTP)
	case "verified_cache":
		var n int
		err = directive.Int(d, &n)
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
	return directive.Top(d, "seckill_session", func(name string) (bool, error) {
		var err error
		switch name {
		case "upstream":
			err = directive.String(d, &h.Upstream)
		case "cookie":
			err = directive.String(d, &h.Cookie)
		case "user_header":
			err = directive.String(d, &h.UserHeader)
		case "ttl":
			err = directive.Duration(d, &h.TTL)
		case "signed_out_ttl":
			err = directive.Duration(d, &h.SignedOutTTL)
		case "max_entries":
			err = directive.Int(d, &h.MaxEntries)
		case "timeout":
			err = directive.Duration(d, &h.Timeout)
		case "max_idle_conns":
			err = directive.Int(d, &h.MaxIdleConns)
		case "handle_errors":
			err = directive.Flag(d, &h.HandleErrors)
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
