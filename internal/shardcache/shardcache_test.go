package shardcache

import (
	"context"
	"errors"
	"testing"

	"github.com/seckilledge/seckill/contract"
)

func TestCountsRememberOnlyShardedSalesLearnt(t *testing.T) {
	var c Counts
	if c.Of("s1") != 1 {
		t.Fatal("an unknown sale must read as unsharded")
	}
	c.Learn("s1", 4)
	c.Learn("s2", 1)
	c.Learn("s3", contract.MaxShards+1)
	if c.Of("s1") != 4 || c.Of("s2") != 1 || c.Of("s3") != 1 {
		t.Fatalf("Of = %d %d %d", c.Of("s1"), c.Of("s2"), c.Of("s3"))
	}
	c.Forget("s1")
	if c.Of("s1") != 1 {
		t.Fatal("Forget kept the count")
	}
	var none *Counts
	none.Learn("s1", 4)
	if none.Of("s1") != 1 {
		t.Fatal("a nil Counts must know nothing")
	}
}

func TestLoadAsksOncePerKnownSaleAndNeverCachesAnUnknownOne(t *testing.T) {
	var c Counts
	calls := map[string]int{}
	answers := map[string]int{"sharded": 3, "plain": 1, "missing": 0}
	load := func(_ context.Context, sale string) (int, error) {
		calls[sale]++
		if sale == "broken" {
			return 0, errors.New("down")
		}
		return answers[sale], nil
	}
	ctx := context.Background()
	for range 3 {
		for sale, want := range map[string]int{"sharded": 3, "plain": 1, "missing": 1} {
			if k, err := c.Load(ctx, sale, load); err != nil || k != want {
				t.Fatalf("Load(%s) = %d, %v; want %d", sale, k, err, want)
			}
		}
	}
	if calls["sharded"] != 1 || calls["plain"] != 1 {
		t.Errorf("a stored sale must be loaded once: %v", calls)
	}
	if calls["missing"] != 3 {
		t.Errorf("a sale the store does not know must be asked again (it may be created sharded): %v", calls)
	}
	if _, err := c.Load(ctx, "broken", load); err == nil {
		t.Error("Load hid the loader's error")
	}
	if c.Of("sharded") != 3 {
		t.Error("what Load learnt is not visible to Of")
	}
}
