package contract

import (
	"strconv"
	"testing"
)

func TestUnshardedSalesKeepTheirKeys(t *testing.T) {
	if got := UserShardID("s1", "u1", 1); got != "s1" {
		t.Fatalf("UserShardID with k=1 = %q, want the sale", got)
	}
	if got := MetaKey(UserShardID("s1", "u1", 1)); got != "seckill:{sale:s1}:meta" {
		t.Fatalf("unsharded meta key = %q", got)
	}
	if ids := ShardIDs("s1", 1); len(ids) != 1 || ids[0] != "s1" {
		t.Fatalf("ShardIDs(k=1) = %v", ids)
	}
}

func TestShardKeysCarryOneHashTagPerShard(t *testing.T) {
	ids := ShardIDs("s1", 4)
	tags := map[string]bool{}
	for i, id := range ids {
		if want := "seckill:{sale:s1:" + strconv.Itoa(i) + "}:meta"; MetaKey(id) != want {
			t.Fatalf("MetaKey(%q) = %q, want %q", id, MetaKey(id), want)
		}
		tags[SaleTag(id)] = true
		sale, n, ok := SplitShardID(id)
		if !ok || sale != "s1" || n != i || BaseSale(id) != "s1" {
			t.Fatalf("SplitShardID(%q) = %q %d %v", id, sale, n, ok)
		}
	}
	if len(tags) != 4 {
		t.Fatalf("shards share hash tags: %v", tags)
	}
}

func TestShardIDsAreNeverSaleIDs(t *testing.T) {
	for _, bad := range []string{"s1", "s1:", ":1", "s1:01", "s1:-1", "s1:64", "s1:1:2", "s 1:1", "s1:999"} {
		if _, _, ok := SplitShardID(bad); ok {
			t.Errorf("SplitShardID(%q) accepted", bad)
		}
	}
	if ValidID(ShardID("s1", 3)) {
		t.Fatal("a shard id is a valid sale id")
	}
	if !ValidSaleOrShard("s1") || !ValidSaleOrShard("s1:3") || ValidSaleOrShard("s1:x") {
		t.Fatal("ValidSaleOrShard")
	}
	if BaseSale("s1") != "s1" {
		t.Fatal("BaseSale of a sale")
	}
}

func TestShardOfIsStableAndSpreadsUsers(t *testing.T) {
	const k = 8
	counts := make([]int, k)
	for i := range 8000 {
		u := "user-" + strconv.Itoa(i)
		s := ShardOf(u, k)
		if s != ShardOf(u, k) || s < 0 || s >= k {
			t.Fatalf("ShardOf(%q) = %d, unstable or out of range", u, s)
		}
		counts[s]++
	}
	for i, n := range counts {
		if n < 800 || n > 1200 { // 1000 expected
			t.Errorf("shard %d got %d of 8000 users: badly spread %v", i, n, counts)
		}
	}
	if ShardOf("anyone", 1) != 0 {
		t.Fatal("k=1 must be shard 0")
	}
}

func TestSplitStockIsEvenWithTheRemainderFirst(t *testing.T) {
	got := SplitStock(10, 4)
	want := []int{3, 3, 2, 2}
	sum := 0
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("SplitStock(10, 4) = %v, want %v", got, want)
		}
		sum += got[i]
	}
	if sum != 10 {
		t.Fatal("units lost")
	}
	if got := SplitStock(2, 4); got[0] != 1 || got[1] != 1 || got[2] != 0 || got[3] != 0 {
		t.Fatalf("SplitStock(2, 4) = %v", got)
	}
}

// FuzzSplitShardID: events from Redis carry shard ids; whatever they hold, a shard id that
// parses is exactly one ShardID builds, and never a sale id.
func FuzzSplitShardID(f *testing.F) {
	for _, s := range []string{"s1:0", "s1:63", "s1:64", "s1:01", "s1", ":", "a:b:c", "s1:-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		sale, n, ok := SplitShardID(id)
		if !ok {
			return
		}
		if ShardID(sale, n) != id || ValidID(id) || !ValidID(sale) || n < 0 || n >= MaxShards || BaseSale(id) != sale {
			t.Fatalf("SplitShardID(%q) = %q %d", id, sale, n)
		}
	})
}
