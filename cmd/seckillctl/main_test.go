//go:build integration

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

const (
	adminToken  = "carol-admin-token-0123456789-abcdef"
	viewerToken = "vic-viewer-token-0123456789-abcdefg"
)

// backendServer runs the real backend API (its own Postgres database, the shared Redis) in
// this process.
func backendServer(t *testing.T) (*httptest.Server, *backend.Service) {
	t.Helper()
	ctx := context.Background()
	pg := testenv.PostgresFrom(t, backend.SchemaDigest(), backend.Migrate)
	pool, err := pgxpool.New(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rdb := testenv.Redis(t)
	toks, err := backend.ParseTokens("carol:"+adminToken+":admin,vic:"+viewerToken+":viewer", "")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := backend.New(backend.Options{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, 5*time.Second),
		Compensator: &orders.Compensator{Pool: pool, Redis: rdb, Log: log}, Log: log, Tokens: toks, Retention: time.Hour})
	srv := httptest.NewServer(svc.Handler(backend.NewMetricsRegistry(), false))
	t.Cleanup(srv.Close)
	return srv, svc
}

func mustCtl(t *testing.T, srv *httptest.Server, args ...string) string {
	t.Helper()
	code, out, errs := ctl(t, srv, adminToken, args...)
	if code != 0 {
		t.Fatalf("seckillctl %v: exit %d: %s%s", args, code, out, errs)
	}
	return out
}

// An operator's session: create, preheat, look, pause, add stock (twice, one request id),
// watch, end, and read who did what, all through the real backend.
func TestSeckillctlRunsASaleAgainstTheRealBackend(t *testing.T) {
	srv, svc := backendServer(t)
	sale := testenv.ID("ctl")
	t.Cleanup(func() {
		ctx := context.Background()
		svc.Sales.Redis.Del(ctx, contract.MetaKey(sale), contract.BuyersKey(sale), "seckill:"+contract.SaleTag(sale)+":stock_requests")
		svc.Sales.Redis.SRem(ctx, contract.SalesIndexKey, sale)
	})
	if out := mustCtl(t, srv, "create", "-id", sale, "-stock", "10", "-in", "-1m", "-for", "1h"); !strings.Contains(out, "created sale "+sale) {
		t.Fatalf("create: %s", out)
	}
	mustCtl(t, srv, "preheat", sale)
	out := mustCtl(t, srv, "sales")
	if !strings.Contains(out, "SALE") || !strings.Contains(out, sale) || !strings.Contains(out, "open") {
		t.Fatalf("sales table:\n%s", out)
	}
	var st struct {
		StockRedis *int64 `json:"stock_redis"`
		StockDB    int    `json:"stock_db"`
	}
	if err := json.Unmarshal([]byte(mustCtl(t, srv, "status", sale, "-o", "json")), &st); err != nil || st.StockRedis == nil || *st.StockRedis != 10 || st.StockDB != 10 {
		t.Fatalf("status -o json: %+v %v", st, err)
	}
	if out := mustCtl(t, srv, "pause", sale); !strings.Contains(out, "paused") {
		t.Fatalf("pause: %s", out)
	}
	if got := svc.Sales.Redis.HGet(context.Background(), contract.MetaKey(sale), contract.FieldState).Val(); got != "paused" {
		t.Fatalf("meta state %q after seckillctl pause", got)
	}
	if code, _, errs := ctl(t, srv, adminToken, "pause", sale); code != 1 || !strings.Contains(errs, "already_paused") {
		t.Fatalf("second pause: exit %d %s", code, errs)
	}
	if code, _, errs := ctl(t, srv, viewerToken, "resume", sale); code != 1 || !strings.Contains(errs, "403 forbidden") {
		t.Fatalf("viewer resume: exit %d %s", code, errs)
	}
	mustCtl(t, srv, "resume", sale)
	mustCtl(t, srv, "stock", "add", sale, "5", "-request-id", "ctl-more")
	if out := mustCtl(t, srv, "stock", "add", sale, "5", "-request-id", "ctl-more"); !strings.Contains(out, "already applied") {
		t.Fatalf("retried stock add: %s", out)
	}
	if n, _ := svc.Sales.Redis.HGet(context.Background(), contract.MetaKey(sale), contract.FieldStock).Int(); n != 15 {
		t.Fatalf("Redis stock %d after adding 5 twice under one request id", n)
	}
	mustCtl(t, srv, "stock", "remove", sale, "2")
	out = mustCtl(t, srv, "watch", sale, "-n", "2", "-interval", "100ms")
	if strings.Count(out, "sale "+sale) != 2 || !strings.Contains(out, "buyers /s") || !strings.Contains(out, "13") {
		t.Fatalf("watch:\n%s", out)
	}
	mustCtl(t, srv, "reconcile", sale)
	if code, _, errs := ctl(t, srv, adminToken, "rebalance", sale); code != 1 || !strings.Contains(errs, "not_sharded") {
		t.Fatalf("rebalance of an unsharded sale: exit %d %s", code, errs)
	}
	mustCtl(t, srv, "end", sale)
	if code, _, errs := ctl(t, srv, adminToken, "stock", "add", sale, "1"); code != 1 || !strings.Contains(errs, "sale_ended") {
		t.Fatalf("stock add after the end: exit %d %s", code, errs)
	}
	out = mustCtl(t, srv, "audit", "-sale", sale)
	for _, want := range []string{"carol", "pause", "resume", "stock", "end", "ctl-more"} {
		if !strings.Contains(out, want) {
			t.Fatalf("audit lacks %q:\n%s", want, out)
		}
	}
	var trail struct{ Entries []json.RawMessage }
	if err := json.Unmarshal([]byte(mustCtl(t, srv, "-o", "json", "audit", "-sale", sale)), &trail); err != nil || len(trail.Entries) != 5 {
		t.Fatalf("audit -o json: %d entries, %v", len(trail.Entries), err)
	}
	if code, _, errs := ctl(t, srv, adminToken, "status", "no-such-sale"); code != 1 || !strings.Contains(errs, "unknown_sale") {
		t.Fatalf("unknown sale: exit %d %s", code, errs)
	}
}
