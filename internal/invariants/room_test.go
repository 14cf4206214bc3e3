//go:build integration

package invariants_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// roomWorld is a sale with a waiting room driven by the real scripts in real Redis (the ones
// the gateways run), with its orders in real Postgres: six users pre-queued, one arrival after
// the start, stock 3, oversubscribe 1.5. Four are admitted at the start (3 x 1.5), three of
// them take a token and buy, and the sale sells out.
type roomWorld struct {
	*world
	users    []string
	admitted []string // in admission order
}

func (w *roomWorld) member(seed, ekey []byte, user string) string {
	m := hmac.New(sha256.New, ekey)
	m.Write([]byte("seckill-room-entry\x00" + w.sale + "\x00" + user))
	raw := m.Sum(nil)[:16]
	return string(invariants.RoomRank(seed, b64(raw))) + string(raw) + user
}

func (w *roomWorld) visit(op, member string) []any {
	w.t.Helper()
	res, err := lua.RoomQueue.Run(context.Background(), w.rdb, w.roomKeys(), op, member, "1000", "1.5", 600000, 3600000, "", 0).Slice()
	if err != nil {
		w.t.Fatalf("room_queue %s: %v", op, err)
	}
	return res
}

func (w *roomWorld) roomKeys() []string {
	room := contract.RoomKey(w.sale)
	return []string{contract.MetaKey(w.sale), room, room + ":q", contract.RoomLiveKey(w.sale), room + ":spent",
		contract.BuyersKey(w.sale), contract.RoomLogKey(w.sale)}
}

func (w *roomWorld) token(user string, i int) {
	w.t.Helper()
	keys := []string{contract.MetaKey(w.sale), contract.TokensKey(w.sale), contract.BuyersKey(w.sale),
		contract.RoomKey(w.sale), contract.RoomLiveKey(w.sale), contract.RoomLogKey(w.sale)}
	res, err := lua.TokenIssue.Run(context.Background(), w.rdb, keys, user, fmt.Sprintf("%022d", i), 60000, 0, "", "1").Slice()
	if err != nil || res[0] != "issued" {
		w.t.Fatalf("token of %s: %v %v", user, res, err)
	}
}

func newRoomWorld(t *testing.T) *roomWorld {
	t.Helper()
	ctx := context.Background()
	w := &roomWorld{world: newWorld(t, 3)}
	rdb := w.rdb
	tm, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	meta := contract.MetaKey(w.sale)
	rdb.HSet(ctx, meta, "starts_ms", tm.Add(time.Hour).UnixMilli(), "ends_ms", tm.Add(2*time.Hour).UnixMilli())
	rdb.PExpire(ctx, meta, 3*time.Hour)
	seed, ekey := make([]byte, 32), make([]byte, 32)
	_, _ = rand.Read(seed)
	_, _ = rand.Read(ekey)
	sum := sha256.Sum256(seed)
	if err := lua.RoomSetup.Run(ctx, rdb, []string{meta, contract.RoomKey(w.sale)}, hex.EncodeToString(seed), hex.EncodeToString(ekey),
		"1000", "1.5", "600000", "3600000", "0", "0", hex.EncodeToString(sum[:])).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		room := contract.RoomKey(w.sale)
		rdb.Del(context.Background(), room, room+":q", room+":live", room+":spent", contract.RoomLogKey(w.sale), contract.TokensKey(w.sale))
	})
	members := map[string]string{}
	for i := range 6 {
		u := fmt.Sprintf("pre%d", i)
		w.users = append(w.users, u)
		members[u] = w.member(seed, ekey, u)
		if res := w.visit("enter", members[u]); res[0] != "waiting" {
			t.Fatalf("pre-queue entry: %v", res)
		}
	}
	// The start: ten seconds ago, so the allowance is full and the oversubscription decides.
	rdb.HSet(ctx, meta, "starts_ms", tm.Add(-10*time.Second).UnixMilli())
	late := "late0"
	members[late] = w.member(seed, ekey, late)
	w.visit("enter", members[late])
	// Someone enters after the start and gives the place up (DELETE /queue): the log shows it.
	leaver := w.member(seed, ekey, "late1")
	w.visit("enter", leaver)
	if res := w.visit("leave", leaver); res[0] != "left" {
		t.Fatalf("leave: %v", res)
	}
	for _, u := range append(w.users, late) {
		if res := w.visit("poll", members[u]); res[0] == "admitted" {
			w.admitted = append(w.admitted, u)
		}
	}
	if len(w.admitted) != 4 {
		t.Fatalf("%d admitted at the start, want 4 (stock 3 x 1.5)", len(w.admitted))
	}
	for i, u := range w.admitted {
		w.token(u, i) // the fourth takes a token too, but comes too late: the units are gone
	}
	for _, u := range w.admitted[:3] {
		w.sell(u, "o-"+u)
		rdb.HDel(ctx, contract.TokensKey(w.sale), u) // the gate spends the token with the unit
	}
	if res := w.visit("poll", members[late]); res[0] != "sold_out" {
		t.Fatalf("after the last unit: %v", res)
	}
	return w
}

// notAdmitted is a pre-queued user the room did not admit.
func (w *roomWorld) notAdmitted() string {
	for _, u := range w.users {
		if !slices.Contains(w.admitted, u) {
			return u
		}
	}
	w.t.Fatal("everyone was admitted")
	return ""
}

func b64(raw []byte) string { return base64.RawURLEncoding.EncodeToString(raw) }

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// roomVerdicts runs the whole verifier and returns the verdict of each check by number.
func (w *roomWorld) roomVerdicts() map[int]invariants.Check {
	w.t.Helper()
	rep := w.verify(10)
	out := map[int]invariants.Check{}
	for _, c := range rep.Checks {
		out[c.N] = c
	}
	if len(out) != 9 {
		w.t.Fatalf("%d checks, want the 5 invariants and the room's 4", len(out))
	}
	return out
}

func TestVerifierPassesAWaitingRoomSaleDrivenByTheRealScripts(t *testing.T) {
	t.Parallel()
	w := newRoomWorld(t)
	for n, c := range w.roomVerdicts() {
		if c.Verdict != invariants.Pass {
			t.Errorf("invariant %d (%s): %s", n, c.Name, c.Detail)
		}
	}
}

// Each corruption below is what a broken room or token script would leave; the matching
// invariant must FAIL.
func TestVerifierCatchesEachBrokenRoomInvariant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logKey := func(w *roomWorld) string { return contract.RoomLogKey(w.sale) }
	cases := []struct {
		name    string
		n       int
		corrupt func(w *roomWorld)
	}{
		{"two admissions swapped: not the seed's order", 6, func(w *roomWorld) {
			a, _ := w.rdb.LIndex(ctx, logKey(w), 0).Result()
			b, _ := w.rdb.LIndex(ctx, logKey(w), 1).Result()
			w.rdb.LSet(ctx, logKey(w), 0, b)
			w.rdb.LSet(ctx, logKey(w), 1, a)
		}},
		{"a place whose rank is not the seed's HMAC", 6, func(w *roomWorld) {
			w.rdb.ZAdd(ctx, contract.RoomKey(w.sale)+":q", redisZ(0, strings.Repeat("\x00", 48)+"forged"))
		}},
		{"an unused token no admission check issued", 7, func(w *roomWorld) {
			w.rdb.HSet(ctx, contract.TokensKey(w.sale), w.users[5], "AAAAAAAAAAAAAAAAAAAAAA:1")
		}},
		{"a buyer who was never admitted", 7, func(w *roomWorld) {
			w.exec(`INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at) VALUES ('o-x', $1, $2, 'failed', now())`, w.sale, w.notAdmitted())
		}},
		{"a token issued before the user's admission", 7, func(w *roomWorld) {
			w.rdb.LPush(ctx, logKey(w), "t:1:9999999999999:"+w.admitted[0]+":BBBBBBBBBBBBBBBBBBBBBB")
		}},
		{"a token issued after the admission was revoked (the throttle bans the user)", 7, func(w *roomWorld) {
			// The revocation at time 1 ends the admission: every token of the user, logged
			// later, is outside it.
			e, _ := w.rdb.LIndex(ctx, logKey(w), 0).Result()
			p := strings.SplitN(e, ":", 4)
			w.rdb.LInsertAfter(ctx, logKey(w), e, "r:"+p[1]+":9999999999999:"+p[3])
		}},
		{"an admission while the stock was 0", 8, func(w *roomWorld) {
			e, _ := w.rdb.LIndex(ctx, logKey(w), 0).Result()
			p := strings.SplitN(e, ":", 4)
			w.rdb.LSet(ctx, logKey(w), 0, p[0]+":"+p[1]+":0:"+p[3])
		}},
		{"a user admitted twice", 9, func(w *roomWorld) {
			e, _ := w.rdb.LIndex(ctx, logKey(w), 0).Result()
			w.rdb.RPush(ctx, logKey(w), e)
		}},
		{"a user holding two places", 9, func(w *roomWorld) {
			w.rdb.ZAdd(ctx, contract.RoomKey(w.sale)+":q", redisZ(99, strings.Repeat("\x01", 48)+w.users[0]))
		}},
		{"a place given up after its admission", 9, func(w *roomWorld) {
			w.rdb.RPush(ctx, logKey(w), "l:1:1:"+w.admitted[0])
		}},
		{"an admission the log does not show", 9, func(w *roomWorld) {
			w.rdb.HIncrBy(ctx, contract.RoomKey(w.sale), "cursor", 1)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case breaks a world of its own
			w := newRoomWorld(t)
			tc.corrupt(w)
			got := w.roomVerdicts()
			if got[tc.n].Verdict != invariants.Fail {
				t.Fatalf("invariant %d passed a corrupted room: %s", tc.n, got[tc.n].Detail)
			}
			if len(got[tc.n].Problems) == 0 {
				t.Errorf("invariant %d failed without naming what is wrong", tc.n)
			}
		})
	}
}

// presenceWorld is a room whose admission step follows the presence rule: six
// pre-queued users, one of them absent at the start; four are admitted, the absent one's
// place is passed; he comes back and is admitted first when a unit of capacity frees.
func newPresenceWorld(t *testing.T) (*roomWorld, string) {
	t.Helper()
	ctx := context.Background()
	w := &roomWorld{world: newWorld(t, 3)}
	rdb := w.rdb
	tm, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	meta := contract.MetaKey(w.sale)
	rdb.HSet(ctx, meta, "starts_ms", tm.Add(time.Hour).UnixMilli(), "ends_ms", tm.Add(2*time.Hour).UnixMilli())
	rdb.PExpire(ctx, meta, 3*time.Hour)
	seed, ekey := make([]byte, 32), make([]byte, 32)
	_, _ = rand.Read(seed)
	_, _ = rand.Read(ekey)
	sum := sha256.Sum256(seed)
	if err := lua.RoomSetup.Run(ctx, rdb, []string{meta, contract.RoomKey(w.sale)}, hex.EncodeToString(seed), hex.EncodeToString(ekey),
		"1000", "1.5", "600000", "3600000", "0", "0", hex.EncodeToString(sum[:])).Err(); err != nil {
		t.Fatal(err)
	}
	room := contract.RoomKey(w.sale)
	keys := append(w.roomKeys(), room+":seen", room+":away", room+":back")
	t.Cleanup(func() {
		rdb.Del(context.Background(), room, room+":q", room+":live", room+":spent", room+":seen", room+":away", room+":back",
			contract.RoomLogKey(w.sale), contract.TokensKey(w.sale))
	})
	visit := func(op, m, admit string) []any {
		t.Helper()
		res, err := lua.RoomQueue.Run(ctx, rdb, keys, op, m, "1000", "1.5", 600000, 3600000, "", 0, "", "", admit, 60000).Slice()
		if err != nil {
			t.Fatalf("room_queue %s: %v", op, err)
		}
		return res
	}
	members := map[string]string{}
	for i := range 6 {
		u := fmt.Sprintf("pre%d", i)
		w.users = append(w.users, u)
		members[u] = w.member(seed, ekey, u)
		visit("enter", members[u], "0")
	}
	// The second place's waiter is absent: last seen two minutes before the start.
	places, _ := rdb.ZRange(ctx, room+":q", 0, -1).Result()
	absent := places[1][48:]
	rdb.ZAdd(ctx, room+":seen", redisZ(float64(tm.Add(-2*time.Minute).UnixMilli()), absent))
	rdb.HSet(ctx, meta, "starts_ms", tm.Add(-10*time.Second).UnixMilli())
	// The step, run by a present waiter's poll: 4 admitted (3 x 1.5), the absent one passed.
	present := places[0][48:]
	visit("poll", members[present], "1")
	if res := visit("poll", members[absent], "0"); res[0] != "waiting" || res[1].(int64) != 1 {
		t.Fatalf("the absent one comes back: %v, want waiting at 1", res)
	}
	// One admission lapses: the one who came back is admitted before the sixth place.
	live, _ := rdb.ZRange(ctx, contract.RoomLiveKey(w.sale), 0, 0).Result()
	rdb.ZAdd(ctx, contract.RoomLiveKey(w.sale), redisZ(1, live[0]))
	// Another millisecond: invariant 8 groups one call's admissions by their time.
	time.Sleep(5 * time.Millisecond)
	if res := visit("poll", members[absent], "1"); res[0] != "admitted" {
		t.Fatalf("after a lapse: %v, want the one who came back admitted", res)
	}
	return w, absent
}

func TestVerifierChecksThePresenceRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newPresenceWorld(t)
	got := w.roomVerdicts()
	for _, n := range []int{6, 7, 8, 9} { // nothing is sold here: 1 reports the undersell
		if got[n].Verdict != invariants.Pass {
			t.Fatalf("invariant %d on a room that follows the presence rule: %s %v", n, got[n].Detail, got[n].Problems)
		}
	}
	if got[6].Numbers["passed_absent"] != 1 || got[6].Numbers["returned"] != 1 {
		t.Fatalf("invariant 6 numbers: %v, want one place passed and one return", got[6].Numbers)
	}
	for name, corrupt := range map[string]func(w *roomWorld, absent string){
		"a place passed while its waiter was there": func(w *roomWorld, absent string) {
			lg, _ := w.rdb.LRange(ctx, contract.RoomLogKey(w.sale), 0, -1).Result()
			for i, e := range lg {
				if strings.HasPrefix(e, "s:") {
					p := strings.SplitN(e, ":", 4)
					w.rdb.LSet(ctx, contract.RoomLogKey(w.sale), int64(i), p[0]+":"+p[1]+":"+p[1]+":"+p[3])
				}
			}
		},
		"an admission out of turn": func(w *roomWorld, absent string) {
			w.rdb.RPush(ctx, contract.RoomLogKey(w.sale), "a:1:3:"+w.users[5]+"x")
		},
	} {
		t.Run(name, func(t *testing.T) {
			w, absent := newPresenceWorld(t)
			corrupt(w, absent)
			if got := w.roomVerdicts(); got[6].Verdict != invariants.Fail {
				t.Fatalf("invariant 6 passed: %s", got[6].Detail)
			}
		})
	}
}

// newIdleWorld is a room with conversion-aware admission (a claim window of 300 ms) driven by
// the real script: one unit, oversubscribe 1; the first in line is admitted and never takes a
// token; the second, present, is held back (h:) until the first is judged a no-show (n:), then
// admitted in the same step.
func newIdleWorld(t *testing.T) *roomWorld {
	t.Helper()
	ctx := context.Background()
	w := &roomWorld{world: newWorld(t, 1)}
	rdb := w.rdb
	tm, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	meta := contract.MetaKey(w.sale)
	rdb.HSet(ctx, meta, "starts_ms", tm.Add(time.Hour).UnixMilli(), "ends_ms", tm.Add(2*time.Hour).UnixMilli())
	rdb.PExpire(ctx, meta, 3*time.Hour)
	seed, ekey := make([]byte, 32), make([]byte, 32)
	_, _ = rand.Read(seed)
	_, _ = rand.Read(ekey)
	sum := sha256.Sum256(seed)
	if err := lua.RoomSetup.Run(ctx, rdb, []string{meta, contract.RoomKey(w.sale)}, hex.EncodeToString(seed), hex.EncodeToString(ekey),
		"1000", "1", "600000", "3600000", "0", "0", hex.EncodeToString(sum[:])).Err(); err != nil {
		t.Fatal(err)
	}
	room := contract.RoomKey(w.sale)
	keys := append(w.roomKeys(), room+":seen", room+":away", room+":back", contract.TokensKey(w.sale), room+":claim", room+":idle")
	t.Cleanup(func() { rdb.Del(context.Background(), append(keys[1:], room+":q", room+":live")...) })
	visit := func(m, admit string) []any {
		t.Helper()
		res, err := lua.RoomQueue.Run(ctx, rdb, keys, "poll", m, "1000", "1", 600000, 3600000, "", 0, "", "", admit, 1000, 300, 2).Slice()
		if err != nil {
			t.Fatalf("room_queue: %v", err)
		}
		return res
	}
	members := map[string]string{}
	for i := range 3 {
		u := fmt.Sprintf("pre%d", i)
		w.users = append(w.users, u)
		members[u] = w.member(seed, ekey, u)
		if _, err := lua.RoomQueue.Run(ctx, rdb, keys, "enter", members[u], "1000", "1", 600000, 3600000, "", 0, "", "", "0", 1000, 300, 2).Result(); err != nil {
			t.Fatal(err)
		}
	}
	rdb.HSet(ctx, meta, "starts_ms", tm.Add(-10*time.Second).UnixMilli())
	// Everyone present for a second from each visit: the claim is judged 1.3 s after the
	// admission.
	places, _ := rdb.ZRange(ctx, room+":q", 0, -1).Result()
	first, second := places[0][48:], places[1][48:]
	if res := visit(members[first], "1"); res[0] != "admitted" {
		t.Fatalf("%s: %v, want admitted", first, res)
	}
	if res := visit(members[second], "1"); res[0] != "waiting" {
		t.Fatalf("%s: %v, want waiting (held)", second, res)
	}
	until := rdb.ZScore(ctx, room+":claim", first).Val()
	testenv.WaitFor(t, 5*time.Second, "Redis time past the claim", func() bool {
		return float64(rdb.Time(ctx).Val().UnixMilli()) > until
	})
	if res := visit(members[second], "1"); res[0] != "admitted" {
		t.Fatalf("%s: %v, want admitted once %s is judged a no-show", second, res, first)
	}
	return w
}

// Invariant 6's rule "while units are left and a present waiter waits, the sale never idles",
// from the holds (h:) and no-shows (n:) the script logs. Serial (no t.Parallel): it waits on
// real time, for Redis's clock to pass a claim window of 300 ms.
func TestVerifierChecksThatTheSaleNeverIdles(t *testing.T) {
	ctx := context.Background()
	got := newIdleWorld(t).roomVerdicts()
	for _, n := range []int{6, 7, 8, 9} {
		if got[n].Verdict != invariants.Pass {
			t.Fatalf("invariant %d on a room that follows the rule: %s %v", n, got[n].Detail, got[n].Problems)
		}
	}
	// Find the log's entries by kind.
	find := func(w *roomWorld, kind string) (int64, []string) {
		lg, _ := w.rdb.LRange(ctx, contract.RoomLogKey(w.sale), 0, -1).Result()
		for i := len(lg) - 1; i >= 0; i-- {
			if strings.HasPrefix(lg[i], kind) {
				return int64(i), strings.SplitN(lg[i], ":", 4)
			}
		}
		t.Fatalf("no %s entry in %q", kind, lg)
		return 0, nil
	}
	for name, corrupt := range map[string]func(w *roomWorld){
		"held while a no-show's capacity was free": func(w *roomWorld) {
			i, n := find(w, "n:")
			w.rdb.LInsert(ctx, contract.RoomLogKey(w.sale), "AFTER", w.rdb.LIndex(ctx, contract.RoomLogKey(w.sale), i).Val(),
				"h:"+n[1]+":1:"+w.users[2])
		},
		"capacity came back and nobody was admitted for seconds": func(w *roomWorld) {
			i, a := find(w, "a:")
			ms, _ := strconv.ParseInt(a[1], 10, 64)
			w.rdb.LSet(ctx, contract.RoomLogKey(w.sale), i, fmt.Sprintf("a:%d:%s:%s", ms+10_000, a[2], a[3]))
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newIdleWorld(t)
			corrupt(w)
			if got := w.roomVerdicts(); got[6].Verdict != invariants.Fail || got[6].Numbers["idle"] != 1 {
				t.Fatalf("invariant 6: %s, want FAIL with one idle", got[6].Detail)
			}
		})
	}
}
