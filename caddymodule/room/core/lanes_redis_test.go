//go:build integration

package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// newLaneRoom preheats a sale with a room of lanes (room_setup.lua's ARGV[13]) as the
// backend does.
func newLaneRoom(tb testing.TB, rdb redis.UniversalClient, stock int, startsIn time.Duration, lanes string) coreRoom {
	tb.Helper()
	ctx := context.Background()
	sale := testenv.ID("l")
	now := time.Now()
	pre := lua.PreheatCall{Sale: sale, Stock: int64(stock), Starts: now.Add(startsIn), Ends: now.Add(time.Hour), Retention: time.Hour, Room: true}
	seed, ekey := make([]byte, 32), make([]byte, 32)
	_, _ = rand.Read(seed)
	_, _ = rand.Read(ekey)
	sum := sha256.Sum256(seed)
	if err := lua.RoomSetup.Run(ctx, rdb, []string{contract.MetaKey(sale), contract.RoomKey(sale)},
		hex.EncodeToString(seed), hex.EncodeToString(ekey), "", "", "", "", "", "", hex.EncodeToString(sum[:]), "",
		pre.Ends.Add(pre.Retention).UnixMilli(), pre.Stock, lanes).Err(); err != nil {
		tb.Fatalf("room_setup: %v", err)
	}
	if _, _, err := pre.Run(ctx, rdb); err != nil {
		tb.Fatalf("preheat: %v", err)
	}
	tb.Cleanup(func() {
		keys := []string{contract.MetaKey(sale), contract.BuyersKey(sale), contract.TokensKey(sale), contract.RoomKey(sale),
			contract.RoomQueueKey(sale), contract.RoomLiveKey(sale), contract.RoomSpentKey(sale), contract.RoomSeenKey(sale), contract.RoomAwayKey(sale), contract.RoomBackKey(sale), contract.RoomClaimKey(sale), contract.RoomIdleKey(sale),
			contract.RoomLogKey(sale), contract.RoomKeysKey(sale)}
		_, ls := ParseLanes(lanes)
		keys = append(keys, laneKeys(sale, ls)...)
		rdb.Del(context.Background(), keys...)
	})
	return coreRoom{Sale: sale}
}

const testLanes = "share,members:claim:0.5:member,invited:invitation:0.2:,public:public:0.3:"

type laneVisitor struct {
	t     testing.TB
	store RedisStore
	sale  string
	room  SaleRoom
}

func newLaneVisitor(t testing.TB, rdb redis.UniversalClient, r coreRoom, rate float64) *laneVisitor {
	store := RedisStore{Client: rdb, Defaults: Settings{Rate: rate, Oversubscribe: 1, Session: 10 * time.Minute, Prequeue: time.Hour}}
	room, ok, err := store.Room(context.Background(), r.Sale)
	if err != nil || !ok {
		t.Fatalf("room: %v %v", ok, err)
	}
	if len(room.Lanes) != 3 {
		t.Fatalf("the room's lanes: %+v, want 3", room.Lanes)
	}
	return &laneVisitor{t: t, store: store, sale: r.Sale, room: room}
}

func (v *laneVisitor) enter(user, lane, code string) (Reply, error) {
	vis := Visit{Enter: true, Member: PlaceOf(v.room.EntryKey, v.room.Seed, v.sale, user).Member(user), Settings: v.room.Settings, Lane: lane}
	if code != "" {
		vis.CodeHash = CodeHash(code)
	}
	return v.store.Visit(context.Background(), v.sale, vis)
}

// A shared invitation code stops at its cap across any number of concurrent entries: the
// use is spent inside the entry's script. 64 users race one code capped at 5 uses: exactly 5
// get a place in the invitation lane, the others invitation_exhausted, and the uses hash
// says 5. An unknown code is refused without a place; a placed user entering again with the
// code keeps his place and spends nothing.
func TestAnInvitationCodeStopsAtItsCapAcrossConcurrentEntries(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	r := newLaneRoom(t, rdb, 100, time.Minute, testLanes)
	v := newLaneVisitor(t, rdb, r, 10)
	const code, capUses, racers = "ABCD-EFGH-IJKL-MNOP", 5, 64
	if err := rdb.HSet(ctx, contract.RoomCodesKey(r.Sale), CodeHash(code), capUses).Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[Outcome]int{}
	var placed []string
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			u := fmt.Sprintf("racer%02d", i)
			rep, err := v.enter(u, "invited", code)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				outcomes["error: "+Outcome(err.Error())]++
				return
			}
			outcomes[rep.Outcome]++
			if rep.Outcome == Waiting {
				placed = append(placed, u)
			}
		}()
	}
	close(start)
	wg.Wait()
	if outcomes[Waiting] != capUses || outcomes[InvitationExhausted] != racers-capUses || len(outcomes) != 2 {
		t.Fatalf("outcomes %v, want %d waiting and %d invitation_exhausted", outcomes, capUses, racers-capUses)
	}
	used, _ := rdb.HGet(ctx, contract.RoomCodesUsedKey(r.Sale), CodeHash(code)).Int()
	inLane, _ := rdb.ZCard(ctx, contract.RoomLaneQueueKey(r.Sale, "invited")).Result()
	entries, _ := rdb.HGet(ctx, contract.RoomKey(r.Sale), "lane:invited:entries").Int()
	if used != capUses || inLane != capUses || entries != capUses {
		t.Fatalf("uses %d, places in the lane %d, lane entries %d, want %d each", used, inLane, entries, capUses)
	}
	if rep, err := v.enter(placed[0], "invited", code); err != nil || rep.Outcome != Waiting {
		t.Fatalf("a placed user entering again: %v %v, want waiting", rep.Outcome, err)
	}
	if rep, err := v.enter("stranger", "invited", "NOPE-NOPE-NOPE-NOPE"); err != nil || rep.Outcome != InvitationUnknown {
		t.Fatalf("an unknown code: %v %v, want invitation_unknown", rep.Outcome, err)
	}
	if used, _ := rdb.HGet(ctx, contract.RoomCodesUsedKey(r.Sale), CodeHash(code)).Int(); used != capUses {
		t.Fatalf("uses after the re-entry: %d, want %d", used, capUses)
	}
	if n, _ := rdb.ZCard(ctx, contract.RoomQueueKey(r.Sale)).Result(); n != 0 {
		t.Fatalf("the public queue holds %d places, want 0 (refused entries take none)", n)
	}
}

// fill enters n users into each lane (no admission step runs: Admit false on enter).
func (v *laneVisitor) fill(n int, codes string) map[string][]string {
	users := map[string][]string{}
	for _, lane := range []string{"members", "invited", "public"} {
		for i := range n {
			u := fmt.Sprintf("%s%03d", lane, i)
			code := ""
			if lane == "invited" {
				code = codes
			}
			rep, err := v.enter(u, lane, code)
			if err != nil || rep.Outcome != Waiting {
				v.t.Fatalf("%s enters %s: %v %v", u, lane, rep.Outcome, err)
			}
			users[lane] = append(users[lane], u)
		}
	}
	return users
}

// admittedByLane reads the room's log: each lane's admissions in order.
func admittedByLane(t testing.TB, rdb redis.UniversalClient, sale string, lanes map[string][]string) map[string][]string {
	t.Helper()
	laneOf := map[string]string{}
	for l, us := range lanes {
		for _, u := range us {
			laneOf[u] = l
		}
	}
	log, err := rdb.LRange(context.Background(), contract.RoomLogKey(sale), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range log {
		if p := strings.SplitN(e, ":", 4); p[0] == "a" {
			out[laneOf[p[3]]] = append(out[laneOf[p[3]]], p[3])
		}
	}
	return out
}

// tickUntil runs admission steps (ticks, as gateways do) until done says so.
func (v *laneVisitor) tickUntil(what string, done func() bool) {
	testenv.WaitFor(v.t, 60*time.Second, what, func() bool {
		if _, err := v.store.Visit(context.Background(), v.sale, Visit{Tick: true, Admit: true, Settings: v.room.Settings}); err != nil {
			v.t.Fatal(err)
		}
		return done()
	})
}

// With every lane full, the admission steps split the admissions by the lanes' shares
// (within 5 % of each share, the credit keeps the split exact to about one admission per
// lane), and each lane admits in its queue's order. Once the invitation lane has nobody
// left, its share passes to the others: the admissions go on at the room's rate.
func TestLanesAdmitByShareInEachLanesOrderAndPassAnIdleShareOn(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	r := newLaneRoom(t, rdb, 100_000, -time.Second, testLanes)
	v := newLaneVisitor(t, rdb, r, 100)
	if err := rdb.HSet(ctx, contract.RoomCodesKey(r.Sale), CodeHash("SHARED"), 1000).Err(); err != nil {
		t.Fatal(err)
	}
	lanes := v.fill(200, "SHARED")
	count := func(l string) int64 {
		n, _ := rdb.HGet(ctx, contract.RoomKey(r.Sale), "lane:"+l+":admitted").Int64()
		return n
	}
	total := func() int64 { return count("members") + count("invited") + count("public") }
	v.tickUntil("200 admissions", func() bool { return total() >= 200 })
	got := map[string]int64{"members": count("members"), "invited": count("invited"), "public": count("public")}
	sum := got["members"] + got["invited"] + got["public"]
	t.Logf("admissions by lane: %v of %d", got, sum)
	for l, share := range map[string]float64{"members": 0.5, "invited": 0.2, "public": 0.3} {
		if f := float64(got[l]) / float64(sum); math.Abs(f-share) > 0.05*share {
			t.Errorf("lane %s: %d of %d admissions (%.3f), want %.2f within 5 %%", l, got[l], sum, f, share)
		}
	}
	byLane := admittedByLane(t, rdb, r.Sale, lanes)
	for l, us := range byLane {
		for i, u := range us {
			if u != lanes[l][i] {
				t.Fatalf("lane %s's admission %d is %s, want %s (the lane's order)", l, i, u, lanes[l][i])
			}
		}
	}
	// The invitation lane runs dry; the others take its share and the room admits everyone.
	v.tickUntil("every waiter admitted", func() bool { return total() >= 600 })
	if got := count("invited"); got != 200 {
		t.Fatalf("invited admitted %d, want 200", got)
	}
	if n, _ := rdb.HGet(ctx, contract.RoomKey(r.Sale), "admitted").Int64(); n != 600 {
		t.Fatalf("the room admitted %d, want 600 (the lanes' sum)", n)
	}
}

// Mode priority: a lane admits only while the lanes before it have nobody to admit.
func TestLanesInPriorityModeAdmitTheFirstLaneFirst(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	r := newLaneRoom(t, rdb, 100_000, -time.Second, "priority,members:claim::member,invited:invitation::,public:public::")
	v := newLaneVisitor(t, rdb, r, 200)
	if err := rdb.HSet(ctx, contract.RoomCodesKey(r.Sale), CodeHash("SHARED"), 1000).Err(); err != nil {
		t.Fatal(err)
	}
	lanes := v.fill(50, "SHARED")
	v.tickUntil("150 admissions", func() bool {
		n, _ := rdb.HGet(ctx, contract.RoomKey(r.Sale), "admitted").Int64()
		return n >= 150
	})
	log, _ := rdb.LRange(ctx, contract.RoomLogKey(r.Sale), 0, -1).Result()
	var order []string
	for _, e := range log {
		if p := strings.SplitN(e, ":", 4); p[0] == "a" {
			order = append(order, p[3])
		}
	}
	want := append(append(append([]string{}, lanes["members"]...), lanes["invited"]...), lanes["public"]...)
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("admission %d is %s, want %s: members, then invited, then public", i, order[i], want[i])
		}
	}
}
