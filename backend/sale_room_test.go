package backend

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A sale created with a room gets its room at preheat; a second preheat keeps the seed, and
// the status shows the commitment. A room with shards is refused, as is a bad room.
func TestAdminAPISaleWithARoomIsPreheatedWithItsSeedCommitmentOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, srv := e.servers(false)
	sale := testenv.ID("room")
	t.Cleanup(func() {
		e.rdb.Del(context.Background(), contract.MetaKey(sale), roomKey(sale))
		e.rdb.Del(context.Background(), lockRedisKeys(saleLockKey(sale))...)
		e.rdb.SRem(context.Background(), contract.SalesIndexKey, sale)
	})
	starts := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	ends := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	body := func(id, extra string) string {
		return `{"id":"` + id + `","stock":3,"starts_at":"` + starts + `","ends_at":"` + ends + `"` + extra + `}`
	}
	var ref contract.Refusal
	for name, extra := range map[string]string{
		"room with shards": `,"shards":2,"room":{"rate":5}`,
		"bad rate":         `,"room":{"rate":0}`,
		"bad difficulty":   `,"room":{"difficulty":[9,3]}`,
		"unknown field":    `,"room":{"speed":3}`,
	} {
		if code := doJSON(t, "POST", srv.URL+"/admin/sales", adminAuth, body(testenv.ID("bad"), extra), &ref); code != 400 || ref.Code != contract.CodeBadRequest {
			t.Fatalf("%s: %d %+v", name, code, ref)
		}
	}
	var st SaleStatus
	if code := doJSON(t, "POST", srv.URL+"/admin/sales", adminAuth, body(sale, `,"room":{"rate":5,"session":"90s","difficulty":[0,0]}`), &st); code != 201 || st.Room == nil || *st.Room.Rate != 5 || st.SeedCommitment != "" {
		t.Fatalf("create: %d %+v", code, st)
	}
	var pre PreheatResult
	if code := doJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/preheat", adminAuth, "", &pre); code != 200 || pre.Room == nil || !pre.Room.Created {
		t.Fatalf("preheat: %d %+v", code, pre)
	}
	commitment := pre.Room.SeedCommitment
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(commitment) {
		t.Fatalf("commitment %q", commitment)
	}
	seed := e.rdb.HGet(ctx, roomKey(sale), "seed").Val()
	if seed == "" || e.rdb.HGet(ctx, roomKey(sale), "rate").Val() != "5" {
		t.Fatalf("room hash: %v", e.rdb.HGetAll(ctx, roomKey(sale)).Val())
	}
	if code := doJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/preheat", adminAuth, "", &pre); code != 200 || pre.Room == nil || pre.Room.Created || pre.Room.SeedCommitment != commitment {
		t.Fatalf("second preheat: %d %+v", code, pre)
	}
	if got := e.rdb.HGet(ctx, roomKey(sale), "seed").Val(); got != seed {
		t.Fatal("a second preheat drew a new seed")
	}
	if code := doJSON(t, "GET", srv.URL+"/admin/sales/"+sale, adminAuth, "", &st); code != 200 || st.SeedCommitment != commitment || st.Room == nil {
		t.Fatalf("status: %d %+v", code, st)
	}

	plain := e.sale(2) // no room: no room hash, nothing in the status
	st = SaleStatus{}
	if code := doJSON(t, "GET", srv.URL+"/admin/sales/"+plain, adminAuth, "", &st); code != 200 || st.Room != nil || st.SeedCommitment != "" {
		t.Fatalf("status without a room: %d %+v", code, st)
	}
	if n := e.rdb.Exists(ctx, roomKey(plain)).Val(); n != 0 {
		t.Fatal("preheat gave a sale without a room a room")
	}
}
