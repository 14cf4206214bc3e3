package caddymodule

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
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
	d.Next() // the option name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "redis":
			a.Redis = new(RedisConfig)
			if err := a.Redis.unmarshal(d); err != nil {
				return err
			}
		case "amqp":
			a.AMQP = new(AMQPConfig)
			if err := a.AMQP.unmarshal(d); err != nil {
				return err
			}
		case "token_keys":
			if d.NextArg() {
				return d.ArgErr()
			}
			for nesting := d.Nesting(); d.NextBlock(nesting); {
				k := TokenKey{ID: d.Val()}
				if !d.NextArg() {
					return d.ArgErr()
				}
				k.Secret = d.Val()
				if d.NextArg() {
					return d.ArgErr()
				}
				a.TokenKeys = append(a.TokenKeys, k)
			}
		case "relay":
			a.Relay = new(relay.Config)
			if err := a.Relay.UnmarshalBlock(d); err != nil {
				return err
			}
		case "namespace":
			if err := oneString(d, &a.Namespace); err != nil {
				return err
			}
		case "demo":
			if d.NextArg() {
				return d.ArgErr()
			}
			a.Demo = true
		default:
			return d.Errf("unrecognized seckill option '%s'", d.Val())
		}
	}
	return nil
}

func (c *RedisConfig) unmarshal(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "addrs":
			c.Addrs = d.RemainingArgs()
			if len(c.Addrs) == 0 {
				return d.ArgErr()
			}
		case "cluster":
			c.Cluster = true
		case "master_name":
			err = oneString(d, &c.MasterName)
		case "username":
			err = oneString(d, &c.Username)
		case "password":
			err = oneString(d, &c.Password)
		case "db":
			err = oneInt(d, &c.DB)
		case "pool_size":
			err = oneInt(d, &c.PoolSize)
		case "min_idle_conns":
			err = oneInt(d, &c.MinIdleConns)
		case "dial_timeout":
			err = oneDuration(d, &c.DialTimeout)
		case "read_timeout":
			err = oneDuration(d, &c.ReadTimeout)
		case "write_timeout":
			err = oneDuration(d, &c.WriteTimeout)
		default:
			return d.Errf("unrecognized redis option '%s'", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *AMQPConfig) unmarshal(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "url":
			err = oneString(d, &c.URL)
		case "reconnect_interval":
			err = oneDuration(d, &c.ReconnectInterval)
		default:
			return d.Errf("unrecognized amqp option '%s'", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Small Caddyfile helpers shared by the seckill handlers' parsers.

func oneString(d *caddyfile.Dispenser, dst *string) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	*dst = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

func oneInt(d *caddyfile.Dispenser, dst *int) error {
	var s string
	if err := oneString(d, &s); err != nil {
		return err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return d.Errf("'%s' is not an integer", s)
	}
	*dst = n
	return nil
}

func oneDuration(d *caddyfile.Dispenser, dst *caddy.Duration) error {
	var s string
	if err := oneString(d, &s); err != nil {
		return err
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil {
		return d.Errf("'%s' is not a duration: %v", s, err)
	}
	*dst = caddy.Duration(dur)
	return nil
}

// OneString, OneInt and OneDuration read exactly one argument of a subdirective; handler
// packages use them so every seckill directive parses the same way.
func OneString(d *caddyfile.Dispenser, dst *string) error           { return oneString(d, dst) }
func OneInt(d *caddyfile.Dispenser, dst *int) error                 { return oneInt(d, dst) }
func OneDuration(d *caddyfile.Dispenser, dst *caddy.Duration) error { return oneDuration(d, dst) }

// Interface guard
var _ caddyfile.Unmarshaler = (*App)(nil)
