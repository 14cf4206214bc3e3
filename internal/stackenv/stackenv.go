// Package stackenv names the services of the local stack (scripts/stack.sh): the environment
// variables that point a program at them and the loopback defaults the stack listens on. The
// tests, seckill-bench and seckill-chaos read them here, so a port moves in one place.
package stackenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
)

// The environment variables, as scripts/stack.sh writes them to .run/env.
const (
	RedisAddrVar   = "SECKILL_REDIS_ADDR"
	AMQPURLVar     = "SECKILL_AMQP_URL"
	AMQPMgmtURLVar = "SECKILL_AMQP_MGMT_URL"
	PGURLVar       = "SECKILL_PG_URL"
	PGAdminURLVar  = "SECKILL_PG_ADMIN_URL"
	EPMDPortVar    = "SECKILL_EPMD_PORT"
)

// The stack's defaults: loopback ports above the services' usual ones, so a stack already on
// the machine (a system Redis on 6379) is left alone. The credentials are the demo ones.
const (
	DefaultRedisAddr   = "127.0.0.1:16379"
	DefaultAMQPURL     = "amqp://guest:guest@127.0.0.1:16672/"
	DefaultAMQPMgmtURL = "http://guest:guest@127.0.0.1:16673"
	DefaultPGURL       = "postgres://seckill:seckill@127.0.0.1:15432/seckill?sslmode=disable"
	DefaultPGAdminURL  = "postgres://seckill:seckill@127.0.0.1:15432/postgres?sslmode=disable"
	// DefaultEPMDPort is the Erlang port mapper private RabbitMQ nodes register with (not
	// 4369, which a system RabbitMQ may own).
	DefaultEPMDPort = "14369"
)

// Get is the variable's value, or def when it is unset or empty.
func Get(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Secret is the variable's value, or, when it is unset, a random 32 bytes in hex made for this
// run: the stacks seckill-bench and seckill-chaos start need an admin token and a token key
// that pass the strength check (internal/weaksecret), and a published default would be none.
func Secret(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
}

// RedisAddr is the stack's Redis (host:port).
func RedisAddr() string { return Get(RedisAddrVar, DefaultRedisAddr) }

// AMQPURL is the stack's RabbitMQ, default vhost.
func AMQPURL() string { return Get(AMQPURLVar, DefaultAMQPURL) }

// AMQPMgmtURL is the stack's RabbitMQ management API, credentials in the URL.
func AMQPMgmtURL() string { return Get(AMQPMgmtURLVar, DefaultAMQPMgmtURL) }

// PGURL is the stack's Postgres database "seckill".
func PGURL() string { return Get(PGURLVar, DefaultPGURL) }

// PGAdminURL is the stack's Postgres maintenance database, to create and drop databases.
func PGAdminURL() string { return Get(PGAdminURLVar, DefaultPGAdminURL) }

// EPMDPort is the port of the epmd that private RabbitMQ nodes use.
func EPMDPort() string { return Get(EPMDPortVar, DefaultEPMDPort) }
