package caddymodule

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/relay"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("seckill", parseGlobalOption)
}

// parseGlobalOption parses the `seckill` global option:
//
//	{
//		seckill {
//			redis {
//				addrs        <host:port>...
//				cluster
//				master_name  <name>
//				username     <user>
//				password     <password>
//				db           <n>
//				pool_size    <n>
//				min_idle_conns <n>
//				dial_timeout  <duration>
//				read_timeout  <duration>
//				write_timeout <duration>
//			}
//			amqp {
//				url                <amqp url>
//				reconnect_interval <duration>
//			}
//			token_keys {
//				<id> <secret>     # the first key signs; all verify
//			}
//			relay {
//				disabled
//				batch_size        <n>
//				poll_interval     <duration>
//				discover_interval <duration>
//				claim_min_idle    <duration>
//				confirm_timeout   <duration>
//				retention         <duration>
//				served_only
//			}
//			namespace <name>      # the deployment whose sales the relay takes
//			prefix        <path>  # the buyer routes' path prefix; default /seckill
//			orders_prefix <path>  # the order status route's; default /orders
//			demo                  # accept the published demo token key
//		}
//	}
func parseGlobalOption(d *caddyfile.Dispenser, _ any) (any, error) {
	app := new(App)
	if err := app.UnmarshalCaddyfile(d); err != nil {
		return nil, err
	}
	return httpcaddyfile.App{Name: "seckill", Value: caddyconfig.JSON(app, nil)}, nil
}

// UnmarshalCaddyfile sets up the app from Caddyfile tokens.
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return handler.ParseDirective(d, "seckill", func(name string) (bool, error) {
		switch name {
		case "redis":
			a.Redis = new(RedisConfig)
			return true, a.Redis.unmarshal(d)
		case "amqp":
			a.AMQP = new(AMQPConfig)
			return true, a.AMQP.unmarshal(d)
		case "token_keys":
			return true, a.unmarshalTokenKeys(d)
		case "relay":
			a.Relay = new(relay.Config)
			return true, unmarshalRelay(d, a.Relay)
		case "namespace":
			return true, handler.StringArg(d, &a.Namespace)
		case "demo":
			return true, handler.Flag(d, &a.Demo)
		case "prefix":
			return true, handler.StringArg(d, &a.Prefix)
		case "orders_prefix":
			return true, handler.StringArg(d, &a.OrdersPrefix)
		}
		return false, nil
	})
}

// unmarshalTokenKeys parses token_keys { <id> <secret> ... }.
func (a *App) unmarshalTokenKeys(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		k := TokenKey{ID: d.Val()}
		if err := handler.StringArg(d, &k.Secret); err != nil {
			return err
		}
		a.TokenKeys = append(a.TokenKeys, k)
	}
	return nil
}

func (c *RedisConfig) unmarshal(d *caddyfile.Dispenser) error {
	return handler.ParseBlock(d, "redis", func(name string) (bool, error) {
		switch name {
		case "addrs":
			c.Addrs = d.RemainingArgs()
			if len(c.Addrs) == 0 {
				return true, d.ArgErr()
			}
			return true, nil
		case "cluster":
			return true, handler.Flag(d, &c.Cluster)
		case "master_name":
			return true, handler.StringArg(d, &c.MasterName)
		case "username":
			return true, handler.StringArg(d, &c.Username)
		case "password":
			return true, handler.StringArg(d, &c.Password)
		case "db":
			return true, handler.IntArg(d, &c.DB)
		case "pool_size":
			return true, handler.IntArg(d, &c.PoolSize)
		case "min_idle_conns":
			return true, handler.IntArg(d, &c.MinIdleConns)
		case "dial_timeout":
			return true, handler.DurationArg(d, &c.DialTimeout)
		case "read_timeout":
			return true, handler.DurationArg(d, &c.ReadTimeout)
		case "write_timeout":
			return true, handler.DurationArg(d, &c.WriteTimeout)
		}
		return false, nil
	})
}

func (c *AMQPConfig) unmarshal(d *caddyfile.Dispenser) error {
	return handler.ParseBlock(d, "amqp", func(name string) (bool, error) {
		switch name {
		case "url":
			return true, handler.StringArg(d, &c.URL)
		case "reconnect_interval":
			return true, handler.DurationArg(d, &c.ReconnectInterval)
		}
		return false, nil
	})
}

// Interface guard
var _ caddyfile.Unmarshaler = (*App)(nil)

// unmarshalRelay parses the block of a `relay` subdirective into c (the dispenser is on the
// `relay` token); the relay's package links no Caddy, so its Caddyfile is read here:
//
//	relay {
//		disabled
//		batch_size        <n>
//		batch_wait        <duration>
//		poll_interval     <duration>
//		discover_interval <duration>
//		claim_min_idle    <duration>
//		confirm_timeout   <duration>
//		retention         <duration>
//		served_only
//	}
func unmarshalRelay(d *caddyfile.Dispenser, c *relay.Config) error {
	duration := func(dst *relay.Duration) error {
		var v caddy.Duration
		err := handler.DurationArg(d, &v)
		*dst = relay.Duration(v)
		return err
	}
	return handler.ParseBlock(d, "relay", func(name string) (bool, error) {
		switch name {
		case "disabled":
			return true, handler.Flag(d, &c.Disabled)
		case "served_only":
			return true, handler.Flag(d, &c.ServedOnly)
		case "batch_size":
			if err := handler.IntArg(d, &c.BatchSize); err != nil || c.BatchSize <= 0 {
				return true, d.Errf("batch_size must be a positive integer")
			}
			return true, nil
		case "batch_wait":
			return true, duration(&c.BatchWait)
		case "poll_interval":
			return true, duration(&c.PollInterval)
		case "discover_interval":
			return true, duration(&c.DiscoverInterval)
		case "claim_min_idle":
			return true, duration(&c.ClaimMinIdle)
		case "confirm_timeout":
			return true, duration(&c.ConfirmTimeout)
		case "retention":
			return true, duration(&c.Retention)
		}
		return false, nil
	})
}
