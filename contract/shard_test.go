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

// Pinned values: every gateway, token issuer and backend of a live sharded sale must agree on
// a user's shard, across versions (a rolling upgrade runs old and new side by side). Changing
// ShardOf breaks every sale in flight, so these numbers must never change. They were computed
// independently of this package: FNV-1a 32-bit (offset basis 0x811c9dc5, prime 0x01000193) of
// the user id's bytes, mod k; "a" -> 0xe40c292c is the published FNV-1a test vector.
func TestShardOfIsPinnedToFNV1aOfTheUserID(t *testing.T) {
	for _, c := range []struct {
		user            string
		k2, k3, k8, k64 int
	}{
		{"u1", 1, 0, 3, 51},       // 0x0442a7f3
		{"user-0", 1, 0, 7, 7},    // 0xf6537b07
		{"user-42", 1, 0, 3, 43},  // 0x026073ab
		{"alice", 1, 2, 7, 39},    // 0x872213e7
		{"0190a0b0", 0, 2, 0, 24}, // 0xdc67d758
		{"a", 0, 1, 4, 44},        // 0xe40c292c
		{"", 1, 1, 5, 5},          // 0x811c9dc5, the offset basis
	} {
		for k, want := range map[int]int{2: c.k2, 3: c.k3, 8: c.k8, 64: c.k64} {
			if got := ShardOf(c.user, k); got != want {
				t.Errorf("ShardOf(%q, %d) = %d, want %d: the shard hash changed, which breaks live sharded sales", c.user, k, got, want)
			}
		}
	}
	if got := UserShardID("s1", "alice", 8); got != "s1:7" {
		t.Errorf("UserShardID(s1, alice, 8) = %q, want s1:7", got)
	}
}
