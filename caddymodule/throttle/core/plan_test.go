package core

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeStore is the exact tier in memory: a fixed reply per counter key (default admitted),
// recording every round trip and refund.
type fakeStore struct {
	mu      sync.Mutex
	replies map[string]Reply
	err     error
	trips   [][]Call
	undone  chan []Refund
}

func (s *fakeStore) Eval(_ context.Context, calls []Call) ([]Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trips = append(s.trips, calls)
	if s.err != nil {
		return nil, s.err
	}
	out := make([]Reply, len(calls))
	for i, c := range calls {
		r, ok := s.replies[c.Key]
		if !ok {
			r = Reply{Status: 0, Remaining: 5, Reset: time.Second, Member: "1700000000000000-0"}
		}
		out[i] = r
	}
	return out, nil
}

func (s *fakeStore) Undo(_ context.Context, rs []Refund) error {
	if s.undone != nil {
		s.undone <- rs
	}
	return nil
}

func fakeLimiter(store *fakeStore, rules ...Rule) *Limiter {
	l := NewLimiterOn(store, rules, time.Second)
	l.Now = func() time.Time { return t0 }
	return l
}

func limited(retry time.Duration) Reply { return Reply{Status: 1, Retry: retry, Reset: retry} }

func TestThrottleMergeRules(t *testing.T) {
	ip := Rule{Name: "ip", Limit: 100, Window: time.Minute, LocalLimit: -1}
	user := Rule{Name: "user", Limit: 10, Window: time.Minute, LocalLimit: -1}
	cases := []struct {
		name       string
		rules      []Rule
		keys       []string // in Rules() order: user (tighter) first
		replies    map[string]Reply
		err        error
		status     int
		retry      time.Duration
		banned     bool
		outcomes   []Outcome
		undo       int // admissions given back
		redisCalls int
	}{
		{name: "admitted", rules: []Rule{user}, keys: []string{"u1"}, outcomes: []Outcome{Allowed}, redisCalls: 1},
		{name: "no key: zone skipped, no call", rules: []Rule{user}, keys: []string{""}, outcomes: []Outcome{Skipped}},
		{name: "limited", rules: []Rule{user}, keys: []string{"u1"},
			replies: map[string]Reply{"seckill:rl:{user:u1}": limited(3 * time.Second)},
			status:  429, retry: 3 * time.Second, outcomes: []Outcome{Limited}, redisCalls: 1},
		{name: "banned", rules: []Rule{user}, keys: []string{"u1"},
			replies: map[string]Reply{"seckill:rl:{user:u1}": {Status: 2, Retry: time.Hour}},
			status:  429, retry: time.Hour, banned: true, outcomes: []Outcome{Banned}, redisCalls: 1},
		{name: "shadow never refuses", rules: []Rule{{Name: "user", Limit: 10, Window: time.Minute, LocalLimit: -1, Shadow: true}}, keys: []string{"u1"},
			replies:  map[string]Reply{"seckill:rl:{user:u1}": limited(time.Second)},
			outcomes: []Outcome{ShadowLimited}, redisCalls: 1},
		{name: "one zone refuses: the other's admission is given back", rules: []Rule{ip, user}, keys: []string{"u1", "1.2.3.4"},
			replies: map[string]Reply{"seckill:rl:{user:u1}": limited(2 * time.Second)},
			status:  429, retry: 2 * time.Second, outcomes: []Outcome{Limited, Allowed}, undo: 1, redisCalls: 1},
		{name: "the longest retry of two refusals", rules: []Rule{ip, user}, keys: []string{"u1", "1.2.3.4"},
			replies: map[string]Reply{"seckill:rl:{user:u1}": limited(2 * time.Second), "seckill:rl:{ip:1.2.3.4}": limited(5 * time.Second)},
			status:  429, retry: 5 * time.Second, outcomes: []Outcome{Limited, Limited}, redisCalls: 1},
		{name: "redis down: fail open", rules: []Rule{user}, keys: []string{"u1"}, err: errors.New("down"),
			outcomes: []Outcome{FailedOpen}, redisCalls: 1},
		{name: "redis down: fail closed answers 503", rules: []Rule{{Name: "user", Limit: 10, Window: time.Minute, LocalLimit: -1, FailClosed: true}},
			keys: []string{"u1"}, err: errors.New("down"), status: 503, retry: time.Second, outcomes: []Outcome{FailedClosed}, redisCalls: 1},
		{name: "a short reply is a failure", rules: []Rule{ip, user}, keys: []string{"u1", "1.2.3.4"}, err: errReply,
			outcomes: []Outcome{FailedOpen, FailedOpen}, redisCalls: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := &fakeStore{replies: c.replies, err: c.err, undone: make(chan []Refund, 1)}
			l := fakeLimiter(store, c.rules...)
			d := l.Decide(context.Background(), c.keys)
			if d.Status != c.status || d.RetryAfter != c.retry || d.Banned != c.banned {
				t.Fatalf("decision %d retry %v banned %v, want %d %v %v", d.Status, d.RetryAfter, d.Banned, c.status, c.retry, c.banned)
			}
			for i, want := range c.outcomes {
				if got := d.Results[i].Outcome; got != want {
					t.Errorf("zone %s: %q, want %q", d.Results[i].Rule.Name, got, want)
				}
			}
			if len(store.trips) != c.redisCalls {
				t.Fatalf("%d round trips, want %d", len(store.trips), c.redisCalls)
			}
			if c.undo > 0 {
				select {
				case rs := <-store.undone:
					if len(rs) != c.undo {
						t.Fatalf("gave back %v, want %d admissions", rs, c.undo)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the admission of the other zone was never given back")
				}
			}
		})
	}
}

// A refused key is answered from the blocklist until Redis's retry time, without a call, and
// asks Redis again from then on (the clock is the limiter's Now: no sleeping).
func TestARefusedKeyIsAnsweredLocallyUntilItsRetryTime(t *testing.T) {
	store := &fakeStore{replies: map[string]Reply{"seckill:rl:{user:u1}": limited(2 * time.Second)}}
	l := fakeLimiter(store, Rule{Name: "user", Limit: 1, Window: time.Minute, LocalLimit: -1})
	now := t0
	l.Now = func() time.Time { return now }
	l.Decide(context.Background(), []string{"u1"})
	now = t0.Add(1999 * time.Millisecond)
	if d := l.Decide(context.Background(), []string{"u1"}); d.Results[0].Outcome != LocalHit || d.RetryAfter != time.Millisecond {
		t.Fatalf("before the retry time: %+v, want a local hit retrying in 1ms", d.Results[0])
	}
	if len(store.trips) != 1 {
		t.Fatalf("%d round trips, want 1: the blocklist must answer", len(store.trips))
	}
	now = t0.Add(2 * time.Second)
	delete(store.replies, "seckill:rl:{user:u1}")
	if d := l.Decide(context.Background(), []string{"u1"}); !d.Allowed() || len(store.trips) != 2 {
		t.Fatalf("at the retry time: %+v after %d trips, want Redis asked again and admitting", d.Results[0], len(store.trips))
	}
}

// The flood shield sends one probe per episode to Redis and refuses the rest locally; Redis's
// admission of the probe clears the provisional entry.
func TestTheShieldSendsOneProbePerEpisode(t *testing.T) {
	store := &fakeStore{replies: map[string]Reply{}}
	l := fakeLimiter(store, Rule{Name: "user", Limit: 2, Window: time.Minute})
	for range 2 {
		if d := l.Decide(context.Background(), []string{"u1"}); !d.Allowed() {
			t.Fatalf("under the limit: %+v", d.Results[0])
		}
	}
	store.replies["seckill:rl:{user:u1}"] = limited(10 * time.Second)
	if d := l.Decide(context.Background(), []string{"u1"}); d.Status != 429 || d.Results[0].Outcome != Limited {
		t.Fatalf("the probe: %+v, want Redis's refusal", d.Results[0])
	}
	for range 5 {
		if d := l.Decide(context.Background(), []string{"u1"}); d.Results[0].Outcome != LocalHit {
			t.Fatalf("after the probe: %+v, want a local hit", d.Results[0])
		}
	}
	if len(store.trips) != 3 {
		t.Fatalf("%d round trips, want 2 admissions and 1 probe", len(store.trips))
	}
}

// Without Redis the shield has the last word on its refusals, and keeps counting admissions.
func TestRedisDownTheShieldStillHoldsEachKeyToItsLocalLimit(t *testing.T) {
	store := &fakeStore{err: errors.New("down")}
	l := fakeLimiter(store, Rule{Name: "user", Limit: 3, Window: time.Minute})
	admitted := 0
	for range 10 {
		if l.Decide(context.Background(), []string{"u1"}).Allowed() {
			admitted++
		}
	}
	if admitted != 3 {
		t.Fatalf("%d admitted with Redis down, want the local limit 3", admitted)
	}
}

// A joint skipped by the next handler (it answered from its memory) asks Redis nothing and
// counts nothing there: the blocklist still refuses a blocked key, and the shield still holds
// each key to its local limit (refusing locally where it would have probed).
func TestASkippedJointAsksRedisNothingAndKeepsTheLocalTiers(t *testing.T) {
	store := &fakeStore{replies: map[string]Reply{"seckill:rl:{user:banned}": {Status: 2, Retry: time.Minute, Reset: time.Minute}}}
	l := fakeLimiter(store, Rule{Name: "user", Limit: 2, Window: time.Minute},
		Rule{Name: "ip", Limit: 100, Window: time.Second, Shadow: true})
	// Learn the ban (keys in Rules order: user, the tighter, first).
	if d := l.Decide(context.Background(), []string{"banned", "ip1"}); d.Status != 429 || !d.Banned {
		t.Fatalf("the ban from Redis: %+v", d)
	}
	trips := len(store.trips)
	var j Joint
	if !l.DeferTo(&j, []string{"banned", "ip1"}) || j.Decision().Status != 429 || !j.Decision().Banned {
		t.Fatalf("a banned key: %+v, want refused by the blocklist before any script", j.Decision())
	}
	for n := range 3 {
		if l.DeferTo(&j, []string{"u1", "ip1"}) {
			t.Fatalf("skip %d settled before the next handler: %+v", n, j.Decision())
		}
		d := j.Skip()
		want := 0
		if n >= 2 {
			want = 429 // over the shield's local limit of 2 a minute
		}
		if d.Status != want {
			t.Fatalf("skip %d: status %d, want %d (%+v)", n, d.Status, want, d.Results)
		}
		if want == 0 && (d.Results[0].Outcome != Skipped || d.Results[1].Outcome != Skipped) {
			t.Fatalf("skip %d counted an outcome: %+v", n, d.Results)
		}
		if want != 0 && (d.Results[0].Outcome != LocalHit || d.RetryAfter <= 0) {
			t.Fatalf("skip %d: %+v, want the user zone's local refusal with a retry time", n, d.Results)
		}
	}
	// The shield's refusal left its provisional blocklist entry: the next one is refused first.
	if !l.DeferTo(&j, []string{"u1", "ip1"}) || j.Decision().Status != 429 {
		t.Fatalf("after the shield's refusal: %+v, want the blocklist's", j.Decision())
	}
	if len(store.trips) != trips {
		t.Fatalf("%d round trips for skipped joints, want none", len(store.trips)-trips)
	}
}
