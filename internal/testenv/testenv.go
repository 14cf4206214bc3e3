// Package testenv gives integration tests real services with isolation: a unique id space per
// test on the shared stack (scripts/stack.sh), a RabbitMQ vhost per test, a Postgres database
// per test, and private servers that a fault test may kill without disturbing anyone else.
//
// A missing service fails the test; it never skips it. Start the stack with
// `scripts/stack.sh start` (make test does it).
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// RedisAddr is the shared stack's Redis.
func RedisAddr() string { return env("SECKILL_REDIS_ADDR", "127.0.0.1:16379") }

// AMQPURL is the shared stack's RabbitMQ (default vhost).
func AMQPURL() string { return env("SECKILL_AMQP_URL", "amqp://guest:guest@127.0.0.1:16672/") }

// AMQPMgmtURL is the shared stack's RabbitMQ management API.
func AMQPMgmtURL() string { return env("SECKILL_AMQP_MGMT_URL", "http://guest:guest@127.0.0.1:16673") }

// PGURL is the shared stack's Postgres database "seckill".
func PGURL() string {
	return env("SECKILL_PG_URL", "postgres://seckill:seckill@127.0.0.1:15432/seckill?sslmode=disable")
}

// PGAdminURL points at the maintenance database, to create and drop test databases.
func PGAdminURL() string {
	return env("SECKILL_PG_ADMIN_URL", "postgres://seckill:seckill@127.0.0.1:15432/postgres?sslmode=disable")
}

func missing(t testing.TB, what string, err error) {
	t.Helper()
	t.Fatalf("%s is not reachable (%v): start the stack with `scripts/stack.sh start` or run `make test`", what, err)
}

// ID returns a fresh identifier valid under the contract (prefix + 12 hex digits), so tests
// sharing one Redis never see each other's sales, users or zones.
func ID(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Redis returns a client of the shared Redis, closed when the test ends.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	NeedsServices(t)
	c := redis.NewClient(&redis.Options{Addr: RedisAddr()})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		missing(t, "Redis at "+RedisAddr(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// RabbitVhost creates a RabbitMQ vhost of its own for the test (deleted at the end) and returns
// the AMQP URL of it. Topology names are fixed by the contract, so isolation is by vhost.
func RabbitVhost(t testing.TB) string {
	t.Helper()
	NeedsServices(t)
	vhost := ID("t-")
	mgmt := AMQPMgmtURL()
	if err := mgmtDo(http.MethodPut, mgmt+"/api/vhosts/"+vhost, ""); err != nil {
		missing(t, "RabbitMQ management API at "+redactURL(mgmt), err)
	}
	if err := mgmtDo(http.MethodPut, mgmt+"/api/permissions/"+vhost+"/guest", `{"configure":".*","write":".*","read":".*"}`); err != nil {
		t.Fatalf("grant vhost permissions: %v", err)
	}
	t.Cleanup(func() { _ = mgmtDo(http.MethodDelete, mgmt+"/api/vhosts/"+vhost, "") })
	u, err := url.Parse(AMQPURL())
	if err != nil {
		t.Fatalf("SECKILL_AMQP_URL: %v", err)
	}
	u.Path = "/" + vhost
	return u.String()
}

// RabbitMgmt performs a management API call against the shared stack (path like
// "/api/queues/<vhost>/<queue>") and returns the body.
func RabbitMgmt(method, path, body string) ([]byte, error) {
	return mgmtCall(method, AMQPMgmtURL()+path, body)
}

func mgmtDo(method, rawURL, body string) error {
	_, err := mgmtCall(method, rawURL, body)
	return err
}

func mgmtCall(method, rawURL, body string) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	user := u.User
	u.User = nil
	req, err := http.NewRequest(method, u.String(), strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if user != nil {
		pw, _ := user.Password()
		req.SetBasicAuth(user.Username(), pw)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return b, fmt.Errorf("%s %s: %s: %s", method, u.Path, resp.Status, b)
	}
	return b, nil
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "?"
	}
	return u.Redacted()
}

// Postgres creates a database of its own for the test (dropped at the end) and returns its URL.
func Postgres(t testing.TB) string {
	t.Helper()
	NeedsServices(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, PGAdminURL())
	if err != nil {
		missing(t, "Postgres", err)
	}
	defer admin.Close(context.Background())
	name := "t_" + strings.ReplaceAll(ID(""), "-", "_")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, PGAdminURL()); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = c.Close(ctx)
		}
	})
	u, _ := url.Parse(PGURL())
	u.Path = "/" + name
	return u.String()
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitFor polls cond every 20 ms until it is true or the timeout passes, then fails the test
// with what.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", timeout, what)
}
