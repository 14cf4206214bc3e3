//go:build integration

package sales

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

func TestPreheatRoomDrawsTheSeedOnceAndPublishesOnlyItsCommitment(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now()
	t.Cleanup(func() { rdb.Del(context.Background(), contract.MetaKey(sale), contract.RoomKey(sale)) })
	if _, err := PreheatRoom(ctx, rdb, sale, admin.RoomSpec{}, time.Time{}, 0); err == nil {
		t.Fatal("a room for a sale that is not preheated")
	}
	if err := lua.Preheat.Run(ctx, rdb, []string{contract.MetaKey(sale)}, sale, 10,
		now.Add(time.Hour).UnixMilli(), now.Add(2*time.Hour).UnixMilli(), "init", 60_000).Err(); err != nil {
		t.Fatal(err)
	}
	rate := 20.0
	first, err := PreheatRoom(ctx, rdb, sale, admin.RoomSpec{Rate: &rate, Difficulty: &admin.Difficulty{8, 12}}, time.Time{}, 0)
	if err != nil || !first.Created {
		t.Fatalf("first room preheat: %+v %v", first, err)
	}
	seed, _ := hex.DecodeString(rdb.HGet(ctx, contract.RoomKey(sale), "seed").Val())
	if sum := sha256.Sum256(seed); hex.EncodeToString(sum[:]) != first.SeedCommitment || len(seed) != 32 {
		t.Fatal("the commitment is not the SHA-256 of the 32-byte seed")
	}
	again, err := PreheatRoom(ctx, rdb, sale, admin.RoomSpec{}, time.Time{}, 0)
	if err != nil || again.Created || again.SeedCommitment != first.SeedCommitment {
		t.Fatalf("a second preheat changed the seed: %+v %v", again, err)
	}
	if rdb.HExists(ctx, contract.RoomKey(sale), "rate").Val() {
		t.Fatal("a setting the sale no longer sets stays in Redis")
	}
	if ttl := rdb.PTTL(ctx, contract.RoomKey(sale)).Val(); ttl <= 0 {
		t.Fatal("the room hash has no TTL")
	}
}
