package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/bench"
)

// Proc is one process of the run that the schedule may stop cleanly, kill with SIGKILL and
// start again: a private Redis, RabbitMQ or Postgres, a gateway, a backend. Every Proc is the
// run's own (private ports, private data): nothing shared with other users of the machine is
// ever stopped.
type Proc struct {
	Name string
	// Addr is what clients dial (host:port), for the table and the logs.
	Addr string
	// Log is the process's log file.
	Log string

	// spawn starts the process and returns its command (nil when the process daemonizes, as
	// pg_ctl does, and stop/kill know how to reach it).
	spawn func(ctx context.Context) (*exec.Cmd, error)
	ready func(ctx context.Context) bool
	// stopFn stops cleanly (default: SIGTERM to the process group and wait); killFn kills
	// without notice (default: SIGKILL to the process group).
	stopFn func(ctx context.Context) error
	killFn func() error
	// ctl runs the server's control tool (rabbitmqctl), for faults that are not a stop.
	ctl func(timeout time.Duration, args ...string) error

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// PID is the process id of the running process (0 when not running or daemonized).
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Start starts the process and waits until it answers (at most 90 s).
func (p *Proc) Start(ctx context.Context) error {
	cmd, err := p.spawn(ctx)
	if err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	if cmd != nil {
		go func() { _ = cmd.Wait(); close(done) }()
	}
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	deadline := time.Now().Add(90 * time.Second)
	for !p.ready(ctx) {
		if cmd != nil {
			select {
			case <-done:
				return fmt.Errorf("%s exited before it answered; log tail:\n%s", p.Name, bench.LogTail(p.Log))
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer on %s within 90 s; log tail:\n%s", p.Name, p.Addr, bench.LogTail(p.Log))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Stop asks the process to shut down cleanly and waits for it (SIGKILL after 30 s).
func (p *Proc) Stop(ctx context.Context) error {
	if p.stopFn != nil {
		err := p.stopFn(ctx)
		p.wait(30 * time.Second)
		return err
	}
	p.signal(syscall.SIGTERM)
	if !p.wait(30 * time.Second) {
		p.signal(syscall.SIGKILL)
		p.wait(10 * time.Second)
	}
	return nil
}

// Kill sends SIGKILL (no shutdown, no flush) and waits for the process to be gone.
func (p *Proc) Kill() error {
	if p.killFn != nil {
		err := p.killFn()
		p.wait(10 * time.Second)
		return err
	}
	p.signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
	return nil
}

// signal signals the process group the process leads (Setpgid), so helpers it forked go too.
func (p *Proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	_ = cmd.Process.Signal(sig)
}

// wait waits for the spawned process to exit; true when it did (or there is none).
func (p *Proc) wait(d time.Duration) bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return true
	}
	select {
	case <-done:
		p.mu.Lock()
		if p.cmd == cmd {
			p.cmd = nil
		}
		p.mu.Unlock()
		return true
	case <-time.After(d):
		return false
	}
}

// Running reports whether the spawned process is alive (always true for daemonized ones).
func (p *Proc) Running() bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// command makes an exec.Cmd in a process group of its own, logging to logPath (appended:
// a restarted process continues its log), dying with the run (Pdeathsig).
func command(path string, args, env []string, logPath string) (*exec.Cmd, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "\n=== chaos: start %s at %s\n", filepath.Base(path), time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	// The child has its own copy of the descriptor.
	logf.Close()
	return cmd, nil
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	seen := map[int]bool{}
	for i := range ports {
		for {
			p, err := bench.FreePort()
			if err != nil {
				return nil, err
			}
			if !seen[p] {
				seen[p], ports[i] = true, p
				break
			}
		}
	}
	return ports, nil
}

// newRedis is a private redis-server with the stack's durability settings: append-only file,
// fsync every second, no RDB snapshots. A clean stop (SIGTERM) makes Redis write and fsync
// the AOF before it exits; a kill does not (see docs/chaos.md for what that can cost).
func newRedis(dir string) (*Proc, error) {
	port, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := &Proc{Name: "redis", Addr: "127.0.0.1:" + strconv.Itoa(port), Log: filepath.Join(dir, "redis.log")}
	p.spawn = func(context.Context) (*exec.Cmd, error) {
		return command("redis-server", []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
			"--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--maxclients", "10000"}, os.Environ(), p.Log)
	}
	p.ready = func(ctx context.Context) bool {
		c := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
		defer c.Close()
		ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		// Loading the AOF answers LOADING: not ready yet.
		return c.Ping(ctx).Err() == nil
	}
	return p, nil
}

const pgBin = "/usr/lib/postgresql/15/bin"

// asPostgres runs a Postgres tool as the postgres user when we are root (Postgres refuses root).
func asPostgres(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

// newPostgres initialises a private Postgres 15 cluster (user and password seckill) under
// dir, controlled with pg_ctl: Stop is a fast shutdown, Kill an immediate one (no checkpoint:
// crash recovery at the next start).
func newPostgres(dir string) (*Proc, error) {
	if _, err := os.Stat(pgBin + "/postgres"); err != nil {
		return nil, fmt.Errorf("Postgres 15 binaries: %w", err)
	}
	port, err := bench.FreePort()
	if err != nil {
		return nil, err
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
	if out, err := asPostgres(pgBin+"/initdb", "-D", data, "-U", "seckill", "--pwfile="+pw, "-A", "scram-sha-256",
		"--no-locale", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	p := &Proc{Name: "postgres", Addr: "127.0.0.1:" + strconv.Itoa(port), Log: filepath.Join(dir, "postgres.log")}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c max_connections=200", port, dir)
	ctl := func(args ...string) error {
		out, err := asPostgres(pgBin+"/pg_ctl", append([]string{"-D", data}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("pg_ctl %v: %v: %s", args, err, out)
		}
		return nil
	}
	p.spawn = func(context.Context) (*exec.Cmd, error) {
		return nil, ctl("-l", p.Log, "-o", opts, "-w", "-t", "60", "start")
	}
	admin := fmt.Sprintf("postgres://seckill:seckill@127.0.0.1:%d/postgres?sslmode=disable", port)
	p.ready = func(ctx context.Context) bool {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return false
		}
		_ = c.Close(ctx)
		return true
	}
	p.stopFn = func(context.Context) error { return ctl("-m", "fast", "-w", "-t", "60", "stop") }
	p.killFn = func() error { return ctl("-m", "immediate", "-w", "-t", "30", "stop") }
	return p, nil
}

// pgURL is the URL of database db on a private Postgres.
func pgURL(p *Proc, db string) string {
	return fmt.Sprintf("postgres://seckill:seckill@%s/%s?sslmode=disable", p.Addr, db)
}

const rabbitBin = "/usr/lib/rabbitmq/bin/"

// newRabbit is a private RabbitMQ node (its own node name, AMQP and distribution ports, data
// dir; the machine's epmd). Stop is `rabbitmqctl stop` (a clean shutdown: quorum queues come
// back at once at the next start; after a kill -9 a single-node quorum queue was seen to take
// over 50 s to recover here).
func newRabbit(dir, name string) (*Proc, error) {
	if _, err := os.Stat(rabbitBin + "rabbitmq-server"); err != nil {
		return nil, fmt.Errorf("rabbitmq-server: %w", err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	port, dist := ports[0], ports[1]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	node := name + "@localhost"
	epmd := os.Getenv("SECKILL_EPMD_PORT")
	if epmd == "" {
		epmd = "14369"
	}
	env := append(os.Environ(),
		"HOME="+dir, "RABBITMQ_NODENAME="+node, "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
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
	if err := os.WriteFile(cookie, []byte(fmt.Sprintf("CHAOS%dCOOKIE%d", time.Now().UnixNano(), os.Getpid())), 0o400); err != nil {
		return nil, err
	}
	// epmd is a per-machine daemon: start it if it is not running (harmless if it is).
	_ = exec.Command("epmd", "-port", epmd, "-address", "127.0.0.1", "-daemon").Run()

	p := &Proc{Name: "rabbitmq", Addr: "127.0.0.1:" + strconv.Itoa(port), Log: filepath.Join(dir, "server.log")}
	ctl := func(timeout time.Duration, args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, rabbitBin+"rabbitmqctl", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("rabbitmqctl %v: %v: %s", args, err, out)
		}
		return nil
	}
	p.spawn = func(context.Context) (*exec.Cmd, error) {
		return command(rabbitBin+"rabbitmq-server", nil, env, p.Log)
	}
	// Ready when an AMQP handshake succeeds: the broker accepts connections only once booted.
	// (Polling with rabbitmqctl would boot an Erlang VM per poll and slow the broker's own
	// start on a small machine.)
	p.ready = func(context.Context) bool {
		conn, err := amqp.DialConfig("amqp://guest:guest@"+p.Addr+"/", amqp.Config{Dial: amqp.DefaultDial(time.Second)})
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	}
	p.ctl = ctl
	p.stopFn = func(context.Context) error {
		err := ctl(60*time.Second, "-q", "stop")
		if !p.wait(30 * time.Second) {
			p.signal(syscall.SIGKILL)
		}
		return err
	}
	return p, nil
}

// amqpURL is the URL of a private RabbitMQ's default vhost.
func amqpURL(p *Proc) string { return "amqp://guest:guest@" + p.Addr + "/" }
