package identity

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/caddyauth"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule/identity/core"
)

func init() {
	caddy.RegisterModule(JWT{})
}

// Defaults of the optional fields.
const (
	DefaultUserClaim = "sub"
	DefaultLeeway    = 30 * time.Second
	// DefaultMaxAge is the longest session accepted by default: a day covers a sale and the
	// sessions shops usually sign (the sample shop's last an hour).
	DefaultMaxAge = 24 * time.Hour
	// maxLeeway: beyond a few minutes a "leeway" is an extension of every session.
	maxLeeway = 5 * time.Minute
)

// JWT verifies a signed session (a JWT) locally: no call to the shop per request. It is the
// authentication provider `http.authentication.providers.seckill_jwt` for Caddy's
// `authentication` handler, and the verifier inside `seckill_identity` (docs/identity.md
// says which to use).
//
// The token is the bearer token of the Authorization header or the session cookie. Its
// signature must verify with a configured key (static, or published at jwks_url) whose
// algorithm is pinned; exp is required; nbf, iat, iss and aud are checked; the user claim must
// be a contract id. The user becomes {http.auth.user.id}, and with lane_claim the user's lane
// claims {http.auth.user.lanes}.
type JWT struct {
	// The session cookie's name. The bearer token of an Authorization header is read first;
	// without this, only that header is read.
	Cookie string `json:"cookie,omitempty"`

	// Where the shop publishes its public keys (a JWKS document, RFC 7517), e.g.
	// https://shop.example/.well-known/jwks.json. Fetched at start and every jwks_refresh in the
	// background; a token with an unknown kid causes one early fetch (at most one per
	// jwks_min_interval); when the endpoint fails, the last good keys stay in use for at most
	// jwks_max_stale. One fetcher per URL is shared by every config that uses it and survives
	// config reloads. While no usable keys are loaded every session is refused with 503
	// unavailable (fail closed), and a request may fetch (at most once per
	// jwks_min_interval). Plain http is accepted only to a loopback host (the shop on the same
	// machine) unless jwks_allow_http is set: anyone on the path could otherwise publish keys.
	// A redirect is followed only if it keeps https (and to http only on loopback).
	JWKSURL string `json:"jwks_url,omitempty"`

	// Accept a plain-http jwks_url to a host that is not loopback (a warning is logged at
	// provision). Only for a network where nobody can tamper with the fetch.
	JWKSAllowHTTP bool `json:"jwks_allow_http,omitempty"`

	// Keys written in the configuration, in addition to or instead of jwks_url: each pins its
	// algorithm to a kid. Values are usually {env.VAR}.
	Keys []StaticKey `json:"keys,omitempty"`

	// When set, a token's iss must be exactly this.
	Issuer string `json:"issuer,omitempty"`

	// When set, this must be one of a token's aud.
	Audience string `json:"audience,omitempty"`

	// The claim naming the user. Its value must match ^[A-Za-z0-9_-]{1,64}$ (the contract's
	// ids), or the token is refused. Default sub.
	UserClaim string `json:"user_claim,omitempty"`

	// The claim holding the user's lane claims, e.g. "lanes": a verified session sets
	// {http.auth.user.lanes} from it, the placeholder a waiting room's lane_claims reads to put
	// a member in a claim lane (docs/room.md, "Lanes"). A string is taken as it is, an array of
	// strings is joined by spaces; any other value (a number, an object, an array holding
	// anything but strings) is ignored and the placeholder is empty, as when the claim is
	// absent: the session is still verified, it only picks no lane. Default none: the
	// placeholder is not set.
	LaneClaim string `json:"lane_claim,omitempty"`

	// Clock skew forgiven when checking exp, nbf and iat. Default 30s; at most 5m.
	Leeway *caddy.Duration `json:"leeway,omitempty"`

	// The longest session accepted: a token whose exp is more than this after its iat (after
	// now, without iat) is refused, whatever its signature. A session signed to last for
	// years (or a shop's bug) must not be a key to the account for ever. Default
	// 24h; 0 is the default, there is no "unlimited".
	MaxAge caddy.Duration `json:"max_age,omitempty"`

	// How often the JWKS is fetched in the background. Default 5m.
	JWKSRefresh caddy.Duration `json:"jwks_refresh,omitempty"`

	// The least time between two fetches of the JWKS caused by tokens with an unknown kid: a
	// flood of forged kids costs the shop one fetch per interval. Default 15s.
	JWKSMinInterval caddy.Duration `json:"jwks_min_interval,omitempty"`

	// How long the last good keys stay in use while every fetch of the JWKS fails. After it,
	// the keys are dropped and sessions are refused with 503 unavailable until the endpoint
	// answers: a key the shop dropped (perhaps because it leaked) must not stay trusted
	// forever because its JWKS is unreachable. Default 6h.
	JWKSMaxStale caddy.Duration `json:"jwks_max_stale,omitempty"`

	// The most verified sessions remembered, so a session sent many times a second has its
	// signature checked once: a hit costs a SHA-256 of the token and a map lookup instead of a
	// signature check, and is accepted in exactly the time window and only with the very key
	// a fresh check would use (a key dropped from the JWKS or replaced ends its sessions at the
	// refresh that sees it). Only successful verifications are remembered; the least recently
	// used is forgotten first. Default 100000 (about 22 MB); 0 turns the cache off.
	VerifiedCache *int `json:"verified_cache,omitempty"`

	verifier *core.Verifier
	jwks     *core.JWKS
	logger   *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (JWT) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.authentication.providers.seckill_jwt",
		New: func() caddy.Module { return new(JWT) },
	}
}

// Provision sets the defaults, parses the static keys and joins (or starts) the JWKS fetcher
// of jwks_url. It does not wait for the network: the fetch runs in the background and the
// first requests wait for it (at most a few seconds).
func (p *JWT) Provision(ctx caddy.Context) error {
	p.logger = ctx.Logger()
	registerMetrics(ctx.GetMetricsRegistry())
	return p.setup(p.pooledJWKS)
}

// jwksPool keeps one JWKS source per URL across config reloads: a reload neither refetches
// the keys nor forgets the last good ones (the JWKS endpoint may be down during the reload).
var jwksPool = caddy.NewUsagePool()

// pooledJWKS joins the fetcher of url, starting it when no loaded config uses that URL yet.
func (p *JWT) pooledJWKS(url string) (*core.JWKS, error) {
	refresh, minInterval := time.Duration(p.JWKSRefresh), time.Duration(p.JWKSMinInterval)
	maxStale := time.Duration(p.JWKSMaxStale)
	v, _, err := jwksPool.LoadOrNew(url, func() (caddy.Destructor, error) {
		j := core.NewJWKS(url, core.JWKSClient, refresh, minInterval, p.logger, nil)
		j.Configure(refresh, minInterval, maxStale, p.logger)
		return j, nil
	})
	if err != nil {
		return nil, err
	}
	j := v.(*core.JWKS)
	// The newest config's settings and logger win.
	j.Configure(refresh, minInterval, maxStale, p.logger)
	return j, nil
}

// StaticKey is a key written in the configuration.
type StaticKey struct {
	// The key id: tokens signed with this key carry it as their `kid` header.
	ID string `json:"kid"`

	// The one algorithm this key verifies: HS256, RS256, ES256 or EdDSA.
	Algorithm string `json:"alg"`

	// The key itself, usually {env.VAR} (read when the config is loaded, so the value never
	// appears in the adapted config): for HS256 the shared secret (at least 32 bytes), for the
	// others a PEM public key ("-----BEGIN PUBLIC KEY-----", PKIX).
	Value string `json:"value"`
}

// setup applies the defaults and builds the verifier; jwks gives the fetcher of a URL.
func (p *JWT) setup(jwks func(url string) (*core.JWKS, error)) error {
	if p.logger == nil {
		p.logger = zap.NewNop()
	}
	if p.UserClaim == "" {
		p.UserClaim = DefaultUserClaim
	}
	if p.Leeway == nil {
		d := caddy.Duration(DefaultLeeway)
		p.Leeway = &d
	}
	if p.VerifiedCache == nil {
		n := core.DefaultVerifiedCache
		p.VerifiedCache = &n
	}
	if p.JWKSRefresh <= 0 {
		p.JWKSRefresh = caddy.Duration(core.DefaultJWKSRefresh)
	}
	if p.JWKSMinInterval <= 0 {
		p.JWKSMinInterval = caddy.Duration(core.DefaultJWKSMinInterval)
	}
	if p.MaxAge <= 0 {
		p.MaxAge = caddy.Duration(DefaultMaxAge)
	}
	if p.JWKSMaxStale <= 0 {
		p.JWKSMaxStale = caddy.Duration(core.DefaultJWKSMaxStale)
	}
	// {env.*} only: these are read once, at load, and must not depend on a request.
	repl := caddy.NewReplacer()
	sources := core.KeySources{Static: core.StaticKeys{}}
	for _, k := range p.Keys {
		key, err := core.ParseStaticKey(k.ID, k.Algorithm, repl.ReplaceAll(k.Value, ""))
		if err != nil {
			return fmt.Errorf("seckill_jwt: %w", err)
		}
		if _, dup := sources.Static[key.ID]; dup {
			return fmt.Errorf("seckill_jwt: key %q twice", key.ID)
		}
		sources.Static[key.ID] = key
	}
	if p.JWKSURL != "" {
		u := repl.ReplaceAll(p.JWKSURL, "")
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return fmt.Errorf("seckill_jwt: jwks_url %q: want an http(s) URL", u)
		}
		if pu.Scheme == "http" && !core.LoopbackHost(pu.Hostname()) {
			if !p.JWKSAllowHTTP {
				return fmt.Errorf("seckill_jwt: jwks_url %q: plain http to a host that is not loopback lets anyone on the path publish keys; use https (or set jwks_allow_http on a network nobody can tamper with)", u)
			}
			p.logger.Warn("jwks_url is plain http to a host that is not loopback (jwks_allow_http): anyone on the path can publish keys",
				zap.String("jwks_url", u))
		}
		j, err := jwks(u)
		if err != nil {
			return fmt.Errorf("seckill_jwt: %w", err)
		}
		p.jwks, sources.JWKS = j, j
	}
	p.verifier = &core.Verifier{
		Keys:      sources,
		Issuer:    repl.ReplaceAll(p.Issuer, ""),
		Audience:  repl.ReplaceAll(p.Audience, ""),
		UserClaim: p.UserClaim,
		LaneClaim: p.LaneClaim,
		Leeway:    time.Duration(*p.Leeway),
		MaxAge:    time.Duration(p.MaxAge),
		Cache:     core.NewVerifiedCache(*p.VerifiedCache),
	}
	return nil
}

// Validate checks the configuration.
func (p *JWT) Validate() error {
	if p.JWKSURL == "" && len(p.Keys) == 0 {
		return errors.New("seckill_jwt: no key: set jwks_url or at least one key")
	}
	if l := time.Duration(*p.Leeway); l < 0 || l > maxLeeway {
		return fmt.Errorf("seckill_jwt: leeway %v: between 0 and %v", l, maxLeeway)
	}
	if *p.VerifiedCache < 0 {
		return fmt.Errorf("seckill_jwt: verified_cache %d: 0 (off) or more", *p.VerifiedCache)
	}
	return nil
}

// Cleanup lets go of the JWKS fetcher (stopped once no config uses its URL).
func (p *JWT) Cleanup() error {
	if p.jwks != nil {
		_, err := jwksPool.Delete(p.jwks.URL())
		return err
	}
	return nil
}

// identify reads and verifies the request's session: who it is, or why not.
func (p *JWT) identify(r *http.Request) (core.Identity, core.Outcome) {
	token, o := core.Credential(r, p.Cookie)
	if o != core.Verified {
		jwtCounted[o].Inc()
		return core.Identity{}, o
	}
	id, o := p.verifier.VerifyIdentity(r.Context(), token)
	jwtCounted[o].Inc()
	if o != core.Verified {
		p.logger.Debug("session refused", zap.String("outcome", string(o)))
	}
	return id, o
}

// lanesPlaceholder is the placeholder lane_claim sets (caddyauth.User's metadata "lanes"
// becomes the same one under Caddy's authentication handler).
const lanesPlaceholder = "http.auth.user.lanes"

// Authenticate implements caddyauth.Authenticator: with Caddy's `authentication` handler a
// refused session is that handler's 401 (handle_errors gives it a body) and a verified one sets
// {http.auth.user.id} (and, with lane_claim, {http.auth.user.lanes}: the user's metadata
// "lanes"). No keys loaded yet is reported as an error (logged, then 401).
func (p *JWT) Authenticate(w http.ResponseWriter, r *http.Request) (caddyauth.User, bool, error) {
	// Whatever the outcome: the client's own X-User-ID must not reach the next handler, here
	// as in seckill_identity (Caddy's authentication handler leaves headers alone).
	StripClaimedIdentity(r.Header, "")
	id, o := p.identify(r)
	switch o {
	case core.Verified:
		u := caddyauth.User{ID: id.User}
		if p.LaneClaim != "" {
			u.Metadata = map[string]string{"lanes": id.Lanes}
		}
		return u, true, nil
	case core.NoKeys:
		return caddyauth.User{}, false, core.ErrNoKeys
	}
	w.Header().Set("WWW-Authenticate", challenge(o))
	return caddyauth.User{}, false, nil
}

// Interface guards
var (
	_ caddy.Provisioner       = (*JWT)(nil)
	_ caddy.Validator         = (*JWT)(nil)
	_ caddy.CleanerUpper      = (*JWT)(nil)
	_ caddyauth.Authenticator = (*JWT)(nil)
	_ caddy.Destructor        = (*core.JWKS)(nil)
)
