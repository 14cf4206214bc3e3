package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
)

// The fault tests of the product rely on these servers really dying and really coming back.

func TestPrivateRedisDiesOnKillAndKeepsAOFDataOnRestart(t *testing.T) {
	s := StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the AOF everysec window
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

func TestSharedStackIsolation(t *testing.T) {
	_ = Redis(t)
	u := RabbitVhost(t)
	conn, err := amqp.Dial(u)
	if err != nil {
		t.Fatalf("dial test vhost: %v", err)
	}
	_ = conn.Close()
	pg := Postgres(t)
	c, err := pgx.Connect(context.Background(), pg)
	if err != nil {
		t.Fatalf("connect test database: %v", err)
	}
	_ = c.Close(context.Background())
}
