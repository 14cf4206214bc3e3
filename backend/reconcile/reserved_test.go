//go:build integration

package reconcile_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
)

// Reconcile keeps the waitlist's reserve consistent: a reserve above what the waitlist's log
// holds, or above the stock, is set back (reported, logged, counted as a "reserved" repair),
// and one that agrees is left alone.
func TestReconcileClampsADriftedWaitlistReserve(t *testing.T) {
	ctx := context.Background()
	pool := backendtest.DB(t)
	rdb := testenv.Redis(t)
	log := slog.New(slog.DiscardHandler)
	locker := lock.NewLocker(rdb, 10*time.Second)
	sl := &sales.Sales{Pool: pool, Redis: rdb, Locker: locker, Log: log, CheckURL: func(context.Context, string) error { return nil }}
	sale := testenv.ID("resv")
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.MetaKey(sale), contract.RoomOfferLogKey(sale))
		rdb.SRem(context.Background(), contract.SalesIndexKey, sale)
	})
	now := time.Now()
	if created, err := sl.CreateSale(ctx, sales.SaleSpec{ID: sale, Stock: 3, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if _, err := sl.Preheat(ctx, sale); err != nil {
		t.Fatal(err)
	}
	rc := &reconcile.Reconciler{Pool: pool, Redis: rdb, Log: log, Now: time.Now, Locker: locker,
		Compensator: &orders.Compensator{Pool: pool, Redis: rdb, Log: log}, Shards: &shards.Counts{},
		Rebalance: func(context.Context, string, int, *admin.ReconcileReport) error { return nil }}
	repairs := reconcile.Collectors()[0].(*prometheus.CounterVec).WithLabelValues("reserved")
	meta := contract.MetaKey(sale)

	// The waitlist's log holds 2 units (2 held, none bought), Redis reserves 5: 2 is right.
	rdb.RPush(ctx, contract.RoomOfferLogKey(sale), "v:1:1:o1", "v:2:1:o2")
	rdb.HSet(ctx, meta, "reserved", 5)
	before := testutil.ToFloat64(repairs)
	rep, err := rc.Reconcile(ctx, sale)
	if err != nil {
		t.Fatal(err)
	}
	if got := rdb.HGet(ctx, meta, "reserved").Val(); got != "2" {
		t.Fatalf("reserved %s after reconcile, want 2 (what the log holds)", got)
	}
	if !strings.Contains(strings.Join(rep.Actions, "; "), "reserve was 5") {
		t.Fatalf("the report does not say it: %q", rep.Actions)
	}
	if got := testutil.ToFloat64(repairs) - before; got != 1 {
		t.Fatalf("%v reserved repairs counted, want 1", got)
	}

	// An offer was made and bought (the log holds 1 now), and the reserve drifted to 3.
	rdb.RPush(ctx, contract.RoomOfferLogKey(sale), "o:3:9:ann", "b:4:9:ann")
	rdb.HSet(ctx, meta, "reserved", 3)
	if _, err := rc.Reconcile(ctx, sale); err != nil {
		t.Fatal(err)
	}
	if got := rdb.HGet(ctx, meta, "reserved").Val(); got != "1" {
		t.Fatalf("reserved %s after reconcile, want 1", got)
	}
	// A consistent reserve (at most what the log holds: a purchase of an offer lowers it before
	// the log says so) is left alone: no repair.
	rdb.HSet(ctx, meta, "reserved", 0)
	before = testutil.ToFloat64(repairs)
	if _, err := rc.Reconcile(ctx, sale); err != nil {
		t.Fatal(err)
	}
	if got := rdb.HGet(ctx, meta, "reserved").Val(); got != "0" {
		t.Fatalf("reserved %s, want 0 kept", got)
	}
	if got := testutil.ToFloat64(repairs) - before; got != 0 {
		t.Fatalf("%v repairs of a consistent reserve", got)
	}
}
