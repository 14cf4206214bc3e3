package backend

import (
	"context"
	"testing"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// Preheat records the backend's namespace in the meta of the sale and of every shard (a
// gateway's relay takes only its own namespace's outboxes); without one, the field is absent
// (the unnamed deployment).
func TestPreheatRecordsTheNamespaceInEverySaleAndShardMeta(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ns := testenv.ID("ns-")
	e.rebuild(func(o *Options) { o.Namespace = ns })
	plain := e.sale(3)
	const k = 3
	sharded := e.shardedSale(9, k)
	for _, id := range append([]string{plain, sharded}, contract.ShardIDs(sharded, k)...) {
		if got := e.rdb.HGet(ctx, contract.MetaKey(id), contract.FieldNamespace).Val(); got != ns {
			t.Errorf("meta of %s: namespace %q, want %q", id, got, ns)
		}
	}

	e.rebuild(func(o *Options) { o.Namespace = "" })
	unnamed := e.sale(3)
	if n := e.rdb.HExists(ctx, contract.MetaKey(unnamed), contract.FieldNamespace).Val(); n {
		t.Errorf("a sale preheated without a namespace has a namespace field")
	}
}
