package caddymodule

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
)

// redisPool holds one client per distinct Redis configuration, shared across config reloads:
// a reload with the same settings reuses the pool and its open connections.
var redisPool = caddy.NewUsagePool()

// RedisConfig configures the shared Redis client (go-redis UniversalClient).
//
// One address: a single Redis server. Several addresses, or `cluster`: Redis Cluster seed
// nodes. With master_name: Redis Sentinel addresses. Values may hold placeholders such as
// {env.REDIS_PASSWORD}; they are resolved when the config loads.
type RedisConfig struct {
	// host:port of the Redis server, cluster seeds or sentinels. Default: the SECKILL_REDIS_ADDR
	// environment variable, else 127.0.0.1:6379.
	Addrs []string `json:"addrs,omitempty"`

	// Force Redis Cluster mode with a single seed address (e.g. a cluster's configuration
	// endpoint).
	Cluster bool `json:"cluster,omitempty"`

	// Sentinel master name; enables Redis Sentinel (failover) mode.
	MasterName string `json:"master_name,omitempty"`

	// ACL user name.
	Username string `json:"username,omitempty"`

	// Password. Use a placeholder ({env.SECKILL_REDIS_PASSWORD}), never a literal in a committed
	// file.
	Password string `json:"password,omitempty"`

	// Logical database (single server and Sentinel only). Default 0.
	DB int `json:"db,omitempty"`

	// Connections per node. Default: 10 per CPU (go-redis's default).
	PoolSize int `json:"pool_size,omitempty"`

	// Idle connections kept open per node. Default 0.
	MinIdleConns int `json:"min_idle_conns,omitempty"`

	// Timeout for establishing a connection. Default 1s.
	DialTimeout caddy.Duration `json:"dial_timeout,omitempty"`

	// Socket read timeout. Default 1s. The handlers bound each decision with their own,
	// shorter, timeouts.
	ReadTimeout caddy.Duration `json:"read_timeout,omitempty"`

	// Socket write timeout. Default 1s.
	WriteTimeout caddy.Duration `json:"write_timeout,omitempty"`
}

func (c *RedisConfig) resolve(repl *caddy.Replacer) {
	for i, a := range c.Addrs {
		c.Addrs[i] = repl.ReplaceAll(a, "")
	}
	if len(c.Addrs) == 0 {
		c.Addrs = []string{envOr("SECKILL_REDIS_ADDR", "127.0.0.1:6379")}
	}
	c.Username = repl.ReplaceAll(c.Username, "")
	c.Password = repl.ReplaceAll(c.Password, "")
	c.MasterName = repl.ReplaceAll(c.MasterName, "")
	if c.DialTimeout == 0 {
		c.DialTimeout = caddy.Duration(time.Second)
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = caddy.Duration(time.Second)
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = caddy.Duration(time.Second)
	}
}

// sharedRedis is the pooled value: the client and a count of the connections it opened (the
// reload test and the seckill_redis_connections_opened_total metric read it).
type sharedRedis struct {
	client redis.UniversalClient
	opened atomic.Int64
}

func newSharedRedis(c *RedisConfig) *sharedRedis {
	s := new(sharedRedis)
	s.client = redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:         c.Addrs,
		IsClusterMode: c.Cluster,
		MasterName:    c.MasterName,
		Username:      c.Username,
		Password:      c.Password,
		DB:            c.DB,
		PoolSize:      c.PoolSize,
		MinIdleConns:  c.MinIdleConns,
		DialTimeout:   time.Duration(c.DialTimeout),
		ReadTimeout:   time.Duration(c.ReadTimeout),
		WriteTimeout:  time.Duration(c.WriteTimeout),
		ClientName:    "seckill-gateway",
		OnConnect: func(context.Context, *redis.Conn) error {
			s.opened.Add(1)
			redisConnsOpened.Inc()
			return nil
		},
	})
	return s
}

// Destruct closes the client when the last config using it is unloaded.
func (s *sharedRedis) Destruct() error { return s.client.Close() }

// RedisConnectionsOpened is how many connections the shared Redis client of this app has
// opened since it was created. A config reload with unchanged Redis settings must not raise it.
func (a *App) RedisConnectionsOpened() int64 { return a.redis.opened.Load() }
