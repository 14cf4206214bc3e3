package caddymodule

import (
	"testing"

	"github.com/seckilledge/seckill/contract"
)

func TestShardCountsRememberOnlyShardedSales(t *testing.T) {
	var c ShardCounts
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
	var none *ShardCounts
	none.Learn("s1", 4)
	if none.Of("s1") != 1 {
		t.Fatal("a nil ShardCounts must know nothing")
	}
}

func TestShardEventsFlagOneShardNotTheSale(t *testing.T) {
	e := &SaleEvents{}
	e.Apply("sold_out:s1:2")
	if !e.SoldOut("s1:2") || e.SoldOut("s1") || e.SoldOut("s1:1") {
		t.Fatal("a shard's sell-out must flag that shard only")
	}
	e.Apply("restock:s1:2")
	if e.SoldOut("s1:2") {
		t.Fatal("the shard's restock must clear its flag")
	}
	e.Apply("sold_out:s1:x")
	e.Apply("sold_out:s1:99")
	if e.SoldOut("s1:x") || e.SoldOut("s1:99") {
		t.Fatal("malformed shard ids must be ignored")
	}
}
