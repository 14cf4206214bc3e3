// Package caddymodule is the `seckill` Caddy app: it owns the connections every seckill
// handler shares (one go-redis UniversalClient, one RabbitMQ connection), keeps them across
// config reloads through caddy.UsagePool, and exposes metrics and admin routes.
//
// Handlers reach it with ctx.App("seckill"). When the Caddyfile has no `seckill` global option
// the app still loads, with the defaults documented on each field.
package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/relay"
	tokens "github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/weaksecret"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(App{})
}

// App is the `seckill` app. Its JSON lives under "apps": {"seckill": {...}}.
type App struct {
	// Redis connection shared by every seckill handler. See RedisConfig for defaults.
	Redis *RedisConfig `json:"redis,omitempty"`

	// RabbitMQ connection used by the outbox relay. See AMQPConfig for defaults.
	AMQP *AMQPConfig `json:"amqp,omitempty"`

	// HMAC keys of the one-time purchase tokens, shared by seckill_token (which signs with the
	// first key) and seckill_gate (which accepts any of them). List the new key first and keep
	// the previous one while tokens signed with it may still be live: keys rotate without
	// refusing tokens already issued. Secrets must come from placeholders such as
	// {env.SECKILL_TOKEN_KEY} and be strong: at least 32 bytes, at least 8 distinct bytes, no
	// short unit repeated, no placeholder or published value (`openssl rand -hex 32` makes one).
	TokenKeys []TokenKey `json:"token_keys,omitempty"`

	// The outbox relay of this instance, which hands the orders accepted by seckill_gate to
	// RabbitMQ. It runs when the config has a seckill_gate, or when this is set (a relay-only
	// instance); set "disabled" to run none here. See relay.Config for the defaults.
	Relay *relay.Config `json:"relay,omitempty"`

	// The deployment this gateway belongs to. Its relay takes only the outboxes of sales the
	// backend preheated with the same namespace (SECKILL_NAMESPACE; recorded in the sale's
	// meta), so deployments sharing one Redis (staging beside production, a test run beside a
	// demo) never carry each other's orders into their own brokers. 1 to 64 characters of
	// [A-Za-z0-9_-]; placeholders such as {env.SECKILL_NAMESPACE} are resolved. Default: the
	// SECKILL_NAMESPACE environment variable (the backend's default too), else empty: the
	// unnamed deployment, which also owns the sales preheated without a namespace.
	Namespace string `json:"namespace,omitempty"`

	// Accept the published demo token key (the default SECKILL_TOKEN_KEY of scripts/run.sh and
	// docker-compose.yml) in token_keys. Without it the app refuses to load with that key, so
	// a demo config copied into production cannot sign tokens anybody can forge. Default false.
	Demo bool `json:"demo,omitempty"`

	// The path prefix of every buyer route of the edge (/seckill/{sale}/token, /buy, /room,
	// /queue, /challenge, /draw...), such as /shop-api/drop. Every seckill handler inherits it
	// (the sale id is the segment after it; the pages' client calls the edge there) unless it
	// sets its own `prefix`; the site's routes must match the same paths (docs/DESIGN.md,
	// "URL space"). One or more segments of A-Z a-z 0-9 - . _ ~, no trailing slash. Default
	// /seckill.
	Prefix string `json:"prefix,omitempty"`

	// The path prefix of the order status route ({orders_prefix}/{id}), which the pages'
	// client polls after a purchase; the site's route proxies it to the backend's /orders/.
	// A shop whose own order pages are at /orders moves it under its prefix
	// (/shop-api/drop/orders). Default /orders.
	OrdersPrefix string `json:"orders_prefix,omitempty"`

	redisKey  string
	redis     *sharedRedis
	brokerKey string
	broker    *Broker
	ctx       caddy.Context
	logger    *zap.Logger
	status    map[string]func(context.Context) any
	keyring   *tokens.Keyring
	workers   *workers
}

// DemoTokenKey is the token key published with the demo (scripts/run.sh, docker-compose.yml,
// docs). Anybody can forge tokens signed with it, so the app refuses it unless Demo is set.
const DemoTokenKey = weaksecret.DemoTokenKey

// TokenKey is one purchase-token signing key.
type TokenKey struct {
	// Key id, 1 to 16 characters of [A-Za-z0-9_-]; it travels in the token.
	ID string `json:"id"`
	// The secret (a placeholder such as {env.SECKILL_TOKEN_KEY}); strong once resolved (see
	// token_keys).
	Secret string `json:"secret"`
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "seckill",
		New: func() caddy.Module { return new(App) },
	}
}

// current is the app of the running config, for the admin routes (admin modules are not
// provisioned inside the app's config context).
var current atomic.Pointer[App]

// Provision resolves placeholders and takes (or creates) the shared clients from the usage
// pools. It does no network I/O: go-redis dials lazily and the broker connects in Start, so
// `caddy validate` stays cheap and works without the services.
func (a *App) Provision(ctx caddy.Context) error {
	a.ctx = ctx
	a.logger = ctx.Logger()
	a.workers = new(workers)
	if a.Redis == nil {
		a.Redis = new(RedisConfig)
	}
	if a.AMQP == nil {
		a.AMQP = new(AMQPConfig)
	}
	repl := caddy.NewReplacer()
	a.Redis.resolve(repl)
	a.AMQP.resolve(repl)
	// The backend reads SECKILL_NAMESPACE too: with nothing configured, both sides agree.
	a.Namespace = repl.ReplaceAll(a.Namespace, "")
	if a.Namespace == "" {
		a.Namespace = os.Getenv("SECKILL_NAMESPACE")
	}

	if len(a.TokenKeys) > 0 {
		keys := make([]tokens.Key, 0, len(a.TokenKeys))
		for _, k := range a.TokenKeys {
			secret := repl.ReplaceAll(k.Secret, "")
			// A guessable key lets anybody mint purchase tokens: the same check as
			// the backend's admin tokens. The demo key passes only with `demo`, exactly as
			// published (a variant of it is no demo, just a weak key).
			if err := weaksecret.Check(secret); err != nil && !(a.Demo && secret == DemoTokenKey) {
				if errors.Is(err, weaksecret.ErrPublished) {
					return fmt.Errorf("seckill: token key %q is the published demo key: set a secret of your own "+
						"(openssl rand -hex 32), or the `demo` option of the seckill global option for a demo", k.ID)
				}
				return fmt.Errorf("seckill: token key %q is refused: %w (make one with `openssl rand -hex 32`)", k.ID, err)
			}
			keys = append(keys, tokens.Key{ID: k.ID, Secret: []byte(secret)})
		}
		kr, err := tokens.NewKeyring(keys...)
		if err != nil {
			return fmt.Errorf("seckill: token_keys: %w", err)
		}
		a.keyring = kr
	}

	key, err := poolKey(a.Redis)
	if err != nil {
		return err
	}
	val, loaded, err := redisPool.LoadOrNew(key, func() (caddy.Destructor, error) {
		return newSharedRedis(a.Redis), nil
	})
	if err != nil {
		return fmt.Errorf("seckill: redis client: %w", err)
	}
	a.redisKey, a.redis = key, val.(*sharedRedis)
	if loaded {
		a.logger.Debug("reusing the Redis client of the previous config", zap.Strings("addrs", a.Redis.Addrs))
	}

	bkey := a.AMQP.URL
	bval, _, err := brokerPool.LoadOrNew(bkey, func() (caddy.Destructor, error) {
		return newBroker(a.AMQP, a.logger.Named("amqp")), nil
	})
	if err != nil {
		return fmt.Errorf("seckill: amqp: %w", err)
	}
	a.brokerKey, a.broker = bkey, bval.(*Broker)

	if a.Relay != nil {
		a.workers.relayChosen = true
		a.workers.relay.Store(a.newRelay(*a.Relay))
	}
	registerMetrics(ctx.GetMetricsRegistry())
	return nil
}

// Validate checks the configuration without touching the network.
func (a *App) Validate() error {
	if len(a.Redis.Addrs) == 0 {
		return fmt.Errorf("seckill: redis: at least one address is required")
	}
	if a.AMQP.URL != "" && !strings.HasPrefix(a.AMQP.URL, "amqp://") && !strings.HasPrefix(a.AMQP.URL, "amqps://") {
		return fmt.Errorf("seckill: amqp: url must start with amqp:// or amqps://")
	}
	if a.Namespace != "" && !contract.ValidID(a.Namespace) {
		return fmt.Errorf("seckill: namespace %q: 1 to 64 characters of [A-Za-z0-9_-]", a.Namespace)
	}
	if err := a.URLSpace().Validate(); err != nil {
		return fmt.Errorf("seckill: %w", err)
	}
	return nil
}

// URLSpace is where the edge's routes live on the site (prefix and orders_prefix, with their
// defaults); every seckill handler inherits it.
func (a *App) URLSpace() handler.URLSpace {
	return handler.URLSpace{Prefix: a.Prefix, OrdersPrefix: a.OrdersPrefix}.WithDefaults()
}

// Start connects the broker (in the background: the gateway serves even while RabbitMQ is
// down, the outbox absorbs accepted orders) and starts the app's workers: the sale-event
// subscription (shared with the previous config across a reload) and this config's relay.
func (a *App) Start() error {
	a.broker.start()
	a.workers.start(a.ctx, a.broker)
	a.linkJoints()
	current.Store(a)
	return nil
}

// Stop stops this config's relay. Shared connections and the event subscription stay up for
// the next config; Cleanup releases this config's references to them.
func (a *App) Stop() error {
	current.CompareAndSwap(a, nil)
	return a.workers.stop()
}

// Cleanup releases this config's references to the shared clients and the event
// subscription; the last reference closes them. It also runs when a config fails to start.
func (a *App) Cleanup() error {
	if a.workers != nil {
		a.workers.release()
	}
	if a.redisKey != "" {
		_, _ = redisPool.Delete(a.redisKey)
	}
	if a.broker != nil {
		_, _ = brokerPool.Delete(a.brokerKey)
	}
	return nil
}

// RedisClient is the Redis client shared by every handler of every config that uses the same
// Redis settings. Do not close it.
func (a *App) RedisClient() redis.UniversalClient { return a.redis.client }

// Keyring is the purchase-token keyring from token_keys, or nil when none is configured.
func (a *App) Keyring() *tokens.Keyring { return a.keyring }

// Broker is the shared RabbitMQ connection.
func (a *App) Broker() *Broker { return a.broker }

// Logger is the app's logger.
func (a *App) Logger() *zap.Logger { return a.logger }

func poolKey(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
	_ handler.URLSpacer  = (*App)(nil)
)
