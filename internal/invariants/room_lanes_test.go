//go:build integration

package invariants_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// laneRoom is a room with two lanes (members by a claim, the public) driven by the real
// scripts in real Redis: four users pre-queued in each lane, stock 3, oversubscribe 1.5; the
// start's admission step admits four, two from each lane (shares of a half).
type laneRoom struct {
	t      *testing.T
	rdb    redis.UniversalClient
	sale   string
	lanes  map[string][]string // lane -> its users, in entry order
	laneOf map[string]string
}

const laneRoomLanes = "share,members:claim:0.5:member,public:public:0.5:"

func (r *laneRoom) keys() []string {
	s := r.sale
	room := contract.RoomKey(s)
	members := contract.RoomLaneQueueKey(s, "members")
	return []string{contract.MetaKey(s), room, contract.RoomQueueKey(s), contract.RoomLiveKey(s), contract.RoomSpentKey(s),
		contract.BuyersKey(s), contract.RoomLogKey(s), contract.RoomSeenKey(s), contract.RoomAwayKey(s), contract.RoomBackKey(s),
		contract.TokensKey(s), contract.RoomClaimKey(s), contract.RoomIdleKey(s), contract.RoomKeysKey(s), contract.RoomFlaggedKey(s),
		contract.RoomCodesKey(s), contract.RoomCodesUsedKey(s),
		members, members + ":away", members + ":back",
		contract.RoomQueueKey(s), contract.RoomAwayKey(s), contract.RoomBackKey(s)}
}

// visit runs room_queue.lua as the gateway's room does: enter into lane (no admission step),
// or tick (the admission step).
func (r *laneRoom) visit(op, member, lane string) []any {
	r.t.Helper()
	admit := "0"
	if op == "tick" {
		admit = "1"
	}
	args := []any{op, member, "1000", "1.5", 600000, 3600000, "", 0, "", "", admit, "", "", ""}
	if op == "enter" {
		args = append(args, "", "", lane, "")
	}
	res, err := lua.RoomQueue.Run(context.Background(), r.rdb, r.keys(), args...).Slice()
	if err != nil {
		r.t.Fatalf("room_queue %s: %v", op, err)
	}
	return res
}

func newLaneRoom(t *testing.T) *laneRoom {
	t.Helper()
	ctx := context.Background()
	r := &laneRoom{t: t, rdb: testenv.Redis(t), sale: testenv.ID("vl"), lanes: map[string][]string{}, laneOf: map[string]string{}}
	tm, err := r.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	meta := contract.MetaKey(r.sale)
	r.rdb.HSet(ctx, meta, contract.FieldStock, 3, contract.FieldState, "open",
		"starts_ms", tm.Add(time.Hour).UnixMilli(), "ends_ms", tm.Add(2*time.Hour).UnixMilli())
	t.Cleanup(func() {
		keys, _ := r.rdb.Keys(context.Background(), "seckill:"+contract.SaleTag(r.sale)+"*").Result()
		if len(keys) > 0 {
			r.rdb.Del(context.Background(), keys...)
		}
	})
	seed, ekey := make([]byte, 32), make([]byte, 32)
	_, _ = rand.Read(seed)
	_, _ = rand.Read(ekey)
	sum := sha256.Sum256(seed)
	if err := lua.RoomSetup.Run(ctx, r.rdb, []string{meta, contract.RoomKey(r.sale)}, hex.EncodeToString(seed), hex.EncodeToString(ekey),
		"1000", "1.5", "600000", "3600000", "0", "0", hex.EncodeToString(sum[:]), "", tm.Add(3*time.Hour).UnixMilli(), 3, laneRoomLanes).Err(); err != nil {
		t.Fatal(err)
	}
	w := &roomWorld{world: &world{sale: r.sale}}
	for _, lane := range []string{"members", "public"} {
		for i := range 4 {
			u := fmt.Sprintf("%s%d", lane, i)
			r.lanes[lane], r.laneOf[u] = append(r.lanes[lane], u), lane
			if res := r.visit("enter", w.member(seed, ekey, u), lane); res[0] != "waiting" {
				t.Fatalf("%s enters the pre-queue: %v", u, res)
			}
		}
	}
	// The start: ten seconds ago, so the allowance is full and the oversubscription decides.
	r.rdb.HSet(ctx, meta, "starts_ms", tm.Add(-10*time.Second).UnixMilli())
	if res := r.visit("tick", "", ""); res[0] != "open" {
		t.Fatalf("the admission step: %v", res)
	}
	got := map[string]int{}
	for _, e := range r.log() {
		if strings.HasPrefix(e, "a:") {
			got[r.laneOf[e[strings.LastIndexByte(e, ':')+1:]]]++
		}
	}
	if got["members"] != 2 || got["public"] != 2 {
		t.Fatalf("admissions by lane %v, want 2 in each (4 = 3 x 1.5, half each)", got)
	}
	return r
}

func (r *laneRoom) log() []string {
	r.t.Helper()
	l, err := r.rdb.LRange(context.Background(), contract.RoomLogKey(r.sale), 0, -1).Result()
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

// admissionsOf are the log's indexes of the admissions of lane's users, in log order.
func (r *laneRoom) admissionsOf(lane string) []int64 {
	var out []int64
	for i, e := range r.log() {
		if strings.HasPrefix(e, "a:") && r.laneOf[e[strings.LastIndexByte(e, ':')+1:]] == lane {
			out = append(out, int64(i))
		}
	}
	return out
}

func (r *laneRoom) swap(i, j int64) {
	ctx := context.Background()
	l := r.log()
	r.rdb.LSet(ctx, contract.RoomLogKey(r.sale), i, l[j])
	r.rdb.LSet(ctx, contract.RoomLogKey(r.sale), j, l[i])
}

func (r *laneRoom) checks() map[int]invariants.Check {
	r.t.Helper()
	cs, err := invariants.Room(context.Background(), r.rdb, r.sale, nil, invariants.RoomOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[int]invariants.Check{}
	for _, c := range cs {
		out[c.N] = c
	}
	return out
}

// The room invariants read every lane: a room with lanes driven by the real scripts passes
// invariant 6 (each lane admitted in its own order) and 9 (each lane's cursor and counter
// against its part of the log); the lanes' interleaving is free, so a swap of two admissions
// of different lanes still passes; but two admissions of one lane swapped, a lane's place
// with a forged rank, a lane's cursor or admitted counter the log does not bear out fail.
func TestTheRoomInvariantsCheckEachLaneOfARoomWithLanes(t *testing.T) {
	r := newLaneRoom(t)
	good := r.checks()
	for _, n := range []int{6, 9} {
		if good[n].Verdict != invariants.Pass {
			t.Fatalf("invariant %d on a room with lanes: %s %v", n, good[n].Detail, good[n].Problems)
		}
	}
	if good[6].Numbers["lanes"] != 2 || good[6].Numbers["admissions"] != 4 || good[6].Numbers["prequeue"] != 8 {
		t.Fatalf("invariant 6 read %v, want 2 lanes, 8 pre-queue places and 4 admissions", good[6].Numbers)
	}

	ctx := context.Background()
	cases := []struct {
		name    string
		n       int
		verdict invariants.Verdict
		corrupt func(r *laneRoom)
	}{
		{"two neighbouring admissions of different lanes swapped: each lane's order holds", 6, invariants.Pass, func(r *laneRoom) {
			lane := func(e string) string { return r.laneOf[e[strings.LastIndexByte(e, ':')+1:]] }
			l := r.log()
			for i := 0; i+1 < len(l); i++ {
				if strings.HasPrefix(l[i], "a:") && strings.HasPrefix(l[i+1], "a:") && lane(l[i]) != lane(l[i+1]) {
					r.swap(int64(i), int64(i+1))
					return
				}
			}
			r.t.Fatalf("no two neighbouring admissions of different lanes in %v", l)
		}},
		{"two admissions of the members lane swapped", 6, invariants.Fail, func(r *laneRoom) {
			m := r.admissionsOf("members")
			r.swap(m[0], m[1])
		}},
		{"two admissions of the public lane swapped", 6, invariants.Fail, func(r *laneRoom) {
			p := r.admissionsOf("public")
			r.swap(p[0], p[1])
		}},
		{"a members place whose rank is not the seed's HMAC", 6, invariants.Fail, func(r *laneRoom) {
			r.rdb.ZAdd(ctx, contract.RoomLaneQueueKey(r.sale, "members"), redisZ(0, strings.Repeat("\x00", 48)+"forged"))
		}},
		{"an admission of a user who holds no place in any lane", 6, invariants.Fail, func(r *laneRoom) {
			e := r.log()[r.admissionsOf("members")[1]]
			r.rdb.LSet(ctx, contract.RoomLogKey(r.sale), r.admissionsOf("members")[1], e[:strings.LastIndexByte(e, ':')+1]+"stranger")
		}},
		{"the members lane's cursor ahead of its log", 9, invariants.Fail, func(r *laneRoom) {
			r.rdb.HIncrBy(ctx, contract.RoomKey(r.sale), "lane:members:cursor", 1)
		}},
		{"the public lane's admitted counter ahead of its log", 9, invariants.Fail, func(r *laneRoom) {
			r.rdb.HIncrBy(ctx, contract.RoomKey(r.sale), "lane:public:admitted", 1)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newLaneRoom(t)
			tc.corrupt(r)
			got := r.checks()[tc.n]
			if got.Verdict != tc.verdict {
				t.Fatalf("invariant %d: %s, want %s: %s %v", tc.n, got.Verdict, tc.verdict, got.Detail, got.Problems)
			}
			if tc.verdict == invariants.Fail && len(got.Problems) == 0 {
				t.Errorf("invariant %d failed without naming what is wrong", tc.n)
			}
		})
	}
}
