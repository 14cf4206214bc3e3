package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/proc"
)

// Server is a private service process started for one test, which the test may stop, kill
// and start again (fault tests). It is stopped when the test ends.
type Server struct {
	Name string
	Port int
	Dir  string
	srv  *proc.Server
	amqp string
	t    testing.TB
}

func newServer(t testing.TB, s *proc.Server, port int, dir string) *Server {
	return &Server{Name: s.Name, Port: port, Dir: dir, srv: s, t: t}
}

// Start starts the process (again) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.srv.Start(context.Background()); err != nil {
		s.t.Fatalf("%v", err)
	}
}

// Kill kills the process without notice: no shutdown, no flush (Postgres: an immediate
// shutdown, crash recovery at the next start).
func (s *Server) Kill() { _ = s.srv.Kill() }

// Stop asks the process to shut down cleanly and waits for it.
func (s *Server) Stop() { _ = s.srv.Stop(context.Background()) }

// Addr is host:port of the server.
func (s *Server) Addr() string { return s.srv.Addr }

// StartRedis starts a private redis-server on a free loopback port with AOF everysec, data in
// a temp dir. It is killed at the end of the test.
func StartRedis(t testing.TB) *Server {
	t.Helper()
	NeedsServices(t, "a private redis-server")
	port, dir := FreePort(t), t.TempDir()
	rs, err := proc.NewRedis(dir, port, proc.AOFEverySec...)
	if err != nil {
		missing(t, "redis-server", err)
	}
	s := newServer(t, rs, port, dir)
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// StartRedisCluster starts a 3-master Redis Cluster on loopback (no replicas) and returns its
// seed addresses. Used by the Cluster tests.
func StartRedisCluster(t testing.TB) []string {
	t.Helper()
	NeedsServices(t, "a private Redis Cluster")
	var addrs []string
	for i := 0; i < 3; i++ {
		dir := t.TempDir()
		// The cluster bus defaults to port+10000, which another process may hold: pick it too.
		ports, err := proc.FreePorts(2)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := proc.NewRedis(dir, ports[0], "--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(ports[1]),
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--appendonly", "no")
		if err != nil {
			missing(t, "redis-server", err)
		}
		rs.Name = fmt.Sprintf("redis-cluster-%d", i)
		s := newServer(t, rs, ports[0], dir)
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
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		var info string
		WaitFor(t, 60*time.Second, "redis cluster node "+a+" to be ok", func() bool {
			info, _ = c.ClusterInfo(context.Background()).Result()
			return strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") &&
				strings.Contains(info, "cluster_known_nodes:3")
		})
		c.Close()
	}
	return addrs
}

// StartPostgres starts a private Postgres 15 on a free loopback port (user seckill, password
// seckill, database seckill). It is killed at the end of the test. URL() gives its connection
// string.
func StartPostgres(t testing.TB) *Server {
	t.Helper()
	NeedsServices(t, "a private Postgres")
	// Not t.TempDir: the postgres user must be able to reach it.
	dir, err := os.MkdirTemp("/var/tmp", "seckill-testpg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	port := FreePort(t)
	ps, err := proc.NewPostgres(dir, port)
	if err != nil {
		missing(t, "Postgres 15", err)
	}
	s := newServer(t, ps, port, dir)
	s.Start()
	t.Cleanup(s.Kill)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, proc.PGURL(ps, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE DATABASE seckill"); err != nil {
		t.Fatal(err)
	}
	_ = c.Close(ctx)
	return s
}

// URL is the connection string of a private Postgres's "seckill" database.
func (s *Server) URL() string { return proc.PGURL(s.srv, "seckill") }

// StartRabbit starts a private RabbitMQ node (its own node name, ports and data dir) so that a
// test may stop and restart the broker. Starting takes several seconds. AMQPURL() gives its URL.
func StartRabbit(t testing.TB) *Server {
	t.Helper()
	NeedsServices(t, "a private RabbitMQ")
	dir := t.TempDir()
	r, err := proc.NewRabbit(dir, ID("t"))
	if err != nil {
		missing(t, "rabbitmq-server", err)
	}
	port, _ := strconv.Atoi(r.Addr[strings.LastIndexByte(r.Addr, ':')+1:])
	s := newServer(t, r.Server, port, dir)
	s.amqp = r.AMQPURL()
	s.Start()
	t.Cleanup(func() {
		_ = r.Stop(context.Background())
		s.Kill()
	})
	return s
}

// AMQPURL is the URL of a private RabbitMQ started with StartRabbit.
func (s *Server) AMQPURL() string { return s.amqp }
