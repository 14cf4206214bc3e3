package room

import (
	"context"
	"testing"
	"time"

	"github.com/seckilledge/seckill/internal/testenv"
)

func TestCheckAdmissionSeesLiveAdmissionsOnlyAndLeavesSalesWithoutARoomAlone(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "1000"})
	store := RedisStore{Client: rdb, Defaults: Settings{Rate: 100, Oversubscribe: 1, Session: time.Second}}
	room, ok, err := store.Room(ctx, r.Sale)
	if err != nil || !ok {
		t.Fatalf("room: %v %v", ok, err)
	}
	visit := func(user string) Reply {
		rep, err := store.Visit(ctx, r.Sale, Visit{Enter: true, Member: PlaceOf(room.EntryKey, room.Seed, r.Sale, user).Member(user), Settings: room.Settings})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := visit("alice"); rep.Outcome != Admitted {
		t.Fatalf("alice: %s, want admitted", rep.Outcome)
	}
	if rep := visit("bob"); rep.Outcome != Waiting {
		t.Fatalf("bob: %s, want waiting (one unit, oversubscribe 1)", rep.Outcome)
	}
	check := func(user string) (bool, bool) {
		adm, has, _, err := CheckAdmission(ctx, rdb, r.Sale, user)
		if err != nil {
			t.Fatal(err)
		}
		return adm, has
	}
	if adm, has := check("alice"); !adm || !has {
		t.Fatal("alice's live admission not seen")
	}
	if adm, has := check("bob"); adm || !has {
		t.Fatal("bob, waiting, passes the admission check")
	}
	if adm, has := check("nobody"); adm || !has {
		t.Fatal("a user who never entered passes the admission check")
	}
	testenv.WaitFor(t, 5*time.Second, "alice's admission to lapse", func() bool {
		adm, _ := check("alice")
		return !adm
	})
	if adm, has, _, err := CheckAdmission(ctx, rdb, testenv.ID("noroom"), "alice"); err != nil || adm || has {
		t.Fatalf("a sale without a room: admitted %v, has room %v, %v", adm, has, err)
	}
}
