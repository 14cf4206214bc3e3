// Package testenv gives integration tests real services with isolation: a unique id space per
// test on the shared stack (scripts/stack.sh), a RabbitMQ vhost per test, a Postgres database
// per test, and private servers that a fault test may kill without disturbing anyone else.
//
// A missing service fails the test; it never skips it. Start the stack with
// `scripts/stack.sh start` (make test does it). The tests that use these helpers are the
// integration tier: their files carry `//go:build integration` (make test builds with
// -tags integration). In a binary built without the tag (make unit) every helper that reaches
// a service fails the test at once and says which line the file lacks, so a test in the wrong
// tier is caught the first time it runs, never skipped.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/proc"
	"github.com/seckilledge/seckill/internal/rabbitmgmt"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// RedisAddr is the shared stack's Redis.
func RedisAddr() string { return stackenv.RedisAddr() }

// AMQPURL is the shared stack's RabbitMQ (default vhost).
func AMQPURL() string { return stackenv.AMQPURL() }

// AMQPMgmtURL is the shared stack's RabbitMQ management API.
func AMQPMgmtURL() string { return stackenv.AMQPMgmtURL() }

// PGURL is the shared stack's Postgres database "seckill".
func PGURL() string { return stackenv.PGURL() }

// PGAdminURL points at the maintenance database, to create and drop test databases.
func PGAdminURL() string { return stackenv.PGAdminURL() }

// NeedsServices marks a test that needs real servers (the shared stack's or private ones it
// starts), a browser or a built binary: in a binary built without the integration tag it fails
// the test, naming the build line its file lacks. Every helper of this package that reaches a
// service calls it first, so a test that starts with one of them needs nothing else.
func NeedsServices(t testing.TB, what string) {
	t.Helper()
	if !Integration {
		t.Fatalf("%s needs %s: its file belongs to the integration tier and must start with the line "+
			"`//go:build integration` (bash scripts/tag-tests.sh adds it; make test runs that tier)", t.Name(), what)
	}
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
	NeedsServices(t, "Redis")
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
	NeedsServices(t, "RabbitMQ")
	vhost := ID("t-")
	mg := mgmt(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := mg.CreateVhost(ctx, vhost); err != nil {
		missing(t, "RabbitMQ management API at "+mg.String(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = mg.DeleteVhost(ctx, vhost)
	})
	u, err := url.Parse(AMQPURL())
	if err != nil {
		t.Fatalf("%s: %v", stackenv.AMQPURLVar, err)
	}
	u.Path = "/" + vhost
	return u.String()
}

// Mgmt is a client of the shared stack's RabbitMQ management API.
func Mgmt(t testing.TB) *rabbitmgmt.Client {
	t.Helper()
	NeedsServices(t, "the RabbitMQ management API")
	return mgmt(t)
}

func mgmt(t testing.TB) *rabbitmgmt.Client {
	t.Helper()
	mg, err := rabbitmgmt.New(AMQPMgmtURL())
	if err != nil {
		t.Fatalf("%s: %v", stackenv.AMQPMgmtURLVar, err)
	}
	return mg
}

// RabbitMgmt performs a management API call against the shared stack (path like
// "/api/queues/<vhost>/<queue>", body JSON or "") and returns the answer's body.
func RabbitMgmt(method, path, body string) ([]byte, error) {
	mg, err := rabbitmgmt.New(AMQPMgmtURL())
	if err != nil {
		return nil, err
	}
	var b any
	if body != "" {
		b = json.RawMessage(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return mg.Do(ctx, method, path, b)
}

// Postgres creates a database of its own for the test (dropped at the end) and returns its URL.
func Postgres(t testing.TB) string {
	t.Helper()
	NeedsServices(t, "Postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, PGAdminURL())
	if err != nil {
		missing(t, "Postgres", err)
	}
	defer admin.Close(context.Background())
	name := newDBName()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	dropAtEnd(t, name)
	return dbURL(name)
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := proc.FreePort()
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	return p
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

// Topology dials url, declares the contract's RabbitMQ topology there and returns the channel,
// closed when the test ends.
func Topology(t testing.TB, url string) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("dial %s: %v", redact(url), err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.DeclareTopology(ch); err != nil {
		t.Fatalf("declare topology: %v", err)
	}
	return ch
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "?"
	}
	return u.Redacted()
}

// templateLock is the advisory lock over the test templates: a test that copies a finished
// template holds it shared, so copies run side by side (a copy does not connect to its
// template, so Postgres lets any number of them run at once); a test that builds one holds it
// exclusively, so two test processes never build the same template, and nobody copies a
// template half built.
const templateLock = "hashtext('seckill test templates')"

// PostgresFrom creates a database of the test's own (dropped at the end) as a copy of a
// template database that migrate brought to a schema, and returns its URL: a clone is a file
// copy, much cheaper than running every migration again. key names the schema (a digest of
// the migrations): the template "tpl_<key>" is built once, by the first test of any process
// that asks for it, and kept for the next runs; a change of the migrations is a new key.
//
// Postgres refuses to copy a database while anyone is connected to it, so a finished template
// allows no connections at all (ALLOW_CONNECTIONS false, which also marks it finished: a
// build that died half way is dropped and done again).
func PostgresFrom(t testing.TB, key string, migrate func(ctx context.Context, url string) error) string {
	t.Helper()
	NeedsServices(t, "Postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, PGAdminURL())
	if err != nil {
		missing(t, "Postgres", err)
	}
	defer admin.Close(context.Background())
	tpl := "tpl_" + strings.ToLower(key)
	if len(tpl) > 40 || strings.Trim(key, "0123456789abcdefABCDEF") != "" {
		t.Fatalf("template key %q: want at most 36 hex digits", key)
	}
	finished := func() bool {
		var allowConn bool
		err := admin.QueryRow(ctx, "SELECT datallowconn FROM pg_database WHERE datname = $1", tpl).Scan(&allowConn)
		if err != nil && err != pgx.ErrNoRows {
			t.Fatalf("look up the template %s: %v", tpl, err)
		}
		return err == nil && !allowConn
	}
	lock := func(kind string) func() {
		if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock"+kind+"("+templateLock+")"); err != nil {
			t.Fatalf("lock the test templates: %v", err)
		}
		return func() {
			_, _ = admin.Exec(context.Background(), "SELECT pg_advisory_unlock"+kind+"("+templateLock+")")
		}
	}
	unlock := lock("_shared")
	if !finished() {
		unlock()
		unlock = lock("")
		if !finished() {
			if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+tpl+" WITH (FORCE)"); err != nil {
				t.Fatalf("drop the unfinished template %s: %v", tpl, err)
			}
			if _, err := admin.Exec(ctx, "CREATE DATABASE "+tpl); err != nil {
				t.Fatalf("create the template %s: %v", tpl, err)
			}
			if err := migrate(ctx, dbURL(tpl)); err != nil {
				t.Fatalf("migrate the template %s: %v", tpl, err)
			}
			if _, err := admin.Exec(ctx, "ALTER DATABASE "+tpl+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
				t.Fatalf("finish the template %s: %v", tpl, err)
			}
		}
	}
	defer unlock()
	name := newDBName()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+tpl); err != nil {
		t.Fatalf("copy the template %s: %v", tpl, err)
	}
	dropAtEnd(t, name)
	return dbURL(name)
}

func newDBName() string { return "t_" + strings.ReplaceAll(ID(""), "-", "_") }

func dbURL(name string) string {
	u, _ := url.Parse(PGURL())
	u.Path = "/" + name
	return u.String()
}

func dropAtEnd(t testing.TB, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, PGAdminURL()); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = c.Close(ctx)
		}
	})
}
