package chaos

import (
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/harness"
)

// ClusterOptions say how to start the run's private deployment.
type ClusterOptions struct {
	// Root is the repository root (the default Caddyfile; the sources when BinDir is empty).
	Root string
	// BinDir holds caddy and seckill-backend; when empty they are built into Dir.
	BinDir string
	// Dir receives every process's data and logs.
	Dir string
	// Caddyfile is the gateway template (default Root/Caddyfile). harness.GatewayConfig moves
	// its :8080 site and admin endpoint to free ports.
	Caddyfile string
	// GateRelay, when set, is inserted into the seckill_gate block as a `relay { … }` body
	// (e.g. "claim_min_idle 5s" for the short test). Empty: the Caddyfile's own settings.
	GateRelay string
	// Gateways and Backends are the instance counts (default 2 each).
	Gateways, Backends int
	AdminToken         string
	TokenKey           string
	// Env is extra environment for the backends and gateways (KEY=value).
	Env []string
}

// Cluster is a whole private deployment (internal/harness): Redis, RabbitMQ and Postgres
// servers of the run's own, N gateways (Caddy, this repository's build, the default Caddyfile)
// sharing them, and N backends consuming the one queue. Each part is a Proc the schedule may
// stop, kill and start again.
type Cluster struct {
	Redis, Rabbit, Postgres *Proc
	Gateways                []*Proc
	Backends                []*Proc
	// GatewayURLs and BackendURLs are the base URLs, by instance.
	GatewayURLs, BackendURLs []string
	PGURL, AMQPURL           string
	AdminToken               string
	Dir                      string

	stack *harness.Stack
}

// StartCluster starts the servers, then the backends one after the other (the first applies
// the migrations), then the gateways.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	if o.Gateways <= 0 {
		o.Gateways = 2
	}
	if o.Backends <= 0 {
		o.Backends = 2
	}
	s, err := harness.Start(ctx, harness.Options{Name: "chaos", Root: o.Root, BinDir: o.BinDir, Dir: o.Dir,
		Caddyfile: o.Caddyfile, ExtraGlobal: harness.TrustLoopbackProxy, GateRelay: o.GateRelay,
		Gateways: o.Gateways, Backends: o.Backends, AdminToken: o.AdminToken, TokenKey: o.TokenKey, Env: o.Env,
		PrivateRedis: true, PrivateServices: true})
	if err != nil {
		return nil, err
	}
	c := &Cluster{Redis: &Proc{Server: s.Redis}, Rabbit: &Proc{Server: s.Rabbit.Server, ctl: s.Rabbit.Ctl},
		Postgres: &Proc{Server: s.Postgres}, PGURL: s.PGURL, AMQPURL: s.AMQPURL, AdminToken: o.AdminToken, Dir: o.Dir,
		GatewayURLs: s.URLs(), stack: s}
	for _, g := range s.Gateways {
		c.Gateways = append(c.Gateways, &Proc{Server: g.Server})
	}
	for _, b := range s.Backends {
		c.Backends = append(c.Backends, &Proc{Server: b.Server})
		c.BackendURLs = append(c.BackendURLs, b.URL)
	}
	return c, nil
}

// Close stops everything the cluster started: gateways and backends first (they would only
// log reconnection attempts), then the servers.
func (c *Cluster) Close() { c.stack.Close() }

// amqpDeadLetters reads the dead-letter queue over AMQP (the private broker runs without the
// management plugin): it gets every message without acknowledging it and closes the channel,
// which puts them all back.
type amqpDeadLetters struct{ url string }

func (d amqpDeadLetters) DeadLetters(ctx context.Context) ([][]byte, error) {
	conn, err := amqp.DialConfig(d.url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	if _, err := ch.QueueDeclarePassive(contract.DeadQueue, true, false, false, false, nil); err != nil {
		return nil, fmt.Errorf("dead-letter queue: %w", err)
	}
	var bodies [][]byte
	for ctx.Err() == nil {
		m, ok, err := ch.Get(contract.DeadQueue, false)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		bodies = append(bodies, m.Body)
	}
	return bodies, ctx.Err()
}
