package caddymodule

import "testing"

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
