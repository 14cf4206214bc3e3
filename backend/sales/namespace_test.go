//go:build integration

package sales

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// Preheat records the backend's namespace in the meta of the sale and of every shard (a
// gateway's relay takes only its own namespace's outboxes); without one, the field is absent
// (the unnamed deployment).
func TestPreheatRecordsTheNamespaceInEverySaleAndShardMeta(t *testing.T) {
	t.Parallel()
	pool := backendtest.DB(t)
	rdb := testenv.Redis(t)
	ctx := context.Background()
	ns := testenv.ID("ns-")
	s := &Sales{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, 5*time.Second), Log: slog.New(slog.DiscardHandler),
		Retention: time.Hour, Namespace: ns, Shards: &shards.Counts{}}
	plain := openSale(t, s, 3, 0)
	const k = 3
	sharded := openSale(t, s, 9, k)
	for _, id := range append([]string{plain, sharded}, contract.ShardIDs(sharded, k)...) {
		if got := rdb.HGet(ctx, contract.MetaKey(id), contract.FieldNamespace).Val(); got != ns {
			t.Errorf("meta of %s: namespace %q, want %q", id, got, ns)
		}
	}

	s.Namespace = ""
	unnamed := openSale(t, s, 3, 0)
	if n := rdb.HExists(ctx, contract.MetaKey(unnamed), contract.FieldNamespace).Val(); n {
		t.Errorf("a sale preheated without a namespace has a namespace field")
	}
}

// openSale creates an open sale of stock units (over k shards when k > 1) and preheats it; its
// Redis keys go at the end of the test.
func openSale(t *testing.T, s *Sales, stock, k int) string {
	t.Helper()
	ctx := context.Background()
	id := testenv.ID("s")
	now := time.Now()
	if _, err := s.CreateSale(ctx, SaleSpec{ID: id, Stock: stock, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PayWithin: "15m", Shards: k}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Preheat(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ids := append([]string{id}, contract.ShardIDs(id, max(k, 1))...)
		for _, x := range ids {
			s.Redis.Del(ctx, contract.MetaKey(x), contract.BuyersKey(x), contract.CompensatedKey(x), contract.OutboxKey(x),
				contract.MovesKey(x), contract.MovedInKey(x))
			s.Redis.SRem(ctx, contract.SalesIndexKey, x)
		}
		lk := "seckill:lock:{" + lock.SaleKey(id) + "}"
		s.Redis.Del(ctx, lk, lk+":fence", lk+":released")
	})
	return id
}
