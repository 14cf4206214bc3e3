//go:build integration

package testenv

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
)

// The fault tests of the product rely on these servers really dying and really coming back.
// Each server here is the test's own (its own port and data directory), so the three run side
// by side: most of their time is a server starting.

func TestPrivateRedisDiesOnKillAndKeepsAOFDataOnRestart(t *testing.T) {
	t.Parallel()
	s := StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// A kill loses what Redis has not yet written to the AOF file (the page cache survives a
	// process kill; only a machine crash needs the fsync): wait for the buffer to be written.
	WaitFor(t, 5*time.Second, "the AOF buffer written", func() bool {
		info, err := c.Info(ctx, "persistence").Result()
		return err == nil && strings.Contains(info, "aof_enabled:1") && strings.Contains(info, "aof_buffer_length:0")
	})
	s.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("redis still answers after Kill")
	}
	s.Start()
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after restart GET k = %q, %v", v, err)
	}
}

func TestPrivatePostgresRestarts(t *testing.T) {
	t.Parallel()
	s := StartPostgres(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close(ctx)
	s.Kill()
	if c, err := pgx.Connect(ctx, s.URL()); err == nil {
		_ = c.Close(ctx)
		t.Fatal("postgres still answers after Kill")
	}
	s.Start()
	c, err = pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	_ = c.Close(ctx)
}

func TestPrivateRabbitRestarts(t *testing.T) {
	t.Parallel()
	s := StartRabbit(t)
	conn, err := amqp.Dial(s.AMQPURL())
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	s.Stop()
	if conn, err := amqp.Dial(s.AMQPURL()); err == nil {
		_ = conn.Close()
		t.Fatal("rabbitmq still answers after Stop")
	}
	s.Start()
	conn, err = amqp.Dial(s.AMQPURL())
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	_ = conn.Close()
}

// Tests share one Redis, one RabbitMQ and one Postgres: what one test writes must be invisible
// to another, and nothing may be left behind.
func TestSharedStackIsolation(t *testing.T) {
	ids := map[string]bool{}
	for range 10000 {
		id := ID("s")
		if ids[id] || !contract.ValidID(id) {
			t.Fatalf("ID gave %q twice or invalid", id)
		}
		ids[id] = true
	}
	ctx := context.Background()
	var vhosts, dbs [2]string
	t.Run("two tests side by side", func(t *testing.T) {
		var urls [2]string
		for i := range urls {
			urls[i] = RabbitVhost(t)
			vhosts[i] = urls[i][strings.LastIndexByte(urls[i], '/')+1:]
			pg := Postgres(t)
			u, err := url.Parse(pg)
			if err != nil {
				t.Fatal(err)
			}
			dbs[i] = strings.TrimPrefix(u.Path, "/")
			if i == 0 {
				c, err := pgx.Connect(ctx, pg)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.Exec(ctx, "CREATE TABLE isolation (x int); INSERT INTO isolation VALUES (1)"); err != nil {
					t.Fatal(err)
				}
				_ = c.Close(ctx)
			} else {
				c, err := pgx.Connect(ctx, pg)
				if err != nil {
					t.Fatal(err)
				}
				var found *string
				if err := c.QueryRow(ctx, "SELECT to_regclass('isolation')::text").Scan(&found); err != nil || found != nil {
					t.Errorf("the second test's database sees the first's table (%v, %v)", found, err)
				}
				_ = c.Close(ctx)
			}
		}
		if vhosts[0] == vhosts[1] || dbs[0] == dbs[1] || vhosts[0] == "" || dbs[0] == "" {
			t.Fatalf("vhosts %v, databases %v: not one each", vhosts, dbs)
		}
		// A message published in one vhost is not in the other's queue of the same name.
		depth := make([]int, 2)
		for i, u := range urls {
			conn, err := amqp.Dial(u)
			if err != nil {
				t.Fatalf("dial test vhost: %v", err)
			}
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ch.QueueDeclare("isolation", false, false, false, false, nil); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				if err := ch.Confirm(false); err != nil {
					t.Fatal(err)
				}
				dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", "isolation", true, false, amqp.Publishing{Body: []byte("x")})
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := dc.WaitContext(ctx); !ok || err != nil {
					t.Fatalf("publish not confirmed: %v", err)
				}
			}
			q, err := ch.QueueDeclarePassive("isolation", false, false, false, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			depth[i] = q.Messages
			_ = conn.Close()
		}
		if depth[0] != 1 || depth[1] != 0 {
			t.Fatalf("queue depths %v, want [1 0]: the vhosts are not isolated", depth)
		}
	})
	// The subtest's cleanups have run: its vhosts and databases are gone.
	mg := Mgmt(t)
	admin, err := pgx.Connect(ctx, PGAdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for i := range vhosts {
		if ok, err := mg.VhostExists(ctx, vhosts[i]); ok || err != nil {
			t.Errorf("vhost %s left behind (%v)", vhosts[i], err)
		}
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", dbs[i]).Scan(&n); err != nil || n != 0 {
			t.Errorf("database %s left behind (%d, %v)", dbs[i], n, err)
		}
	}
}
