//go:build integration

package core

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The polls of places the cursor passed (admitted, passed while absent, passed because flagged)
// are answered from the decisions the gateway's ticks read, with what room_queue.lua answers
// them, and reach Redis only when the decision is not in memory. The store counts what reaches
// Redis: each Visit is one script call.

// countingStore is the real RedisStore, counting its script calls by kind.
type countingStore struct {
	RedisStore
	polls, ticks atomic.Int64
}

func (s *countingStore) Visit(ctx context.Context, sale string, v Visit) (Reply, error) {
	switch {
	case v.Tick:
		s.ticks.Add(1)
	case !v.Enter && !v.Leave && len(v.Revoke) == 0:
		s.polls.Add(1)
	}
	return s.RedisStore.Visit(ctx, sale, v)
}

// decidedRoom is a started room and what the tests need of it.
type decidedRoom struct {
	t     *testing.T
	sale  string
	store RedisStore
	room  SaleRoom
	index map[string]int64 // the users' queue indexes, from their entries
}

func newDecidedRoom(t *testing.T, stock int, session time.Duration) *decidedRoom {
	t.Helper()
	rdb := testenv.Redis(t)
	r := newRoom(t, rdb, stock, -time.Second, time.Hour)
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.RoomDecidedKey(r.Sale), contract.RoomFlaggedKey(r.Sale))
	})
	store := RedisStore{Client: rdb, Defaults: Settings{Rate: 1000, Oversubscribe: 1.5, Session: session}}
	room, ok, err := store.Room(context.Background(), r.Sale)
	if err != nil || !ok {
		t.Fatalf("room: %v %v", ok, err)
	}
	return &decidedRoom{t: t, sale: r.Sale, store: store, room: room, index: map[string]int64{}}
}

// enter places users in order, present for presence (no admission step).
func (d *decidedRoom) enter(presence time.Duration, flag bool, users ...string) {
	d.t.Helper()
	for _, u := range users {
		rep, err := d.store.Visit(context.Background(), d.sale, Visit{Enter: true, Presence: presence, Flag: flag,
			Member: d.member(u), Settings: d.room.Settings})
		if err != nil || rep.Outcome != Waiting {
			d.t.Fatalf("enter %s: %v %v", u, rep.Outcome, err)
		}
		d.index[u] = rep.Cursor + rep.Position - 1
	}
}

func (d *decidedRoom) member(user string) string {
	return PlaceOf(d.room.EntryKey, d.room.Seed, d.sale, user).Member(user)
}

// gateway is a gateway of the room over a counting store, on a clock the test moves: each
// advance past the summary interval makes the next poll from memory tick.
func (d *decidedRoom) gateway(admitEvery time.Duration) (*Gateway, *countingStore, func()) {
	store := &countingStore{RedisStore: d.store}
	g := NewGateway(Timing{CacheTTL: time.Hour, SummaryInterval: time.Second, AdmitInterval: admitEvery,
		Refresh: Refresh{Min: time.Second, Max: 30 * time.Second}}, Counts{})
	g.Store = store
	var mu sync.Mutex
	clock := time.Now()
	g.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	return g, store, func() { mu.Lock(); clock = clock.Add(2 * time.Second); mu.Unlock() }
}

// fromMemory polls user through g's memory, failing when it is not answered from there.
func (d *decidedRoom) fromMemory(g *Gateway, user string) Verdict {
	d.t.Helper()
	c, ok, err := g.Room(context.Background(), d.sale)
	if err != nil || !ok {
		d.t.Fatalf("room: %v %v", ok, err)
	}
	v, _, ok := g.FromMemory(context.Background(), d.sale, user, c, d.index[user])
	if !ok {
		d.t.Fatalf("%s's poll (index %d) was not answered from memory", user, d.index[user])
	}
	return v
}

// redisAnswer is what room_queue.lua answers user's poll now (no admission step), decided as the
// handler decides it.
func (d *decidedRoom) redisAnswer(g *Gateway, user string) Verdict {
	d.t.Helper()
	c, _, _ := g.Room(context.Background(), d.sale)
	rep, err := d.store.Visit(context.Background(), d.sale, Visit{Member: d.member(user), Settings: d.room.Settings,
		Presence: g.PresenceFor(time.Second)})
	if err != nil {
		d.t.Fatal(err)
	}
	return Decide(rep, false, c.PaceFrom(rep), g.Refresh)
}

// sameAnswer fails unless the memory's answer is Redis's: the state, the place, the admission's
// end, the reason and the units left (the estimate is the pace's, which both share).
func sameAnswer(t *testing.T, who string, mem, red Verdict) {
	t.Helper()
	m, r := mem.Answer, red.Answer
	if mem.Status != red.Status || m.State != r.State || m.Position != r.Position || m.Ahead != r.Ahead ||
		m.AdmittedUntil != r.AdmittedUntil || m.Reason != r.Reason || m.UnitsLeft != r.UnitsLeft {
		t.Fatalf("%s: from memory %d %+v, Redis answers %d %+v", who, mem.Status, m, red.Status, r)
	}
}

func TestAnAdmittedOrPassedWaitersPollIsAnsweredFromTheDecisionsInMemory(t *testing.T) {
	t.Parallel()
	d := newDecidedRoom(t, 10, time.Minute)
	ctx := context.Background()
	// gone is absent at the step (present for a millisecond), bot is flagged: both passed; the
	// others present and admitted.
	d.enter(time.Millisecond, false, "gone")
	d.enter(time.Minute, true, "bot")
	d.enter(time.Minute, false, "ann", "bob", "cy")
	seenUntil := d.store.Client.ZScore(ctx, contract.RoomSeenKey(d.sale), "gone").Val()
	testenv.WaitFor(t, 5*time.Second, "Redis time past gone's presence", func() bool {
		return d.store.Client.Time(ctx).Val().UnixMilli() > int64(seenUntil)
	})
	g, store, _ := d.gateway(100 * time.Millisecond)

	// The first poll ticks: the step admits the three and passes gone and bot, and the tick
	// brings those decisions with the cursor.
	want := map[string]string{"ann": "admitted", "bob": "admitted", "cy": "admitted", "gone": "waiting", "bot": "waiting"}
	mem := map[string]Verdict{}
	for _, u := range []string{"ann", "bob", "cy", "gone", "bot"} {
		mem[u] = d.fromMemory(g, u)
		if mem[u].Answer.State != want[u] {
			t.Fatalf("%s: %+v, want %s", u, mem[u].Answer, want[u])
		}
	}
	if n := store.polls.Load(); n != 0 {
		t.Fatalf("%d polls of decided places reached Redis while their decisions were in memory", n)
	}
	if n := store.ticks.Load(); n != 1 {
		t.Fatalf("%d ticks, want the one", n)
	}
	if a := mem["gone"].Answer; a.Position != 1 || a.Ahead != 0 {
		t.Fatalf("gone, passed while absent: %+v, want first in line", a)
	}
	for _, u := range []string{"ann", "bob", "cy", "gone", "bot"} {
		sameAnswer(t, u, mem[u], d.redisAnswer(g, u))
	}
}

func TestAPollIsAnsweredFromADecisionTheOtherGatewaysStepMade(t *testing.T) {
	t.Parallel()
	d := newDecidedRoom(t, 10, time.Minute)
	d.enter(time.Minute, false, "ann", "bob")
	// A one-minute admit interval: the lease keeps B's tick from running a step of its own.
	a, storeA, _ := d.gateway(time.Minute)
	b, storeB, _ := d.gateway(time.Minute)
	if v := d.fromMemory(a, "ann"); v.Answer.State != "admitted" {
		t.Fatalf("ann through A: %+v", v.Answer)
	}
	before := d.store.Client.HGet(context.Background(), contract.RoomKey(d.sale), "last_ms").Val()
	for _, u := range []string{"ann", "bob"} {
		v := d.fromMemory(b, u)
		if v.Answer.State != "admitted" {
			t.Fatalf("%s through B: %+v", u, v.Answer)
		}
		sameAnswer(t, u, v, d.redisAnswer(b, u))
	}
	if after := d.store.Client.HGet(context.Background(), contract.RoomKey(d.sale), "last_ms").Val(); after != before {
		t.Fatalf("B ran a step (last_ms %s -> %s): the decisions were to be A's", before, after)
	}
	if p, tk := storeB.polls.Load(), storeB.ticks.Load(); p != 0 || tk != 1 {
		t.Fatalf("B: %d polls and %d ticks reached Redis, want none and one tick", p, tk)
	}
	if p := storeA.polls.Load(); p != 0 {
		t.Fatalf("A: %d polls reached Redis", p)
	}
}

func TestAGatewayWithoutTheDecisionInMemoryAsksRedisAndAnswersRight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDecidedRoom(t, 10, time.Minute)
	d.enter(time.Minute, false, "ann", "bob")
	a, _, _ := d.gateway(time.Minute)
	if v := d.fromMemory(a, "ann"); v.Answer.State != "admitted" {
		t.Fatalf("ann through A: %+v", v.Answer)
	}

	// A gateway started now reads the decisions the list still holds at its first tick.
	fresh, store, _ := d.gateway(time.Minute)
	sameAnswer(t, "ann after a restart", d.fromMemory(fresh, "ann"), d.redisAnswer(fresh, "ann"))
	if n := store.polls.Load(); n != 0 {
		t.Fatalf("%d polls reached Redis with the decision in the list", n)
	}

	// One the list no longer serves (its elements gone: trimmed, expired) starts with an
	// empty memory: the poll asks Redis, and is answered as Redis answers.
	if err := d.store.Client.Del(ctx, contract.RoomDecidedKey(d.sale)).Err(); err != nil {
		t.Fatal(err)
	}
	empty, store, _ := d.gateway(time.Minute)
	c, _, _ := empty.Room(ctx, d.sale)
	if _, _, ok := empty.FromMemory(ctx, d.sale, "bob", c, d.index["bob"]); ok {
		t.Fatal("bob's poll was answered from an empty memory")
	}
	if n := store.ticks.Load(); n != 1 {
		t.Fatalf("%d ticks, want one", n)
	}
	if got := d.redisAnswer(empty, "bob"); got.Answer.State != "admitted" {
		t.Fatalf("bob from Redis: %+v", got.Answer)
	}
}

func TestAPollAsksRedisOnceTheDecisionMayNoLongerHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// An admission within decidedMargin of its end: lapsed or used is Redis's to tell.
	short := newDecidedRoom(t, 10, decidedMargin)
	short.enter(time.Minute, false, "ann")
	g, _, _ := short.gateway(time.Minute)
	c, _, _ := g.Room(ctx, short.sale)
	if v, _, ok := g.FromMemory(ctx, short.sale, "ann", c, short.index["ann"]); ok {
		t.Fatalf("an admission about to end answered from memory: %+v", v.Answer)
	}

	// A buyer's admission ended by the step (x): his poll asks Redis, which answers used.
	d := newDecidedRoom(t, 10, time.Minute)
	d.enter(time.Minute, false, "ann", "bob")
	// No admit interval: every tick runs a step.
	g, _, next := d.gateway(0)
	if v := d.fromMemory(g, "ann"); v.Answer.State != "admitted" {
		t.Fatalf("ann: %+v", v.Answer)
	}
	if err := d.store.Client.HSet(ctx, contract.BuyersKey(d.sale), "ann", "order-1").Err(); err != nil {
		t.Fatal(err)
	}
	// The next tick's step samples the live admissions (at most 4 here: all) and ends ann's.
	next()
	if v := d.fromMemory(g, "bob"); v.Answer.State != "admitted" {
		t.Fatalf("bob: %+v", v.Answer)
	}
	if d.store.Client.ZScore(ctx, contract.RoomLiveKey(d.sale), "ann").Err() == nil {
		t.Fatal("the step did not end the buyer's admission")
	}
	c, _, _ = g.Room(ctx, d.sale)
	if v, _, ok := g.FromMemory(ctx, d.sale, "ann", c, d.index["ann"]); ok {
		t.Fatalf("a used admission answered from memory: %+v", v.Answer)
	}
	if got := d.redisAnswer(g, "ann"); got.Answer.State != "ended" || got.Answer.Reason != "used" {
		t.Fatalf("ann from Redis: %+v", got.Answer)
	}

	// While the backend runs the waitlist, its offers admit outside the steps: Redis answers.
	if err := d.store.Client.HSet(ctx, contract.RoomKey(d.sale), "waitlist", 1).Err(); err != nil {
		t.Fatal(err)
	}
	next()
	c, _, _ = g.Room(ctx, d.sale)
	if v, _, ok := g.FromMemory(ctx, d.sale, "bob", c, d.index["bob"]); ok {
		t.Fatalf("a decision answered from memory while the waitlist runs: %+v", v.Answer)
	}
}
