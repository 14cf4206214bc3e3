//go:build integration

package lua

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
)

// waitlist is a room sale driven through the scripts: the room's keys with presence and the
// log, the waitlist's step, the gate and compensation.
type waitlist struct {
	*roomFixture
	keys []string
}

func newWaitlist(t *testing.T, stock int) *waitlist {
	f := newRoom(t, stock, -time.Second, time.Hour)
	room := roomKeys(f.sale)[1]
	extra := []string{contract.RoomLogKey(f.sale), room + ":seen", room + ":away", room + ":back",
		contract.RoomOffersKey(f.sale), contract.RoomOfferLogKey(f.sale), contract.OutboxKey(f.sale),
		contract.CompensatedKey(f.sale), contract.TokensKey(f.sale)}
	t.Cleanup(func() { f.rdb.Del(context.Background(), extra...) })
	f.rdb.HSet(context.Background(), contract.MetaKey(f.sale), "room", 1) // as preheat.lua marks a room sale
	return &waitlist{roomFixture: f, keys: append(roomKeys(f.sale), extra[:4]...)}
}

// visit enters or polls u's place, present for a minute; admit runs the admission step.
func (w *waitlist) visit(op, u string, admit bool) string {
	w.t.Helper()
	a := "0"
	if admit {
		a = "1"
	}
	res, err := RoomQueue.Run(context.Background(), w.rdb, w.keys, op, member(rankOf(u), u),
		w.rate, w.over, w.session, w.pre, "", 0, "", "", a, 60000).Slice()
	if err != nil {
		w.t.Fatalf("room_queue %s %s: %v", op, u, err)
	}
	return res[0].(string)
}

func (w *waitlist) offer() RoomOfferResult {
	w.t.Helper()
	r, err := RoomOfferCall{Sale: w.sale, Window: time.Minute}.Run(context.Background(), w.rdb)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// buy runs the gate for u with admission enforced, no token: the reply's first element.
func (w *waitlist) buy(u string) []any {
	w.t.Helper()
	res, err := Gate.Run(context.Background(), w.rdb, GateCall{Sale: w.sale, User: u, OrderID: "o-" + u, Admission: true}.Keys(),
		GateCall{Sale: w.sale, User: u, OrderID: "o-" + u, Admission: true}.Args()...).Slice()
	if err != nil {
		w.t.Fatalf("gate %s: %v", u, err)
	}
	return res
}

func (w *waitlist) release(u string) {
	w.t.Helper()
	if done, _, err := (CompensateCall{Sale: w.sale, OrderID: "o-" + u, User: u}).Run(context.Background(), w.rdb); err != nil || !done {
		w.t.Fatalf("compensate %s: %v, %v", u, done, err)
	}
}

func (w *waitlist) meta(field string) string {
	return w.rdb.HGet(context.Background(), contract.MetaKey(w.sale), field).Val()
}

func kinds(r RoomOfferResult) string {
	var s []string
	for _, e := range r.Events {
		s = append(s, e.Kind+":"+e.User)
	}
	return strings.Join(s, " ")
}

func TestWaitlistGivesAReleasedUnitToTheNextPresentWaiterAndNobodyElse(t *testing.T) {
	t.Parallel()
	w := newWaitlist(t, 2)
	ctx := context.Background()
	for _, u := range []string{"a", "b", "c", "d", "e"} {
		w.visit("enter", u, false)
	}
	if got := w.visit("poll", "a", true); got != "admitted" {
		t.Fatalf("a: %s, want admitted", got)
	}
	if r := w.offer(); !r.Room || r.Reserved != 0 || len(r.Events) != 0 {
		t.Fatalf("the first step with nothing held: %+v", r)
	}
	for _, u := range []string{"a", "b"} {
		if res := w.buy(u); res[0].(int64) != 0 {
			t.Fatalf("%s buys: %v", u, res)
		}
	}
	// Sold out, and the buyers have not paid: a waiter keeps his place.
	if got := w.visit("poll", "c", true); got != "waiting" {
		t.Fatalf("c after the sell-out with unpaid buyers: %s, want waiting", got)
	}
	// z holds a live admission from before the sell-out: the fastest clicker the waitlist is for.
	w.rdb.ZAdd(ctx, roomKeys(w.sale)[3], redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: "z"})

	w.release("a")
	if w.meta("stock") != "1" || w.meta("reserved") != "1" {
		t.Fatalf("after a's release: stock %s reserved %s, want 1 held", w.meta("stock"), w.meta("reserved"))
	}
	if res := w.buy("z"); res[0].(int64) != 6 {
		t.Fatalf("z buys the held unit: %v, want sold_out", res)
	}
	if r := w.offer(); kinds(r) != "offered:c" || r.Offers != 1 {
		t.Fatalf("the step: %q (%+v), want c offered", kinds(r), r)
	}
	if got := w.visit("poll", "c", false); got != "admitted" {
		t.Fatalf("c offered: %s, want admitted", got)
	}
	if got := w.visit("poll", "e", false); got != "waiting" {
		t.Fatalf("e: %s, want waiting", got)
	}
	if res := w.buy("z"); res[0].(int64) != 6 {
		t.Fatalf("z buys c's unit: %v, want sold_out", res)
	}
	if res := w.buy("c"); res[0].(int64) != 0 {
		t.Fatalf("c buys: %v", res)
	}
	if w.meta("stock") != "0" || w.meta("reserved") != "0" {
		t.Fatalf("after c's purchase: stock %s reserved %s", w.meta("stock"), w.meta("reserved"))
	}
	if r := w.offer(); kinds(r) != "bought:c" || r.Offers != 0 {
		t.Fatalf("the step after c's purchase: %q", kinds(r))
	}

	// d is away; e is offered b's unit, lets the window pass; nobody is left: the pool.
	w.rdb.ZAdd(ctx, roomKeys(w.sale)[1]+":seen", redis.Z{Score: 1, Member: "d"})
	w.release("b")
	if r := w.offer(); kinds(r) != "offered:e" {
		t.Fatalf("the step after b's release: %q, want e offered (d absent)", kinds(r))
	}
	w.rdb.HSet(ctx, contract.MetaKey(w.sale), "o:e", 1)
	w.rdb.ZAdd(ctx, contract.RoomOffersKey(w.sale), redis.Z{Score: 1, Member: "e"})
	w.rdb.ZAdd(ctx, roomKeys(w.sale)[3], redis.Z{Score: 1, Member: "e"}) // his window, passed
	if r := w.offer(); kinds(r) != "passed:e" || r.Returned != 1 || r.Reserved != 0 {
		t.Fatalf("the step after e's window: %q %+v, want e passed and the unit back in the pool", kinds(r), r)
	}
	if res := w.buy("e"); res[0].(int64) != 15 {
		t.Fatalf("e after his window: %v, want not_admitted", res)
	}
	if res := w.buy("z"); res[0].(int64) != 0 {
		t.Fatalf("z buys from the pool: %v", res)
	}
	lg, _ := w.rdb.LRange(ctx, contract.RoomOfferLogKey(w.sale), 0, -1).Result()
	var steps []string
	for _, e := range lg {
		p := strings.Split(e, ":")
		steps = append(steps, p[0]+":"+p[len(p)-1])
	}
	if want := "[v:o-a o:c b:c v:o-b o:e x:e g:-]"; fmt.Sprint(steps) != want {
		t.Fatalf("the waitlist's log: %v, want %s", steps, want)
	}
}

// Backends run the step concurrently (after each compensation and on every sweep): every held
// unit is offered exactly once, each to another waiter, in queue order.
func TestWaitlistStepsRunConcurrentlyOfferEachUnitOnce(t *testing.T) {
	t.Parallel()
	const units, waiters = 10, 40
	w := newWaitlist(t, units)
	ctx := context.Background()
	var order []string
	for i := range waiters {
		u := fmt.Sprintf("w%02d", i)
		w.visit("enter", u, false)
	}
	res, _ := w.rdb.ZRange(ctx, roomKeys(w.sale)[2], 0, -1).Result()
	for _, m := range res {
		order = append(order, m[48:])
	}
	w.offer()
	w.visit("poll", order[0], true)
	for _, u := range order[:units] {
		if r := w.buy(u); r[0].(int64) != 0 {
			t.Fatalf("%s buys: %v", u, r)
		}
	}
	var wg sync.WaitGroup
	events := make(chan OfferEvent, 100)
	for i := range units {
		wg.Add(2)
		go func() { defer wg.Done(); w.release(order[i]) }()
		go func() {
			defer wg.Done()
			r, err := RoomOfferCall{Sale: w.sale, Window: time.Minute}.Run(ctx, w.rdb)
			if err != nil {
				t.Error(err)
				return
			}
			for _, e := range r.Events {
				events <- e
			}
		}()
	}
	wg.Wait()
	r := w.offer()
	close(events)
	var offered []string
	for e := range events {
		offered = append(offered, e.User)
	}
	for _, e := range r.Events {
		offered = append(offered, e.User)
	}
	seen := map[string]bool{}
	for _, u := range offered {
		if seen[u] {
			t.Fatalf("%s offered twice: %v", u, offered)
		}
		seen[u] = true
	}
	for _, u := range order[units : 2*units] {
		if !seen[u] {
			t.Fatalf("offers %v: the next %d waiters in order should hold them", offered, units)
		}
	}
	if len(offered) != units || r.Offers != units || r.Reserved != units {
		t.Fatalf("%d offers made, %d open, %d held; want %d", len(offered), r.Offers, r.Reserved, units)
	}
}

// docBlock is the fenced block ```info of docs/room.md, its lines.
func docBlock(t *testing.T, info string) []string {
	t.Helper()
	b, err := os.ReadFile("../docs/room.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```"+info+"\n")
	if !ok {
		t.Fatalf("docs/room.md has no %s block", info)
	}
	body, _, _ := strings.Cut(rest, "```")
	return strings.Split(strings.TrimSuffix(body, "\n"), "\n")
}

// timeless replaces every field of a record that is a Unix time in ms (Redis's clock in the
// run, the example's in the doc) by "T", and an entry id of the doc's by its user.
func timeless(line string, users map[string]string) string {
	f := strings.Split(line, ":")
	for i, x := range f {
		if n, err := strconv.ParseInt(x, 10, 64); err == nil && n >= 1e12 {
			f[i] = "T"
		} else if u, ok := users[x]; ok {
			f[i] = u
		}
	}
	return strings.Join(f, ":")
}

// The waitlist's worked example of docs/room.md, run on the real scripts in real Redis: four
// arrivals, ann admitted alone, her token and purchase, her unpaid order compensated, bob
// absent and passed, cat offered the unit, his token and purchase. The queue, the room's log
// and the waitlist's log the scripts leave are the doc's blocks (the report's evidence without
// its orders, and the waitlist's log), times aside.
func TestTheWaitlistWorkedExampleOfRoomMdIsWhatTheScriptsDo(t *testing.T) {
	t.Parallel()
	w := newWaitlist(t, 1)
	ctx := context.Background()
	people := []string{"ann", "bob", "cat", "dan"}
	for _, u := range people {
		if got := w.visit("enter", u, false); got != "waiting" {
			t.Fatalf("%s enters: %s, want waiting", u, got)
		}
	}
	token := func(u string) string {
		t.Helper()
		keys := []string{contract.MetaKey(w.sale), contract.TokensKey(w.sale), contract.BuyersKey(w.sale),
			contract.RoomKey(w.sale), contract.RoomLiveKey(w.sale), contract.RoomLogKey(w.sale)}
		res, err := TokenIssue.Run(ctx, w.rdb, keys, u, testNonce, 60_000, 0, "", "1").Slice()
		if err != nil || res[0] != "issued" {
			t.Fatalf("%s's token: %v %v", u, res, err)
		}
		return storeValue(res)
	}
	buy := func(u string) {
		t.Helper()
		res, err := GateCall{Sale: w.sale, User: u, OrderID: "o-" + u, TokenValue: token(u), Group: "relay", Admission: true}.Run(ctx, w.rdb)
		if err != nil || res[0].(int64) != 0 {
			t.Fatalf("%s buys: %v %v", u, res, err)
		}
	}
	// The backend's sweep runs the waitlist's step on a live room sale: nothing held yet.
	if r := w.offer(); !r.Room || r.Reserved != 0 || len(r.Events) != 0 {
		t.Fatalf("the first step with nothing held: %+v", r)
	}
	// 1. ann alone is admitted, takes her token and buys the last unit; the others wait.
	if got := w.visit("poll", "ann", true); got != "admitted" {
		t.Fatalf("ann: %s, want admitted", got)
	}
	buy("ann")
	for _, u := range people[1:] {
		if got := w.visit("poll", u, true); got != "waiting" {
			t.Fatalf("%s after ann's purchase: %s, want waiting", u, got)
		}
	}
	// 2. ann does not pay: the unit is held.
	w.release("ann")
	if w.meta("stock") != "1" || w.meta("reserved") != "1" {
		t.Fatalf("after ann's release: stock %s reserved %s, want 1 held", w.meta("stock"), w.meta("reserved"))
	}
	// 3. bob's presence ran out 10 s ago; cat is there: the step passes bob and offers cat.
	w.rdb.ZAdd(ctx, contract.RoomSeenKey(w.sale), redis.Z{Score: float64(time.Now().Add(-10 * time.Second).UnixMilli()), Member: "bob"})
	if r := w.offer(); kinds(r) != "offered:cat" {
		t.Fatalf("the step after ann's release: %q, want cat offered", kinds(r))
	}
	// 4. cat's poll says admitted; he buys; dan waits; the next step logs the offer bought.
	if got := w.visit("poll", "cat", true); got != "admitted" {
		t.Fatalf("cat offered: %s, want admitted", got)
	}
	if got := w.visit("poll", "dan", true); got != "waiting" {
		t.Fatalf("dan: %s, want waiting", got)
	}
	buy("cat")
	if r := w.offer(); kinds(r) != "bought:cat" {
		t.Fatalf("the step after cat's purchase: %q, want his offer bought", kinds(r))
	}

	users := map[string]string{}
	for _, u := range people {
		users[u+"AAAAAAAAAAAAAAAAAAA"] = u
	}
	var want []string
	for _, l := range docBlock(t, "waitlist-evidence") {
		if !strings.HasPrefix(l, "o:") {
			want = append(want, timeless(l, users))
		}
	}
	// The evidence as the report writes it (backend/report): the queue by score, then the
	// room's log, its token nonces dropped.
	var got []string
	q, err := w.rdb.ZRangeWithScores(ctx, contract.RoomQueueKey(w.sale), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range q {
		got = append(got, timeless(fmt.Sprintf("q:%d:%s", int64(z.Score), z.Member.(string)[48:]), nil))
	}
	lg, err := w.rdb.LRange(ctx, contract.RoomLogKey(w.sale), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lg {
		p := strings.SplitN(l, ":", 5)
		got = append(got, timeless(strings.Join(p[:4], ":"), nil))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the queue and the room's log:\n%s\nthe doc's evidence (times as T):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	want = nil
	for _, l := range docBlock(t, "waitlist-offerlog") {
		want = append(want, timeless(l, nil))
	}
	got = nil
	ol, err := w.rdb.LRange(ctx, contract.RoomOfferLogKey(w.sale), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ol {
		got = append(got, timeless(l, nil))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the waitlist's log:\n%s\nthe doc's (times as T):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
