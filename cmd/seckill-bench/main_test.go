//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// soldSale builds, by hand, a sale of `stock` units that sold `sold` of them (more than the
// stock when the stock check is sabotaged), as the gate and the consumer would have left it.
func soldSale(t *testing.T, stock, sold int) (args []string) {
	t.Helper()
	ctx := context.Background()
	url := testenv.PostgresFrom(t, backend.SchemaDigest(), backend.Migrate)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rdb := testenv.Redis(t)
	vhost := testenv.RabbitVhost(t)
	testenv.Topology(t, vhost)
	sale := testenv.ID("sab")
	t.Cleanup(func() { rdb.Del(context.Background(), contract.MetaKey(sale), contract.BuyersKey(sale)) })
	if _, err := conn.Exec(ctx, `INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at) VALUES ($1, $2, $3, now(), now() + interval '1 hour')`,
		sale, stock, max(stock-sold, 0)); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, contract.MetaKey(sale), contract.FieldStock, max(stock-sold, 0))
	var acc []invariants.Accepted
	for i := 0; i < sold; i++ {
		u, o := fmt.Sprintf("u%d", i), fmt.Sprintf("o%d", i)
		if _, err := conn.Exec(ctx, `INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at) VALUES ($1, $2, $3, 'created', now())`, o, sale, u); err != nil {
			t.Fatal(err)
		}
		rdb.HSet(ctx, contract.BuyersKey(sale), u, o)
		acc = append(acc, invariants.Accepted{OrderID: o, UserID: u, At: time.Now()})
	}
	file := filepath.Join(t.TempDir(), "accepted.json")
	b, _ := json.Marshal(acc)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"verify", "-sale", sale, "-accepted", file, "-demand", fmt.Sprint(sold), "-pg", url,
		"-redis", testenv.RedisAddr(), "-amqp-mgmt", testenv.AMQPMgmtURL(), "-vhost", vhost[strings.LastIndex(vhost, "/")+1:]}
}

// The sabotage check: a gate whose stock check is switched off sells more than the stock; the
// verifier must say so and the command must exit non-zero, or a green benchmark means nothing.
func TestBenchExitsNonZeroOnAnOversoldSale(t *testing.T) {
	args := soldSale(t, 5, 7)
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	if code != 1 {
		t.Fatalf("exit code %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "FAIL  1. no oversell") || !strings.Contains(out.String(), "OVERSELL by 2") {
		t.Fatalf("the report does not name the oversell:\n%s", out.String())
	}
}

func TestBenchExitsZeroOnACleanSale(t *testing.T) {
	args := soldSale(t, 5, 5)
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit code %d, want 0\n%s%s", code, out.String(), errb.String())
	}
}
