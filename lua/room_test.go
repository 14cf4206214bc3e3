//go:build integration

package lua

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// roomFixture is a preheated sale with a room, driven through the scripts alone.
type roomFixture struct {
	t    *testing.T
	rdb  *redis.Client
	sale string
	// rate, oversubscribe, session_ms, prequeue_ms as room_queue.lua takes them.
	rate, over, session, pre string
}

func roomKeys(sale string) []string {
	room := "seckill:" + contract.SaleTag(sale) + ":room"
	return []string{contract.MetaKey(sale), room, room + ":q", room + ":live", room + ":spent", contract.BuyersKey(sale)}
}

func newRoom(t *testing.T, stock int, startsIn, endsIn time.Duration) *roomFixture {
	t.Helper()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now()
	if err := Preheat.Run(ctx, rdb, []string{contract.MetaKey(sale)}, sale, stock,
		now.Add(startsIn).UnixMilli(), now.Add(endsIn).UnixMilli(), "init", 60_000).Err(); err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte(sale))
	commit := sha256.Sum256(seed[:])
	k := roomKeys(sale)
	res, err := RoomSetup.Run(ctx, rdb, k[:2], hex.EncodeToString(seed[:]), hex.EncodeToString(seed[:]),
		"", "", "", "", "", "", hex.EncodeToString(commit[:])).Slice()
	if err != nil || res[0].(int64) != 1 {
		t.Fatalf("room_setup = %v, %v", res, err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), k...) })
	return &roomFixture{t: t, rdb: rdb, sale: sale, rate: "1000", over: "1", session: "60000", pre: "3600000"}
}

// member builds a queue member by hand: the script never computes ranks, it only orders them.
func member(rank []byte, user string) string {
	return string(rank) + "0123456789abcdef" + user
}

func rankOf(user string) []byte { s := sha256.Sum256([]byte("rank" + user)); return s[:] }

func (f *roomFixture) call(op, m, nonce string, nonceExp int64) []any {
	f.t.Helper()
	res, err := RoomQueue.Run(context.Background(), f.rdb, roomKeys(f.sale), op, m,
		f.rate, f.over, f.session, f.pre, nonce, nonceExp).Slice()
	if err != nil {
		f.t.Fatalf("room_queue %s: %v", op, err)
	}
	return res
}

func TestRoomPrequeueIsAdmittedInRankOrderThenArrivalsInArrivalOrder(t *testing.T) {
	t.Parallel()
	// The start is far enough away for 40 entries however loaded the machine (at 300 ms a
	// race build under load let it pass mid-way, and the late entries were admitted); it is
	// brought to now once they are in.
	f := newRoom(t, 1000, 30*time.Minute, 2*time.Hour)
	var pre []string
	for i := range 40 {
		u := fmt.Sprintf("u%d", i)
		pre = append(pre, u)
		if got := f.call("enter", member(rankOf(u), u), "", 0); got[0] != "waiting" {
			t.Fatalf("pre-queue entry: %v", got)
		}
	}
	// Entering again changes nothing and answers the same.
	again := f.call("enter", member(rankOf("u0"), "u0"), "", 0)
	if again[0] != "waiting" || again[1].(int64) != 40 {
		t.Fatalf("re-entry before the start: %v, want waiting with the pre-queue's size 40", again)
	}
	if err := f.rdb.HSet(context.Background(), contract.MetaKey(f.sale), "starts_ms", time.Now().UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5*time.Second, "the start", func() bool {
		return f.call("poll", member(rankOf("u0"), "u0"), "", 0)[7].(int64) <= time.Now().UnixMilli()-50
	})
	var post []string
	for i := range 5 {
		u := fmt.Sprintf("late%d", i)
		post = append(post, u)
		f.call("enter", member(rankOf(u), u), "", 0)
	}
	sort.Slice(pre, func(i, j int) bool { return bytes.Compare(rankOf(pre[i]), rankOf(pre[j])) < 0 })
	want := append(pre, post...)
	got, err := f.rdb.ZRange(context.Background(), roomKeys(f.sale)[2], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range got {
		if m[48:] != want[i] {
			t.Fatalf("place %d is %s, want %s", i, m[48:], want[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d places, want %d", len(got), len(want))
	}
}

func TestRoomSpentNonceIsRefusedAndWritesNothing(t *testing.T) {
	t.Parallel()
	f := newRoom(t, 10, -time.Second, time.Hour)
	exp := time.Now().Add(time.Minute).UnixMilli()
	if got := f.call("enter", member(rankOf("a"), "a"), "nonce-1", exp); got[0] == "replayed" {
		t.Fatalf("first use refused: %v", got)
	}
	if got := f.call("enter", member(rankOf("b"), "b"), "nonce-1", exp); got[0] != "replayed" {
		t.Fatalf("replayed nonce: %v, want replayed", got)
	}
	if got := f.call("poll", member(rankOf("b"), "b"), "", 0); got[0] != "not_entered" {
		t.Fatalf("a refused entry holds a place: %v", got)
	}
}

func TestRoomAdmissionCheckSeesOnlyLiveAdmissions(t *testing.T) {
	t.Parallel()
	f := newRoom(t, 10, -time.Second, time.Hour)
	ctx := context.Background()
	k := roomKeys(f.sale)
	check := func(user string) string {
		res, err := RoomAdmissionCheck.Run(ctx, f.rdb, []string{k[1], k[3]}, user).Slice()
		if err != nil {
			t.Fatal(err)
		}
		return res[0].(string)
	}
	if got := check("a"); got != "not_admitted" {
		t.Fatalf("before entering: %s", got)
	}
	if got := f.call("enter", member(rankOf("a"), "a"), "", 0); got[0] != "admitted" {
		t.Fatalf("enter with room to spare: %v, want admitted", got)
	}
	if got := check("a"); got != "admitted" {
		t.Fatalf("after admission: %s", got)
	}
	f.rdb.ZAdd(ctx, k[3], redis.Z{Score: 1, Member: "a"}) // lapsed long ago
	if got := check("a"); got != "not_admitted" {
		t.Fatalf("lapsed admission: %s", got)
	}
	other := testenv.ID("s")
	res, err := RoomAdmissionCheck.Run(ctx, f.rdb, []string{roomKeys(other)[1], roomKeys(other)[3]}, "a").Slice()
	if err != nil || res[0] != "no_room" {
		t.Fatalf("sale without a room: %v %v", res, err)
	}
}

// Leaving gives a waiting place up: the waiters behind move up by one, the log records it for
// the verifier, leaving again is a no-op, an admitted place cannot leave (the cursor passed
// it), and entering again after the start is a new arrival at the back.
func TestRoomLeaveMovesTheWaitersBehindUpAndReentryIsANewPlace(t *testing.T) {
	t.Parallel()
	f := newRoom(t, 1, -time.Second, time.Hour)
	ctx := context.Background()
	logKey := contract.RoomLogKey(f.sale)
	t.Cleanup(func() { f.rdb.Del(context.Background(), logKey) })
	call := func(op, u string) []any {
		t.Helper()
		res, err := RoomQueue.Run(ctx, f.rdb, append(roomKeys(f.sale), logKey), op, member(rankOf(u), u),
			f.rate, f.over, f.session, f.pre, "", 0).Slice()
		if err != nil {
			t.Fatalf("room_queue %s %s: %v", op, u, err)
		}
		return res
	}
	// One unit, oversubscribe 1: a is admitted, b, c, d wait.
	for _, u := range []string{"a", "b", "c", "d"} {
		call("enter", u)
	}
	if got := call("poll", "d"); got[0] != "waiting" || got[1].(int64) != 3 {
		t.Fatalf("d before anyone leaves: %v, want waiting at 3", got)
	}
	if got := call("leave", "b"); got[0] != "left" || got[6].(int64) != 2 {
		t.Fatalf("b leaves: %v, want left with 2 waiting", got)
	}
	if got := call("poll", "d"); got[0] != "waiting" || got[1].(int64) != 2 {
		t.Fatalf("d after b left: %v, want waiting at 2", got)
	}
	if got := call("leave", "b"); got[0] != "left" {
		t.Fatalf("b leaves twice: %v, want left", got)
	}
	if got := call("poll", "b"); got[0] != "not_entered" {
		t.Fatalf("b polls after leaving: %v, want not_entered", got)
	}
	if got := call("leave", "a"); got[0] != "not_waiting" {
		t.Fatalf("the admitted a leaves: %v, want not_waiting", got)
	}
	if got := call("enter", "b"); got[0] != "waiting" || got[1].(int64) != 3 {
		t.Fatalf("b enters again: %v, want waiting at the back (3)", got)
	}
	lg, err := f.rdb.LRange(ctx, logKey, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var leaves []string
	for _, e := range lg {
		if e[0] == 'l' {
			leaves = append(leaves, e)
		}
	}
	if len(leaves) != 1 || !bytes.HasSuffix([]byte(leaves[0]), []byte(":1:b")) {
		t.Fatalf("the log's leaves: %q, want one l:<ms>:1:b", leaves)
	}
	if n, _ := f.rdb.HGet(ctx, roomKeys(f.sale)[1], "left").Int(); n != 1 {
		t.Fatalf("left counter %d, want 1", n)
	}
}

// A tick (a gateway's periodic look at the room) admits like a poll and returns the room's
// counters; it records the users the gateway answered from memory as present, and a poll
// records its own user.
func TestRoomTickAdmitsReturnsTheSummaryAndRecordsPresence(t *testing.T) {
	t.Parallel()
	f := newRoom(t, 2, -time.Second, time.Hour)
	ctx := context.Background()
	seen := roomKeys(f.sale)[1] + ":seen"
	logKey := contract.RoomLogKey(f.sale)
	t.Cleanup(func() { f.rdb.Del(context.Background(), seen, logKey) })
	keys := append(roomKeys(f.sale), logKey, seen)
	run := func(op, m string, present ...any) []any {
		t.Helper()
		args := append([]any{op, m, f.rate, f.over, f.session, f.pre, "", 0, "", "", "1", "", "", ""}, present...)
		res, err := RoomQueue.Run(ctx, f.rdb, keys, args...).Slice()
		if err != nil {
			t.Fatalf("room_queue %s: %v", op, err)
		}
		return res
	}
	for _, u := range []string{"a", "b", "c", "d"} {
		// Entries through the 6-key form: no presence recorded.
		f.call("enter", member(rankOf(u), u), "", 0)
	}
	got := run("tick", "", "c", 30000, "d", 2000)
	// Stock 2 x oversubscribe 1: a and b admitted by the enters, c and d wait.
	if got[0] != "open" || got[6].(int64) != 2 || got[11].(int64) != 2 {
		t.Fatalf("tick: %v, want open, depth 2, admitted 2", got)
	}
	if n := f.rdb.ZCard(ctx, seen).Val(); n != 2 {
		t.Fatalf("%d present after the tick, want c and d", n)
	}
	// Each is present until the tick's time plus his own duration.
	c, d := f.rdb.ZScore(ctx, seen, "c").Val(), f.rdb.ZScore(ctx, seen, "d").Val()
	if c-d != 28000 {
		t.Fatalf("c present until %v, d until %v: want 28 s apart (30 s and 2 s from the same tick)", c, d)
	}
	// A shorter promise never shortens a longer one.
	run("tick", "", "c", 1000)
	if c2 := f.rdb.ZScore(ctx, seen, "c").Val(); c2 < c {
		t.Fatalf("c's deadline went from %v back to %v", c, c2)
	}
	run("poll", member(rankOf("a"), "a"))
	if _, err := f.rdb.ZScore(ctx, seen, "a").Result(); err != nil {
		t.Fatalf("a poll did not record its user: %v", err)
	}
	if ttl := f.rdb.PTTL(ctx, seen).Val(); ttl <= 0 {
		t.Fatalf("the presence set has no expiry (%v)", ttl)
	}
	f.rdb.HSet(ctx, contract.MetaKey(f.sale), "stock", 0)
	if got := run("tick", ""); got[0] != "sold_out" {
		t.Fatalf("tick at stock 0: %v, want sold_out", got)
	}
}

// ARGV[11] "0" skips the admission step (a gateway runs it at most once per
// interval): nobody is admitted by such a call, and an admission whose time is up is
// answered lapsed even before a step removes it.
func TestRoomCallWithoutTheAdmissionStepAdmitsNobodyAndStillSeesALapse(t *testing.T) {
	t.Parallel()
	f := newRoom(t, 10, -time.Second, time.Hour)
	ctx := context.Background()
	run := func(op, u, admit string) []any {
		t.Helper()
		res, err := RoomQueue.Run(ctx, f.rdb, roomKeys(f.sale), op, member(rankOf(u), u),
			f.rate, f.over, f.session, f.pre, "", 0, "", "", admit).Slice()
		if err != nil {
			t.Fatalf("room_queue %s %s: %v", op, u, err)
		}
		return res
	}
	if got := run("enter", "a", "1"); got[0] != "admitted" {
		t.Fatalf("a enters with the step: %v", got)
	}
	if got := run("enter", "b", "0"); got[0] != "waiting" || got[8].(int64) != 0 {
		t.Fatalf("b enters without the step: %v, want waiting, nobody admitted", got)
	}
	if got := run("poll", "b", "0"); got[0] != "waiting" {
		t.Fatalf("b polls without the step: %v, want waiting", got)
	}
	if got := run("poll", "b", "1"); got[0] != "admitted" {
		t.Fatalf("b polls with the step: %v, want admitted", got)
	}
	f.rdb.ZAdd(ctx, roomKeys(f.sale)[3], redis.Z{Score: 1, Member: "a"})
	if got := run("poll", "a", "0"); got[0] != "lapsed" {
		t.Fatalf("a's admission ran out, polled without the step: %v, want lapsed", got)
	}
	if n := f.rdb.ZCard(ctx, roomKeys(f.sale)[3]).Val(); n != 2 {
		t.Fatalf("%d live admissions after a call without the step, want 2 (nothing removed)", n)
	}
}

// A gateway passes its admit interval as ARGV[11]: the step is a lease on the room hash's
// last_ms, so however many gateways (here 16 concurrent callers) ask at once, one step runs per
// interval (a step reports its checks, a call without one none); "1" always runs it, and once
// the interval is over (Redis time) the next caller's step runs again.
func TestTwoGatewaysRunOneAdmissionStepPerInterval(t *testing.T) {
	t.Parallel()
	f := newRoom(t, 1000, -time.Second, time.Hour)
	ctx := context.Background()
	run := func(u, admit string) []any {
		res, err := RoomQueue.Run(ctx, f.rdb, roomKeys(f.sale), "poll", member(rankOf(u), u),
			f.rate, f.over, f.session, f.pre, "", 0, "", "", admit).Slice()
		if err != nil {
			t.Errorf("room_queue poll %s: %v", u, err)
			return nil
		}
		return res
	}
	steps := func(res []any) int {
		if c, _ := res[13].([]any); len(c) > 0 {
			return 1
		}
		return 0
	}
	for i := range 40 {
		u := fmt.Sprintf("u%d", i)
		if _, err := RoomQueue.Run(ctx, f.rdb, roomKeys(f.sale), "enter", member(rankOf(u), u),
			f.rate, f.over, f.session, f.pre, "", 0, "", "", "0").Result(); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	ran, admitted := 0, int64(0)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			res := run(fmt.Sprintf("u%d", i), "600000")
			if res == nil {
				return
			}
			mu.Lock()
			ran += steps(res)
			admitted += res[8].(int64)
			mu.Unlock()
		})
	}
	wg.Wait()
	if ran != 1 || admitted != 40 {
		t.Fatalf("16 concurrent callers with a 10-minute lease ran %d steps admitting %d, want 1 step admitting all 40", ran, admitted)
	}
	if got := run("u1", "600000"); steps(got) != 0 {
		t.Fatalf("a call within the lease ran a step: %v", got)
	}
	if got := run("u1", "1"); steps(got) != 1 {
		t.Fatalf(`a call with "1" ran no step: %v`, got)
	}
	last, err := f.rdb.HGet(ctx, roomKeys(f.sale)[1], "last_ms").Int64()
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "Redis time past the lease", func() bool {
		return f.rdb.Time(ctx).Val().UnixMilli() > last+200
	})
	if got := run("u2", "200"); steps(got) != 1 {
		t.Fatalf("a call after the lease ran no step: %v", got)
	}
}

// With a presence window (ARGV[12]) the admission step admits only waiters seen within it:
// an absent one's place is passed (logged s:<ms>:<last seen>:<user>) and kept, and when he is
// seen again he is first in line, admitted before anyone behind.
func TestRoomAdmitsWaitersWhoAreThereAndAnAbsentOneKeepsHisPlace(t *testing.T) {
	t.Parallel()
	f := newRoom(t, 3, -time.Second, time.Hour)
	ctx := context.Background()
	room := roomKeys(f.sale)[1]
	seen, away, back, logKey := room+":seen", room+":away", room+":back", contract.RoomLogKey(f.sale)
	t.Cleanup(func() { f.rdb.Del(context.Background(), seen, away, back, logKey) })
	keys := append(roomKeys(f.sale), logKey, seen, away, back)
	run := func(op, u, admit string) []any {
		t.Helper()
		res, err := RoomQueue.Run(ctx, f.rdb, keys, op, member(rankOf(u), u),
			f.rate, f.over, f.session, f.pre, "", 0, "", "", admit, 60000).Slice()
		if err != nil {
			t.Fatalf("room_queue %s %s: %v", op, u, err)
		}
		return res
	}
	for _, u := range []string{"a", "b", "c", "d"} {
		run("enter", u, "0") // entered, seen, nobody admitted yet
	}
	// b was last seen two minutes ago: absent.
	f.rdb.ZAdd(ctx, seen, redis.Z{Score: float64(time.Now().Add(-2 * time.Minute).UnixMilli()), Member: "b"})
	// Stock 3 x 1: three admissions; a, c and d are there, b's place is passed.
	if got := run("poll", "a", "1"); got[0] != "admitted" || got[8].(int64) != 3 {
		t.Fatalf("the step: %v, want a admitted among 3", got)
	}
	if got := run("poll", "d", "0"); got[0] != "admitted" {
		t.Fatalf("d: %v, want admitted (b was absent)", got)
	}
	lg, _ := f.rdb.LRange(ctx, logKey, 0, -1).Result()
	var kinds []string
	for _, e := range lg {
		kinds = append(kinds, e[:1]+":"+e[len(e)-1:])
	}
	if fmt.Sprint(kinds) != "[a:a s:b a:c a:d]" {
		t.Fatalf("the log: %q, want a, then b skipped, then c and d", lg)
	}
	// b comes back: first in line.
	if got := run("poll", "b", "0"); got[0] != "waiting" || got[1].(int64) != 1 {
		t.Fatalf("b back: %v, want waiting at 1", got)
	}
	run("enter", "e", "0")
	// a buys nothing; its admission lapses: one unit of capacity for the next in line.
	f.rdb.ZAdd(ctx, roomKeys(f.sale)[3], redis.Z{Score: 1, Member: "a"})
	if got := run("poll", "e", "1"); got[0] != "waiting" {
		t.Fatalf("e: %v, want waiting (b first)", got)
	}
	if got := run("poll", "b", "0"); got[0] != "admitted" {
		t.Fatalf("b: %v, want admitted before e", got)
	}
	if n := f.rdb.ZCard(ctx, away).Val() + f.rdb.ZCard(ctx, back).Val(); n != 0 {
		t.Fatalf("%d left in away/back after b's admission", n)
	}
}

// Presence is per waiter: a waiter counts as present until the deadline his last
// visit carried (ARGV[12]: what he was told plus a grace), not for a window shared by all. One
// whose short deadline passed is passed and keeps his place (s:<ms>:<deadline>:<user>, the
// deadline before ms); one with a long deadline is admitted.
func TestRoomPresenceIsEachWaitersOwnDeadline(t *testing.T) {
	t.Parallel()
	f := newRoom(t, 1, -time.Second, time.Hour)
	ctx := context.Background()
	room := roomKeys(f.sale)[1]
	seen, away, back, logKey := room+":seen", room+":away", room+":back", contract.RoomLogKey(f.sale)
	t.Cleanup(func() { f.rdb.Del(context.Background(), seen, away, back, logKey) })
	keys := append(roomKeys(f.sale), logKey, seen, away, back)
	run := func(op, u, admit string, presentMS int64) []any {
		t.Helper()
		res, err := RoomQueue.Run(ctx, f.rdb, keys, op, member(rankOf(u), u),
			f.rate, f.over, f.session, f.pre, "", 0, "", "", admit, presentMS).Slice()
		if err != nil {
			t.Fatalf("room_queue %s %s: %v", op, u, err)
		}
		return res
	}
	run("enter", "short", "0", 1)     // told almost nothing: gone a millisecond later
	run("enter", "long", "0", 600000) // told to come back within ten minutes
	until := f.rdb.ZScore(ctx, seen, "short").Val()
	testenv.WaitFor(t, 5*time.Second, "Redis time past short's deadline", func() bool {
		tm := f.rdb.Time(ctx).Val()
		return float64(tm.UnixMilli()) > until
	})
	// The step (a tick: it records nobody) passes short and admits long, the stock's one unit.
	res, err := RoomQueue.Run(ctx, f.rdb, keys, "tick", "", f.rate, f.over, f.session, f.pre, "", 0, "", "", "1", 1).Slice()
	if err != nil || res[8].(int64) != 1 {
		t.Fatalf("the step: %v %v, want one admission", res, err)
	}
	lg := f.rdb.LRange(ctx, logKey, 0, -1).Val()
	if len(lg) != 2 || !strings.HasPrefix(lg[0], "s:") || !strings.HasSuffix(lg[0], ":short") || !strings.HasPrefix(lg[1], "a:") || !strings.HasSuffix(lg[1], ":long") {
		t.Fatalf("the log %q: want short passed, then long admitted", lg)
	}
	var ms, dl int64
	if _, err := fmt.Sscanf(lg[0], "s:%d:%d:", &ms, &dl); err != nil || dl >= ms || float64(dl) != until {
		t.Fatalf("%q: want the deadline %v, before the step's time (%v)", lg[0], until, err)
	}
	if p := f.rdb.HGet(ctx, room, "presence").Val(); p != "until" {
		t.Fatalf("the room's presence field %q, want until (the s: entries carry deadlines)", p)
	}
	if f.rdb.ZScore(ctx, away, "short").Err() != nil {
		t.Fatal("short's place was not kept in room:away")
	}
}

// A revoke ends the live admissions of the users the gateway found banned by the
// throttle, logs r:<ms>:<banned_until>:<user> for each, and leaves a buyer's and a waiter's
// state alone. An admission step reports the users it admitted and a sample of live ones.
func TestRoomRevokeEndsTheAdmissionsOfBannedUsers(t *testing.T) {
	t.Parallel()
	f := newRoom(t, 2, -time.Second, time.Hour)
	ctx := context.Background()
	logKey := contract.RoomLogKey(f.sale)
	t.Cleanup(func() { f.rdb.Del(context.Background(), logKey) })
	keys := append(roomKeys(f.sale), logKey)
	run := func(args ...any) []any {
		t.Helper()
		res, err := RoomQueue.Run(ctx, f.rdb, keys, args...).Slice()
		if err != nil {
			t.Fatalf("room_queue %v: %v", args[0], err)
		}
		return res
	}
	enter := func(u string) []any {
		return run("enter", member(rankOf(u), u), f.rate, f.over, f.session, f.pre, "", 0, "", "", "1", "")
	}
	got := enter("a")
	if got[0] != "admitted" || fmt.Sprint(got[13]) != "[a a]" { // admitted now, and sampled live
		t.Fatalf("a: %v, want admitted, reported as admitted and live", got)
	}
	enter("b")
	enter("c")                                         // waits: stock 2 x 1
	f.rdb.HSet(ctx, roomKeys(f.sale)[5], "b", "order") // b bought
	got = run("revoke", "", f.rate, f.over, f.session, f.pre, "", 0, "", "", "0", "", "", "",
		member(rankOf("a"), "a"), 4102444800000, member(rankOf("b"), "b"), 4102444800000, member(rankOf("c"), "c"), 4102444800000)
	if got[0] != "revoked" || got[14].(int64) != 1 {
		t.Fatalf("revoke: %v, want one admission ended (a's: b bought, c waits)", got)
	}
	if f.rdb.ZScore(ctx, roomKeys(f.sale)[3], "a").Err() == nil {
		t.Fatal("a still holds a live admission")
	}
	lg := f.rdb.LRange(ctx, logKey, 0, -1).Val()
	if last := lg[len(lg)-1]; !strings.HasPrefix(last, "r:") || !strings.HasSuffix(last, ":4102444800000:a") {
		t.Fatalf("the log ends %q, want r:<ms>:4102444800000:a", last)
	}
	if got := enter("c"); got[0] != "admitted" {
		t.Fatalf("c: %v, want admitted with a's capacity", got)
	}
}

// Conversion-aware admission: an admission whose user took no token within the
// claim window is judged a no-show (n: in the log). It stays live, but its unit's capacity goes
// to the next in line at once, not a session later; one whose user took a token holds it.
// Pending admissions count at the observed conversion, and the live admissions, no-shows
// included, never exceed stock x oversubscribe_max. With no claim window the
// next waiter waits for the lapse.
func TestRoomPassesANoShowsCapacityOnWithinTheClaimWindow(t *testing.T) {
	t.Parallel()
	for _, aware := range []bool{true, false} {
		t.Run(fmt.Sprintf("aware=%v", aware), func(t *testing.T) {
			f := newRoom(t, 1, -time.Second, time.Hour)
			ctx := context.Background()
			room := roomKeys(f.sale)[1]
			logKey := contract.RoomLogKey(f.sale)
			claims, idle, tokens := room+":claim", room+":idle", contract.TokensKey(f.sale)
			keys := append(roomKeys(f.sale), logKey, room+":seen", room+":away", room+":back", tokens, claims, idle)
			t.Cleanup(func() { f.rdb.Del(context.Background(), keys[6:]...) })
			claim := ""
			if aware {
				claim = "300"
			}
			run := func(op, u string) []any {
				t.Helper()
				m := ""
				if u != "" {
					m = member(rankOf(u), u)
				}
				res, err := RoomQueue.Run(ctx, f.rdb, keys, op, m, f.rate, f.over, f.session, f.pre, "", 0, "", "", "1", "", claim, "2").Slice()
				if err != nil {
					t.Fatalf("room_queue %s %s: %v", op, u, err)
				}
				return res
			}
			judged := func(u string) {
				t.Helper()
				until := f.rdb.ZScore(ctx, claims, u).Val()
				if !aware {
					until = float64(time.Now().Add(400 * time.Millisecond).UnixMilli())
				}
				testenv.WaitFor(t, 5*time.Second, "Redis time past "+u+"'s claim", func() bool {
					return float64(f.rdb.Time(ctx).Val().UnixMilli()) > until
				})
			}
			if got := run("enter", "a"); got[0] != "admitted" {
				t.Fatalf("a: %v, want admitted (the one unit)", got)
			}
			for _, u := range []string{"b", "c", "d"} {
				if got := run("enter", u); got[0] != "waiting" {
					t.Fatalf("%s: %v, want waiting", u, got)
				}
			}
			judged("a") // a never takes a token
			got := run("poll", "b")
			if !aware {
				if got[0] != "waiting" {
					t.Fatalf("b: %v, want waiting until a's session lapses (no claim window)", got)
				}
				return
			}
			if got[0] != "admitted" {
				t.Fatalf("b: %v, want admitted once a is judged a no-show", got)
			}
			if f.rdb.ZScore(ctx, roomKeys(f.sale)[3], "a").Err() != nil {
				t.Fatal("a's admission ended: a no-show keeps it until the session (he may still buy)")
			}
			// b's admission is pending at the observed conversion, 1 of 2: c waits (1 unit x 1).
			if got := run("poll", "c"); got[0] != "waiting" {
				t.Fatalf("c: %v, want waiting while b's admission is pending", got)
			}
			// b takes a token: judged, he holds the unit's capacity; c still waits.
			f.rdb.HSet(ctx, tokens, "b", "nonce:0")
			judged("b")
			if got := run("poll", "c"); got[0] != "waiting" {
				t.Fatalf("c: %v, want waiting: b took a token", got)
			}
			if f.rdb.HGet(ctx, room, "claimed").Val() != "1" || f.rdb.HGet(ctx, room, "noshows").Val() != "1" {
				t.Fatalf("counters %v, want claimed 1, noshows 1", f.rdb.HGetAll(ctx, room).Val())
			}
			// b's token goes unused and b is gone: the bound holds the third admission, since
			// live admissions (a, b) are already stock x oversubscribe_max (1 x 2).
			f.rdb.HDel(ctx, tokens, "b")
			f.rdb.ZAdd(ctx, idle, redis.Z{Score: f.rdb.ZScore(ctx, roomKeys(f.sale)[3], "b").Val(), Member: "b"})
			if got := run("poll", "c"); got[0] != "waiting" {
				t.Fatalf("c: %v, want waiting: 2 live admissions is the bound", got)
			}
			var kinds []string
			for _, e := range f.rdb.LRange(ctx, logKey, 0, -1).Val() {
				p := strings.Split(e, ":")
				kinds = append(kinds, p[0]+":"+p[len(p)-1])
			}
			if got := strings.Join(kinds, " "); got != "a:a h:b n:a a:b h:c" {
				t.Fatalf("the log: %s, want a:a h:b n:a a:b h:c (held while a was pending, then for c)", got)
			}
			if f.rdb.HGet(ctx, room, "claim_ms").Val() != "300" || f.rdb.HGet(ctx, room, "oversubscribe_max").Val() != "2" {
				t.Fatalf("the room hash does not say how no-shows were judged: %v", f.rdb.HGetAll(ctx, room).Val())
			}
		})
	}
}
