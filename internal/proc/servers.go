package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/stackenv"
)

// AOFEverySec are the stack's Redis durability settings: an append-only file fsynced every
// second, no RDB snapshots. A clean stop (SIGTERM) writes and fsyncs the AOF; a kill loses up
// to the last second (docs/chaos.md).
var AOFEverySec = []string{"--appendonly", "yes", "--appendfsync", "everysec"}

// NewRedis is a private redis-server on port with its data in dir, with extra arguments
// (AOFEverySec, cluster options). Ready is a PING answered (not LOADING).
func NewRedis(dir string, port int, extra ...string) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server binary: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{Name: "redis", Addr: "127.0.0.1:" + strconv.Itoa(port), Log: filepath.Join(dir, "redis.log")}
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir, "--save", ""}, extra...)
	s.Spawn = func(context.Context) (*Process, error) {
		return Start(Spec{Path: "redis-server", Args: args, Log: s.Log})
	}
	s.Ready = func(ctx context.Context) bool {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		defer c.Close()
		ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		return c.Ping(ctx).Err() == nil
	}
	return s, nil
}

// PGBin is where Debian's Postgres 15 binaries live.
const PGBin = "/usr/lib/postgresql/15/bin"

// asPostgres runs a Postgres tool as the postgres user when we are root (Postgres refuses root).
func asPostgres(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

// NewPostgres initialises a private Postgres 15 cluster under dir (user and password seckill,
// databases postgres only) to listen on port, controlled with pg_ctl: Stop is a fast shutdown,
// Kill an immediate one (no checkpoint: crash recovery at the next start).
func NewPostgres(dir string, port int) (*Server, error) {
	if _, err := os.Stat(PGBin + "/postgres"); err != nil {
		return nil, fmt.Errorf("Postgres 15 binaries: %w", err)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o777); err != nil { // the postgres user writes here
		return nil, err
	}
	data := filepath.Join(dir, "data")
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("seckill\n"), 0o644); err != nil {
		return nil, err
	}
	if out, err := asPostgres(PGBin+"/initdb", "-D", data, "-U", "seckill", "--pwfile="+pw, "-A", "scram-sha-256",
		"--no-locale", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	s := &Server{Name: "postgres", Addr: "127.0.0.1:" + strconv.Itoa(port), Log: filepath.Join(dir, "postgres.log")}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c max_connections=200", port, dir)
	ctl := func(args ...string) error {
		out, err := asPostgres(PGBin+"/pg_ctl", append([]string{"-D", data}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("pg_ctl %v: %v: %s", args, err, out)
		}
		return nil
	}
	s.Spawn = func(context.Context) (*Process, error) {
		return nil, ctl("-l", s.Log, "-o", opts, "-w", "-t", "60", "start")
	}
	s.Ready = func(ctx context.Context) bool {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, PGURL(s, "postgres"))
		if err != nil {
			return false
		}
		_ = c.Close(ctx)
		return true
	}
	s.StopFn = func(context.Context) error { return ctl("-m", "fast", "-w", "-t", "60", "stop") }
	s.KillFn = func() error { return ctl("-m", "immediate", "-w", "-t", "30", "stop") }
	return s, nil
}

// PGURL is the URL of database db on a private Postgres.
func PGURL(s *Server, db string) string {
	return fmt.Sprintf("postgres://seckill:seckill@%s/%s?sslmode=disable", s.Addr, db)
}

// RabbitBin is where Debian's RabbitMQ scripts live.
const RabbitBin = "/usr/lib/rabbitmq/bin/"

// Rabbit is a private RabbitMQ node: a Server and its control tool.
type Rabbit struct {
	*Server
	env []string
}

// NewRabbit is a private RabbitMQ node called name (its own node name, AMQP and distribution
// ports, data under dir; the machine's epmd on stackenv.EPMDPort). Ready is an AMQP handshake:
// polling with rabbitmqctl would boot an Erlang VM per poll and slow the broker's own start
// on a small machine. Stop is `rabbitmqctl stop`, a clean shutdown, so quorum queues come back
// at once at the next start (why a kill -9 is not used: docs/chaos.md).
func NewRabbit(dir, name string) (*Rabbit, error) {
	if _, err := os.Stat(RabbitBin + "rabbitmq-server"); err != nil {
		return nil, fmt.Errorf("rabbitmq-server: %w", err)
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	port, dist := ports[0], ports[1]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	epmd := stackenv.EPMDPort()
	env := append(os.Environ(),
		"HOME="+dir, "RABBITMQ_NODENAME="+name+"@localhost", "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(port), "RABBITMQ_DIST_PORT="+strconv.Itoa(dist),
		"ERL_EPMD_PORT="+epmd, "ERL_EPMD_ADDRESS=127.0.0.1", "RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"), "RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq"), "RABBITMQ_PID_FILE="+filepath.Join(dir, "rabbit.pid"),
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}")
	files := map[string]string{
		"enabled_plugins": "[].\n",
		"rabbitmq.conf": "listeners.tcp.default = 127.0.0.1:" + strconv.Itoa(port) +
			"\nloopback_users.guest = true\ndisk_free_limit.absolute = 100MB\n",
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	cookie := filepath.Join(dir, ".erlang.cookie")
	_ = os.Remove(cookie)
	if err := os.WriteFile(cookie, []byte(fmt.Sprintf("C%dC%d%s", time.Now().UnixNano(), os.Getpid(), name)), 0o400); err != nil {
		return nil, err
	}
	// epmd is a per-machine daemon: start it if it is not running (harmless if it is).
	_ = exec.Command("epmd", "-port", epmd, "-address", "127.0.0.1", "-daemon").Run()

	r := &Rabbit{Server: &Server{Name: "rabbitmq", Addr: "127.0.0.1:" + strconv.Itoa(port), Log: filepath.Join(dir, "server.log")}, env: env}
	r.Spawn = func(context.Context) (*Process, error) {
		return Start(Spec{Path: RabbitBin + "rabbitmq-server", Env: env, Log: r.Log})
	}
	r.Ready = func(context.Context) bool {
		conn, err := amqp.DialConfig(r.AMQPURL(), amqp.Config{Dial: amqp.DefaultDial(time.Second)})
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	}
	r.StopFn = func(context.Context) error {
		err := r.Ctl(60*time.Second, "-q", "stop")
		if p := r.Process(); p != nil && !p.Wait(30*time.Second) {
			p.Kill()
		}
		return err
	}
	return r, nil
}

// AMQPURL is the URL of the node's default vhost.
func (r *Rabbit) AMQPURL() string { return "amqp://guest:guest@" + r.Addr + "/" }

// Ctl runs rabbitmqctl against the node, for faults that are not a stop (a memory alarm).
func (r *Rabbit) Ctl(timeout time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, RabbitBin+"rabbitmqctl", args...)
	cmd.Env = r.env
	cmd.WaitDelay = 5 * time.Second // an Erlang helper it forked may hold the output open
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("rabbitmqctl %v: %v: %s", args, err, out)
	}
	return nil
}
