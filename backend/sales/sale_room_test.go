//go:build integration

package sales_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A sale created with a room gets its room at preheat; a second preheat keeps the seed, and
// the status shows the commitment. A room with shards is refused, as is a bad room.
func TestAdminAPISaleWithARoomIsPreheatedWithItsSeedCommitmentOnce(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	_, srv := e.Servers(false)
	sale := testenv.ID("room")
	t.Cleanup(func() {
		e.Redis.Del(context.Background(), contract.MetaKey(sale), contract.RoomKey(sale))
		e.Redis.Del(context.Background(), servicetest.LockRedisKeys(lock.SaleKey(sale))...)
		e.Redis.SRem(context.Background(), contract.SalesIndexKey, sale)
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
		if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", servicetest.AdminAuth, body(testenv.ID("bad"), extra), &ref); code != 400 || ref.Code != contract.CodeBadRequest {
			t.Fatalf("%s: %d %+v", name, code, ref)
		}
	}
	var st admin.SaleStatus
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", servicetest.AdminAuth, body(sale, `,"room":{"rate":5,"session":"90s","difficulty":[0,0]}`), &st); code != 201 || st.Room == nil || *st.Room.Rate != 5 || st.SeedCommitment != "" {
		t.Fatalf("create: %d %+v", code, st)
	}
	var pre admin.PreheatResult
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/preheat", servicetest.AdminAuth, "", &pre); code != 200 || pre.Room == nil || !pre.Room.Created {
		t.Fatalf("preheat: %d %+v", code, pre)
	}
	commitment := pre.Room.SeedCommitment
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(commitment) {
		t.Fatalf("commitment %q", commitment)
	}
	seed := e.Redis.HGet(ctx, contract.RoomKey(sale), "seed").Val()
	if seed == "" || e.Redis.HGet(ctx, contract.RoomKey(sale), "rate").Val() != "5" {
		t.Fatalf("room hash: %v", e.Redis.HGetAll(ctx, contract.RoomKey(sale)).Val())
	}
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/preheat", servicetest.AdminAuth, "", &pre); code != 200 || pre.Room == nil || pre.Room.Created || pre.Room.SeedCommitment != commitment {
		t.Fatalf("second preheat: %d %+v", code, pre)
	}
	if got := e.Redis.HGet(ctx, contract.RoomKey(sale), "seed").Val(); got != seed {
		t.Fatal("a second preheat drew a new seed")
	}
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/sales/"+sale, servicetest.AdminAuth, "", &st); code != 200 || st.SeedCommitment != commitment || st.Room == nil {
		t.Fatalf("status: %d %+v", code, st)
	}

	plain := e.Sale(2) // no room: no room hash, nothing in the status
	st = admin.SaleStatus{}
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/sales/"+plain, servicetest.AdminAuth, "", &st); code != 200 || st.Room != nil || st.SeedCommitment != "" {
		t.Fatalf("status without a room: %d %+v", code, st)
	}
	if n := e.Redis.Exists(ctx, contract.RoomKey(plain)).Val(); n != 0 {
		t.Fatal("preheat gave a sale without a room a room")
	}
}

// A room is checked at creation with room_setup.lua's own bounds, so a sale the API accepts
// is one preheat can give its room; and a room that cannot be set up all the same (a sale
// stored before these bounds) keeps the whole sale out of Redis: preheat fails and nothing is
// on sale, instead of a sale on sale with no room and no proof of work.
func TestARoomThatCannotBeSetUpLeavesTheSaleClosed(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	_, srv := e.Servers(false)
	starts := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	ends := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	body := func(id, room string) string {
		return `{"id":"` + id + `","stock":3,"starts_at":"` + starts + `","ends_at":"` + ends + `","room":` + room + `}`
	}
	for field, room := range map[string]string{
		"room.rate":          `{"rate":0.0001}`,
		"room.oversubscribe": `{"oversubscribe":0.5}`,
		"room.session":       `{"session":"999ms"}`,
		"room.prequeue":      `{"prequeue":"-1s"}`,
		"room.difficulty":    `{"difficulty":[0,41]}`,
	} {
		var ref contract.Refusal
		if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", servicetest.AdminAuth, body(testenv.ID("bad"), room), &ref); code != 400 ||
			ref.Code != contract.CodeBadRequest || !strings.Contains(ref.Message, field) {
			t.Errorf("%s: %d %+v, want 400 bad_request naming %s", room, code, ref, field)
		}
	}

	sale := testenv.ID("room")
	t.Cleanup(func() {
		e.Redis.Del(context.Background(), contract.MetaKey(sale), contract.RoomKey(sale))
		e.Redis.Del(context.Background(), servicetest.LockRedisKeys(lock.SaleKey(sale))...)
		e.Redis.SRem(context.Background(), contract.SalesIndexKey, sale)
	})
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", servicetest.AdminAuth, body(sale, `{"rate":5}`), nil); code != 201 {
		t.Fatalf("create: %d", code)
	}
	// Stored as an older backend let it through.
	if _, err := e.Pool.Exec(ctx, `UPDATE sales SET room = '{"rate":0.0001}'::jsonb WHERE id = $1`, sale); err != nil {
		t.Fatal(err)
	}
	var ref contract.Refusal
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/preheat", servicetest.AdminAuth, "", &ref); code != 503 {
		t.Fatalf("preheat of a room that cannot be set up: %d %+v", code, ref)
	}
	if n := e.Redis.Exists(ctx, contract.MetaKey(sale), contract.RoomKey(sale)).Val(); n != 0 {
		t.Fatalf("a failed preheat left %d of the sale's keys in Redis: the sale is on sale without its room", n)
	}
	if e.Redis.SIsMember(ctx, contract.SalesIndexKey, sale).Val() {
		t.Fatal("a failed preheat indexed the sale")
	}

	if _, err := e.Pool.Exec(ctx, `UPDATE sales SET room = '{"rate":5}'::jsonb WHERE id = $1`, sale); err != nil {
		t.Fatal(err)
	}
	var pre admin.PreheatResult
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/preheat", servicetest.AdminAuth, "", &pre); code != 200 || pre.Room == nil {
		t.Fatalf("preheat once the room is good: %d %+v", code, pre)
	}
	if got := e.Redis.HGet(ctx, contract.MetaKey(sale), "room").Val(); got != "1" {
		t.Fatalf("the sale's meta does not say it has a room: %q", got)
	}
	if m, r := e.Redis.PExpireTime(ctx, contract.MetaKey(sale)).Val(), e.Redis.PExpireTime(ctx, contract.RoomKey(sale)).Val(); m <= 0 || r != m {
		t.Fatalf("room expires at %v, the sale at %v", r, m)
	}
}
