package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/proc"
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
}

// Cluster is a whole private deployment: Redis, RabbitMQ and Postgres servers of the run's
// own, N gateways (Caddy, this repository's build, the default Caddyfile) sharing them, and
// N backends consuming the one queue.
type Cluster struct {
	Redis, Rabbit, Postgres *Proc
	Gateways                []*Proc
	Backends                []*Proc
	// GatewayURLs and BackendURLs are the base URLs, by instance.
	GatewayURLs, BackendURLs []string
	PGURL, AMQPURL           string
	AdminToken               string
	Dir                      string

	pgDir string
}

// StartCluster starts the servers, then the backends one after the other (the first applies
// the migrations), then the gateways.
func StartCluster(ctx context.Context, o ClusterOptions) (_ *Cluster, err error) {
	if o.Gateways <= 0 {
		o.Gateways = 2
	}
	if o.Backends <= 0 {
		o.Backends = 2
	}
	c := &Cluster{AdminToken: o.AdminToken, Dir: o.Dir}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	bin := o.BinDir
	if bin == "" {
		bin = filepath.Join(o.Dir, "bin")
		if err := harness.Build(ctx, o.Root, bin); err != nil {
			return nil, err
		}
	}
	if c.Redis, err = newRedis(filepath.Join(o.Dir, "redis")); err != nil {
		return nil, err
	}
	// Postgres runs as the postgres user, who must reach its directory: a fresh one under the
	// system temp dir, not inside Dir (which may sit under an unreadable home).
	pgDir, err := os.MkdirTemp("", "seckill-chaos-pg-")
	if err != nil {
		return nil, err
	}
	c.pgDir = pgDir
	if c.Postgres, err = newPostgres(pgDir); err != nil {
		return nil, err
	}
	if c.Rabbit, err = newRabbit(filepath.Join(o.Dir, "rabbitmq"), fmt.Sprintf("chaos%d", time.Now().UnixNano()%1e9)); err != nil {
		return nil, err
	}
	// RabbitMQ is the slow one (several seconds): start it while the others come up.
	rabbitUp := make(chan error, 1)
	go func() { rabbitUp <- c.Rabbit.Start(ctx) }()
	if err := c.Redis.Start(ctx); err != nil {
		<-rabbitUp
		return nil, err
	}
	if err := c.Postgres.Start(ctx); err != nil {
		<-rabbitUp
		return nil, err
	}
	if err := createDB(ctx, pgURL(c.Postgres, "postgres"), "seckill"); err != nil {
		<-rabbitUp
		return nil, err
	}
	if err := <-rabbitUp; err != nil {
		return nil, err
	}
	c.PGURL, c.AMQPURL = pgURL(c.Postgres, "seckill"), amqpURL(c.Rabbit)

	// Each backend has two listeners: the order API (the gateways' upstream) and the admin API
	// (BackendURLs: admin calls, readiness), at the end of the list.
	ports, err := proc.FreePorts(o.Backends + 3*o.Gateways + o.Backends)
	if err != nil {
		return nil, err
	}
	var upstreams []string
	for i := 0; i < o.Backends; i++ {
		addr := "127.0.0.1:" + strconv.Itoa(ports[i])
		upstreams = append(upstreams, addr)
		c.BackendURLs = append(c.BackendURLs, "http://127.0.0.1:"+strconv.Itoa(ports[o.Backends+3*o.Gateways+i]))
	}
	base := append(os.Environ(),
		"SECKILL_REDIS_ADDR="+c.Redis.Addr, "SECKILL_AMQP_URL="+c.AMQPURL, "SECKILL_PG_URL="+c.PGURL,
		"SECKILL_ADMIN_TOKEN="+o.AdminToken, "SECKILL_TOKEN_KEY="+o.TokenKey,
		// Both backends behind every gateway's /orders/ proxy ({$…} expands before parsing).
		"SECKILL_BACKEND="+strings.Join(upstreams, " "),
		// The namespace of this cluster's backends and gateways (the Caddyfile reads it): the
		// relays take only the outboxes of the sales these backends preheated.
		"SECKILL_NAMESPACE=chaos-"+strconv.Itoa(ports[0]))
	for i := 0; i < o.Backends; i++ {
		env := append(append([]string{}, base...), "SECKILL_BACKEND_LISTEN="+upstreams[i],
			"SECKILL_BACKEND_ADMIN_LISTEN="+strings.TrimPrefix(c.BackendURLs[i], "http://"))
		p := newProgram(fmt.Sprintf("backend-%d", i+1), upstreams[i], filepath.Join(o.Dir, fmt.Sprintf("backend-%d.log", i+1)),
			filepath.Join(bin, "seckill-backend"), nil, env, c.BackendURLs[i]+"/healthz")
		c.Backends = append(c.Backends, p)
		if err := p.Start(ctx); err != nil {
			return nil, err
		}
	}

	cf := o.Caddyfile
	if cf == "" {
		cf = filepath.Join(o.Root, "Caddyfile")
	}
	src, err := os.ReadFile(cf)
	if err != nil {
		return nil, err
	}
	tmpl := string(src)
	if o.GateRelay != "" {
		if tmpl, err = withGateRelay(tmpl, o.GateRelay); err != nil {
			return nil, fmt.Errorf("%s: %w", cf, err)
		}
	}
	for i := 0; i < o.Gateways; i++ {
		gw, admin, ceil := ports[o.Backends+3*i], ports[o.Backends+3*i+1], ports[o.Backends+3*i+2]
		conf, err := harness.GatewayConfig(tmpl, gw, admin, ceil, harness.TrustLoopbackProxy)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cf, err)
		}
		path := filepath.Join(o.Dir, fmt.Sprintf("Caddyfile.gateway-%d", i+1))
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			return nil, err
		}
		url := "http://127.0.0.1:" + strconv.Itoa(gw)
		p := newProgram(fmt.Sprintf("gateway-%d", i+1), "127.0.0.1:"+strconv.Itoa(gw), filepath.Join(o.Dir, fmt.Sprintf("gateway-%d.log", i+1)),
			filepath.Join(bin, "caddy"), []string{"run", "--config", path, "--adapter", "caddyfile"}, base, url+"/healthz")
		c.Gateways = append(c.Gateways, p)
		c.GatewayURLs = append(c.GatewayURLs, url)
		if err := p.Start(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// withGateRelay inserts a relay block into the (first) seckill_gate block of a Caddyfile.
func withGateRelay(src, body string) (string, error) {
	loc := gateBlockRe.FindStringIndex(src)
	if loc == nil {
		return "", fmt.Errorf("no `seckill_gate {` block to add relay settings to")
	}
	at := loc[1]
	return src[:at] + "\t\t\trelay {\n\t\t\t\t" + body + "\n\t\t\t}\n" + src[at:], nil
}

var gateBlockRe = regexp.MustCompile(`(?m)^[ \t]*seckill_gate\b[^\n#]*\{[ \t]*\n`)

// Close stops everything the cluster started: gateways and backends first (they would only
// log reconnection attempts), then the servers.
func (c *Cluster) Close() {
	for _, p := range append(append([]*Proc{}, c.Gateways...), c.Backends...) {
		if p != nil {
			_ = p.Stop(context.Background())
		}
	}
	if c.Rabbit != nil {
		_ = c.Rabbit.Stop(context.Background())
	}
	if c.Postgres != nil {
		_ = c.Postgres.Kill() // immediate: the data is thrown away
		if b, err := os.ReadFile(c.Postgres.Log); err == nil {
			_ = os.WriteFile(filepath.Join(c.Dir, "postgres.log"), b, 0o644)
		}
	}
	if c.pgDir != "" {
		_ = os.RemoveAll(c.pgDir)
	}
	if c.Redis != nil {
		_ = c.Redis.Kill()
	}
}

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

func createDB(ctx context.Context, adminURL, name string) error {
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	return nil
}
