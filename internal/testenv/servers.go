package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Server is a private service process started for one test, which the test may stop, kill
// and start again (fault tests). It is stopped when the test ends.
type Server struct {
	Name  string
	Port  int
	Dir   string
	start func() (*exec.Cmd, error)
	ready func() bool
	stop  func()
	cmd   *exec.Cmd
	t     testing.TB
}

// Start starts the process (again) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	cmd, err := s.start()
	if err != nil {
		s.t.Fatalf("start %s: %v", s.Name, err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(90 * time.Second)
	for !s.ready() {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s did not answer on port %d; its logs:\n%s", s.Name, s.Port, tailLogs(s.Dir))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill sends SIGKILL: no shutdown, no flush.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // the whole process group
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_, _ = s.cmd.Process.Wait()
		s.cmd = nil
	}
	if s.stop != nil {
		s.stop()
	}
}

// Stop asks the process to shut down cleanly and waits for it.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _, _ = s.cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		s.cmd = nil
	}
	if s.stop != nil {
		s.stop()
	}
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// StartRedis starts a private redis-server on a free loopback port with AOF everysec, data in
// a temp dir. It is killed at the end of the test.
func StartRedis(t testing.TB) *Server {
	t.Helper()
	NeedsServices(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		missing(t, "redis-server binary", err)
	}
	s := &Server{Name: "redis", Port: FreePort(t), Dir: t.TempDir(), t: t}
	s.start = func() (*exec.Cmd, error) {
		cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(s.Port),
			"--dir", s.Dir, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
			"--logfile", filepath.Join(s.Dir, "redis.log"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd, cmd.Start()
	}
	s.ready = func() bool {
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		return c.Ping(ctx).Err() == nil
	}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// StartRedisCluster starts a 3-master Redis Cluster on loopback (no replicas) and returns its
// seed addresses. Used by the Cluster tests.
func StartRedisCluster(t testing.TB) []string {
	t.Helper()
	NeedsServices(t)
	var addrs []string
	for i := 0; i < 3; i++ {
		s := &Server{Name: fmt.Sprintf("redis-cluster-%d", i), Port: FreePort(t), Dir: t.TempDir(), t: t}
		// The cluster bus defaults to port+10000, which another process may hold: pick it too.
		bus := FreePort(t)
		s.start = func() (*exec.Cmd, error) {
			cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(s.Port), "--cluster-port", strconv.Itoa(bus),
				"--dir", s.Dir, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(s.Dir, "nodes.conf"),
				"--appendonly", "no", "--save", "", "--logfile", filepath.Join(s.Dir, "redis.log"))
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			return cmd, cmd.Start()
		}
		s.ready = func() bool {
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
			defer c.Close()
			return c.Ping(context.Background()).Err() == nil
		}
		s.Start()
		t.Cleanup(s.Kill)
		addrs = append(addrs, s.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	// Every node must see the whole cluster before a test starts: right after create, a node
	// that has not yet learnt the others' slots answers CLUSTERDOWN, and a busy machine
	// stretches that moment.
	deadline := time.Now().Add(60 * time.Second)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for {
			info, err := c.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") &&
				strings.Contains(info, "cluster_known_nodes:3") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("redis cluster node %s not ok: %v %s", a, err, info)
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Close()
	}
	return addrs
}

const pgBin = "/usr/lib/postgresql/15/bin"

// StartPostgres starts a private Postgres 15 on a free loopback port (user seckill, password
// seckill, database seckill). As root, it runs as the 'postgres' user. It is killed at the end
// of the test. URL() gives its connection string.
func StartPostgres(t testing.TB) *Server {
	t.Helper()
	NeedsServices(t)
	if _, err := os.Stat(pgBin + "/postgres"); err != nil {
		missing(t, "Postgres 15 binaries", err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "seckill-testpg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &Server{Name: "postgres", Port: FreePort(t), Dir: dir, t: t}
	asPG := func(name string, args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
		}
		return exec.Command(name, args...)
	}
	data := filepath.Join(dir, "data")
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	_ = os.WriteFile(pw, []byte("seckill\n"), 0o644)
	if out, err := asPG(pgBin+"/initdb", "-D", data, "-U", "seckill", "--pwfile="+pw, "-A", "scram-sha-256",
		"--no-locale", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.start = func() (*exec.Cmd, error) {
		cmd := asPG(pgBin+"/postgres", "-D", data, "-p", strconv.Itoa(s.Port), "-c", "listen_addresses=127.0.0.1",
			"-c", "unix_socket_directories="+dir, "-c", "max_connections=200")
		logf, _ := os.Create(filepath.Join(dir, "postgres.log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd, cmd.Start()
	}
	s.ready = func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, s.adminURL())
		if err != nil {
			return false
		}
		_ = c.Close(ctx)
		return true
	}
	// runuser forks; killing it does not reach postgres, so kill the whole process group and
	// remove the stale pid file.
	s.stop = func() {
		_ = exec.Command("pkill", "-9", "-f", "postgres -D "+data).Run()
		time.Sleep(100 * time.Millisecond)
		_ = os.Remove(filepath.Join(data, "postmaster.pid"))
		locks, _ := filepath.Glob(filepath.Join(dir, ".s.PGSQL.*"))
		for _, l := range locks {
			_ = os.Remove(l)
		}
	}
	s.Start()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.adminURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE DATABASE seckill"); err != nil {
		t.Fatal(err)
	}
	_ = c.Close(ctx)
	t.Cleanup(s.Kill)
	return s
}

func (s *Server) adminURL() string {
	return fmt.Sprintf("postgres://seckill:seckill@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
}

// URL is the connection string of a private Postgres's "seckill" database.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://seckill:seckill@127.0.0.1:%d/seckill?sslmode=disable", s.Port)
}

// StartRabbit starts a private RabbitMQ node (its own node name, ports and data dir) so that a
// test may stop and restart the broker. Starting takes several seconds. AMQPURL() gives its URL.
func StartRabbit(t testing.TB) *Server {
	t.Helper()
	NeedsServices(t)
	const bin = "/usr/lib/rabbitmq/bin/"
	if _, err := os.Stat(bin + "rabbitmq-server"); err != nil {
		missing(t, "rabbitmq-server", err)
	}
	dir := t.TempDir()
	s := &Server{Name: "rabbitmq", Port: FreePort(t), Dir: dir, t: t}
	node := ID("t") + "@localhost"
	dist := FreePort(t)
	epmd := env("SECKILL_EPMD_PORT", "14369")
	environ := append(os.Environ(),
		"HOME="+dir, "RABBITMQ_NODENAME="+node, "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(s.Port), "RABBITMQ_DIST_PORT="+strconv.Itoa(dist),
		"ERL_EPMD_PORT="+epmd, "RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"), "RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq"), "RABBITMQ_PID_FILE="+filepath.Join(dir, "rabbit.pid"),
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}")
	_ = os.WriteFile(filepath.Join(dir, "enabled_plugins"), []byte("[].\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "rabbitmq.conf"), []byte("listeners.tcp.default = 127.0.0.1:"+strconv.Itoa(s.Port)+
		"\nloopback_users.guest = true\ndisk_free_limit.absolute = 100MB\n"), 0o644)
	cookie := ID("c") + ID("")
	_ = os.WriteFile(filepath.Join(dir, ".erlang.cookie"), []byte(cookie), 0o400)
	_ = exec.Command("epmd", "-port", epmd, "-address", "127.0.0.1", "-daemon").Run()
	s.start = func() (*exec.Cmd, error) {
		cmd := exec.Command(bin + "rabbitmq-server")
		cmd.Env = environ
		logf, _ := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd, cmd.Start()
	}
	s.ready = func() bool {
		cmd := exec.Command(bin+"rabbitmqctl", "-q", "await_startup", "--timeout", "2")
		cmd.Env = environ
		return cmd.Run() == nil
	}
	// The server script execs the Erlang VM in a process group of its own: kill the group.
	s.stop = func() {
		if s.cmd == nil {
			_ = exec.Command("pkill", "-9", "-f", "-sname "+node).Run()
			_ = exec.Command("pkill", "-9", "-f", node).Run()
		}
	}
	origStop := s.stop
	s.stop = func() {
		origStop()
		time.Sleep(200 * time.Millisecond)
	}
	s.Start()
	t.Cleanup(func() {
		cmd := exec.Command(bin+"rabbitmqctl", "-q", "stop")
		cmd.Env = environ
		_ = cmd.Run()
		s.Kill()
	})
	return s
}

// AMQPURL is the URL of a private RabbitMQ started with StartRabbit.
func (s *Server) AMQPURL() string {
	return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", s.Port)
}

// tailLogs returns the last lines of every *.log file in dir, for a failure message.
func tailLogs(dir string) string {
	var out strings.Builder
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		fmt.Fprintf(&out, "== %s\n%s\n", f, b)
	}
	return out.String()
}
