package core

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/edge"
	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/shardcache"
)

// fakeStore answers the decision script from a table per target and records the calls.
type fakeStore struct {
	mu      sync.Mutex
	verdict map[string]Verdict // target -> answer of the script
	err     error
	buyers  map[string]string // target + "/" + user -> order
	block   chan struct{}     // when set, Decide waits for it
	calls   []Purchase
}

func (s *fakeStore) Decide(ctx context.Context, p Purchase) (Verdict, []any, error) {
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, p)
	if s.err != nil {
		return Verdict{}, nil, s.err
	}
	v, ok := s.verdict[p.Target]
	if !ok {
		return Verdict{Outcome: UnknownSale}, nil, nil
	}
	if v.Outcome == Accepted {
		v.OrderID = p.OrderID
	}
	return v, nil, nil
}

func (s *fakeStore) Buyer(_ context.Context, target, user string) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	return s.buyers[target+"/"+user], nil
}

// fakeSoldOut is the sold-out memory.
type fakeSoldOut struct{ m map[string]bool }

func (f *fakeSoldOut) SoldOut(t string) bool                    { return f.m[t] }
func (f *fakeSoldOut) Generation(string) hcore.Generation       { return hcore.Generation{} }
func (f *fakeSoldOut) MarkSoldOut(t string, _ hcore.Generation) { f.m[t] = true }

var clock = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newDecider(store *fakeStore, kr *tokenformat.Keyring) (*Decider, *fakeSoldOut) {
	so := &fakeSoldOut{m: map[string]bool{}}
	n := 0
	return &Decider{
		Store: store, Caller: edge.Caller{Timeout: time.Second}, Shards: new(shardcache.Counts),
		SoldOut: so, Keyring: kr, Now: func() time.Time { return clock },
		NewOrderID: func() (string, error) { n++; return "order-" + string(rune('0'+n)), nil },
	}, so
}

func TestGateDecisionRules(t *testing.T) {
	kr := testKeyring(t, "k1")
	valid, _, _ := kr.Issue("s1", "u1", clock.Add(time.Minute))
	expired, _, _ := kr.Issue("s1", "u1", clock.Add(-time.Second))
	other, _, _ := kr.Issue("s2", "u1", clock.Add(time.Minute))
	cases := []struct {
		name      string
		sale      string
		user      string
		token     string
		tokens    bool
		verdict   map[string]Verdict
		soldOut   []string
		buyers    map[string]string
		storeErr  error
		want      Outcome
		wantOrder string
		wantCalls int
	}{
		{name: "no user", sale: "s1", want: Unauthenticated},
		{name: "bad user", sale: "s1", user: "u 1", want: BadRequest},
		{name: "bad sale", sale: "s/1", user: "u1", want: BadRequest},
		{name: "missing token", sale: "s1", user: "u1", tokens: true, want: InvalidToken},
		{name: "token of another sale", sale: "s1", user: "u1", token: other, tokens: true, want: InvalidToken},
		{name: "token of another user", sale: "s1", user: "u2", token: valid, tokens: true, want: InvalidToken},
		{name: "expired by the gateway clock", sale: "s1", user: "u1", token: expired, tokens: true, want: TokenExpired},
		{name: "valid token reaches the script", sale: "s1", user: "u1", token: valid, tokens: true,
			verdict: map[string]Verdict{"s1": {Outcome: Accepted}}, want: Accepted, wantOrder: "order-1", wantCalls: 1},
		{name: "accepted", sale: "s1", user: "u1", verdict: map[string]Verdict{"s1": {Outcome: Accepted}},
			want: Accepted, wantOrder: "order-1", wantCalls: 1},
		{name: "unknown sale", sale: "s1", user: "u1", want: UnknownSale, wantCalls: 1},
		{name: "paused", sale: "s1", user: "u1", verdict: map[string]Verdict{"s1": {Outcome: Paused}}, want: Paused, wantCalls: 1},
		{name: "expired by Redis TIME", sale: "s1", user: "u1", verdict: map[string]Verdict{"s1": {Outcome: TokenExpired}}, want: TokenExpired, wantCalls: 1},
		{name: "already bought", sale: "s1", user: "u1", verdict: map[string]Verdict{"s1": {Outcome: AlreadyBought, OrderID: "old"}},
			want: AlreadyBought, wantOrder: "old", wantCalls: 1},
		{name: "sold out from memory", sale: "s1", user: "u1", soldOut: []string{"s1"}, want: SoldOut},
		{name: "sold out from memory before the token is checked", sale: "s1", user: "u1", tokens: true, soldOut: []string{"s1"}, want: SoldOut},
		{name: "a buyer is told his order after sell-out", sale: "s1", user: "u1", soldOut: []string{"s1"},
			buyers: map[string]string{"s1/u1": "mine"}, want: AlreadyBought, wantOrder: "mine"},
		{name: "sold out even when the buyers read fails", sale: "s1", user: "u1", soldOut: []string{"s1"},
			storeErr: errors.New("down"), want: SoldOut},
		{name: "redis error", sale: "s1", user: "u1", storeErr: errors.New("down"), want: Unavailable, wantCalls: 1},
		{name: "sharded sale: decided on the user's shard", sale: "s1", user: "u1",
			verdict: map[string]Verdict{"s1": {Outcome: Sharded, Shards: 4}, contract.UserShardID("s1", "u1", 4): {Outcome: Accepted}},
			want:    Accepted, wantOrder: "order-1", wantCalls: 2},
		{name: "a shard answering sharded is an error", sale: "s1", user: "u1",
			verdict: map[string]Verdict{"s1": {Outcome: Sharded, Shards: 4}, contract.UserShardID("s1", "u1", 4): {Outcome: Sharded, Shards: 4}},
			want:    Unavailable, wantCalls: 2},
		{name: "sold-out shard from memory", sale: "s1", user: "u1", soldOut: []string{contract.UserShardID("s1", "u1", 4)},
			verdict: map[string]Verdict{"s1": {Outcome: Sharded, Shards: 4}}, want: SoldOut, wantCalls: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := &fakeStore{verdict: c.verdict, buyers: c.buyers, err: c.storeErr}
			var ring *tokenformat.Keyring
			if c.tokens {
				ring = kr
			}
			d, so := newDecider(store, ring)
			for _, s := range c.soldOut {
				so.m[s] = true
			}
			v, _, err := d.Decide(context.Background(), Request{Sale: c.sale, User: c.user, Token: c.token})
			if v.Outcome != c.want || v.OrderID != c.wantOrder {
				t.Fatalf("verdict %+v (err %v), want %s %q", v, err, c.want, c.wantOrder)
			}
			if (v.Outcome == Unavailable) != (err != nil) {
				t.Fatalf("err %v with outcome %s: an error goes with unavailable, and only then", err, v.Outcome)
			}
			if len(store.calls) != c.wantCalls {
				t.Fatalf("%d script calls, want %d", len(store.calls), c.wantCalls)
			}
		})
	}
}

func TestGateRemembersASoldOutAnswerAndForgetsAGoneShard(t *testing.T) {
	store := &fakeStore{verdict: map[string]Verdict{"s1": {Outcome: SoldOut}}}
	d, so := newDecider(store, nil)
	d.Decide(context.Background(), Request{Sale: "s1", User: "u1", Token: ""})
	if !so.m["s1"] {
		t.Fatal("a sold_out answer was not remembered")
	}
	d.Decide(context.Background(), Request{Sale: "s1", User: "u2", Token: ""})
	if len(store.calls) != 1 {
		t.Fatalf("%d script calls: the second buyer must be answered from memory", len(store.calls))
	}

	shard := contract.UserShardID("s2", "u1", 4)
	store = &fakeStore{verdict: map[string]Verdict{"s2": {Outcome: Sharded, Shards: 4}, shard: {Outcome: Accepted}}}
	d, _ = newDecider(store, nil)
	if v, _, _ := d.Decide(context.Background(), Request{Sale: "s2", User: "u1", Token: ""}); v.Target != shard {
		t.Fatalf("decided on %q, want the user's shard %q", v.Target, shard)
	}
	delete(store.verdict, shard) // the shard expired
	d.Decide(context.Background(), Request{Sale: "s2", User: "u1", Token: ""})
	if k := d.Shards.Of("s2"); k != 1 {
		t.Fatalf("a gone shard left the sale known as %d shards, want forgotten", k)
	}
}

func TestGateAnswersUnavailableAtItsDeadlineAndShedsBeyondMaxPending(t *testing.T) {
	store := &fakeStore{verdict: map[string]Verdict{"s1": {Outcome: Accepted}}, block: make(chan struct{})}
	defer close(store.block)
	d, _ := newDecider(store, nil)
	d.Caller = edge.Caller{Timeout: 20 * time.Millisecond, Pending: edge.NewPending(1)}
	v, _, err := d.Decide(context.Background(), Request{Sale: "s1", User: "u1", Token: ""})
	if v.Outcome != Unavailable || !errors.Is(err, edge.ErrTimeout) {
		t.Fatalf("a stalled store: %+v %v, want unavailable after the timeout", v, err)
	}
	// The stalled call still holds the only slot: the next request is shed at once.
	v, _, err = d.Decide(context.Background(), Request{Sale: "s1", User: "u2", Token: ""})
	if v.Outcome != Unavailable || !errors.Is(err, edge.ErrShed) {
		t.Fatalf("beyond max_pending: %+v %v, want shed", v, err)
	}
}

func TestGateParsesEveryScriptAnswer(t *testing.T) {
	cases := []struct {
		reply []any
		want  Outcome
		ok    bool
	}{
		{[]any{int64(0), "o1", int64(3)}, Accepted, true},
		{[]any{int64(0)}, "", false},
		{[]any{int64(1)}, UnknownSale, true},
		{[]any{int64(2)}, NotStarted, true},
		{[]any{int64(3)}, Ended, true},
		{[]any{int64(4)}, TokenUsed, true},
		{[]any{int64(5), "o1"}, AlreadyBought, true},
		{[]any{int64(5)}, "", false},
		{[]any{int64(6)}, SoldOut, true},
		{[]any{int64(8)}, Paused, true},
		{[]any{int64(9)}, TokenExpired, true},
		{[]any{int64(10)}, "", false},
		{[]any{"0"}, "", false},
		{nil, "", false},
	}
	for _, c := range cases {
		v, err := parseReply(c.reply)
		if (err == nil) != c.ok || (c.ok && v.Outcome != c.want) {
			t.Errorf("parseReply(%v) = %+v, %v; want %s ok=%v", c.reply, v, err, c.want, c.ok)
		}
	}
}

// testSecret is a token key used only by these tests.
const testSecret = "test-secret-test-secret-test-secret-0123"

func testKeyring(t testing.TB, ids ...string) *tokenformat.Keyring {
	t.Helper()
	var keys []tokenformat.Key
	for _, id := range ids {
		keys = append(keys, tokenformat.Key{ID: id, Secret: []byte(testSecret + id)})
	}
	kr, err := tokenformat.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}
