//go:build integration

package core

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	ululeredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// maxInAnyWindow is the largest number of instants that fit in one interval of length w
// (closed on the right, open on the left, like the exact tier's window).
func maxInAnyWindow(at []time.Time, w time.Duration) int {
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	best, lo := 0, 0
	for hi := range at {
		for at[hi].Sub(at[lo]) >= w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// sleepUntil waits for a point of the schedule (a schedule, not a wait for a condition).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// The boundary schedule: one request opens the window, limit-1 arrive just before the
// window ends and limit just after it. A fixed window admits all 2*limit, 2*limit-1 of them
// within 200ms; a sliding window never more than limit in any window.
func boundarySchedule(w time.Duration, limit int, send func()) {
	start := time.Now()
	send()
	sleepUntil(start.Add(w - 150*time.Millisecond))
	for i := 0; i < limit-1; i++ {
		send()
	}
	sleepUntil(start.Add(w + 50*time.Millisecond))
	for i := 0; i < limit; i++ {
		send()
	}
}

func TestSlidingWindowAdmitsAtMostLimitInAnyWindowAcrossABoundary(t *testing.T) {
	rdb := testenv.Redis(t)
	const limit, w = 10, time.Second
	l := NewLimiter(rdb, []Rule{{Name: testenv.ID("z"), Limit: limit, Window: w, LocalLimit: -1}}, time.Second)
	key := testenv.ID("k")
	var admitted []time.Time
	boundarySchedule(w, limit, func() {
		d := l.Decide(context.Background(), []string{key})
		if d.RedisErr != nil {
			t.Fatal(d.RedisErr)
		}
		if d.Allowed() {
			admitted = append(admitted, d.Results[0].AdmittedAt) // Redis time
		}
	})
	if got := maxInAnyWindow(admitted, w); got > limit {
		t.Fatalf("sliding window admitted %d requests within one %v window, limit %d", got, w, limit)
	}
	// It is not stingy either: the first request's slot came back after one window.
	if len(admitted) != limit+1 {
		t.Fatalf("admitted %d requests in total, want %d (limit, plus the slot freed by the first)", len(admitted), limit+1)
	}
}

func TestFixedWindowLimiterLetsTwiceTheLimitThroughAtTheBoundary(t *testing.T) {
	// The same schedule against ulule/limiter's fixed window (Redis store): the burst the
	// sliding window prevents.
	rdb := testenv.Redis(t)
	const limit, w = 10, time.Second
	store, err := ululeredis.NewStoreWithOptions(rdb, limiter.StoreOptions{Prefix: testenv.ID("ulule"), MaxRetry: 3})
	if err != nil {
		t.Fatal(err)
	}
	fixed := limiter.New(store, limiter.Rate{Period: w, Limit: limit})
	key := testenv.ID("k")
	var admitted []time.Time
	boundarySchedule(w, limit, func() {
		c, err := fixed.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Reached {
			admitted = append(admitted, time.Now())
		}
	})
	got := maxInAnyWindow(admitted, w)
	t.Logf("fixed window admitted %d of %d requests, %d within one %v window (limit %d)", len(admitted), 2*limit, got, w, limit)
	// On a quiet machine 2*limit-1; scheduling delays on a loaded one can move a few requests
	// out of the burst, but a fixed window still goes over the limit within one window.
	if got <= limit {
		t.Fatalf("expected the fixed window to admit more than the limit (about 2x) within one window, got %d", got)
	}
}

func TestTwoInstancesAdmitOneCombinedLimitPerKey(t *testing.T) {
	rdb := testenv.Redis(t)
	const limit = 25
	rule := Rule{Name: testenv.ID("z"), Limit: limit, Window: time.Minute}
	a := NewLimiter(rdb, []Rule{rule}, time.Second)
	b := NewLimiter(rdb, []Rule{rule}, time.Second)
	b.Store.(*RedisStore).AutoPipeline = true // one instance coalesces its calls, the other pipelines per request
	key := testenv.ID("u")
	var admitted [2]atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			inst := []*Limiter{a, b}[g%2]
			for i := 0; i < 100; i++ {
				d := inst.Decide(context.Background(), []string{key})
				if d.RedisErr != nil {
					t.Error(d.RedisErr)
					return
				}
				if d.Allowed() {
					admitted[g%2].Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	ta, tb := admitted[0].Load(), admitted[1].Load()
	if ta+tb != limit {
		t.Fatalf("two instances admitted %d + %d = %d, want a combined %d", ta, tb, ta+tb, limit)
	}
}

func TestRefusedRequestsDoNotPushTheRetryTimeAway(t *testing.T) {
	rdb := testenv.Redis(t)
	zone := testenv.ID("z")
	rule := Rule{Name: zone, Limit: 2, Window: 2 * time.Second, LocalLimit: -1}
	key := testenv.ID("k")
	first := NewLimiter(rdb, []Rule{rule}, time.Second)
	first.Decide(context.Background(), []string{key})
	first.Decide(context.Background(), []string{key})
	// Fresh limiters (no blocklist) hammer while over the limit: every refusal reaches Redis.
	for i := 0; i < 20; i++ {
		d := NewLimiter(rdb, []Rule{rule}, time.Second).Decide(context.Background(), []string{key})
		if d.Allowed() {
			t.Fatal("admitted over the limit")
		}
	}
	if n := logLen(t, rdb, contract.ThrottleKey(zone, key)); n != 2 {
		t.Fatalf("the window holds %d entries, want 2: refusals must not be recorded", n)
	}
	testenv.WaitFor(t, 5*time.Second, "the window to free a slot", func() bool {
		return NewLimiter(rdb, []Rule{rule}, time.Second).Decide(context.Background(), []string{key}).Allowed()
	})
}

func TestEveryThrottleKeyExpires(t *testing.T) {
	rdb := testenv.Redis(t)
	zone := testenv.ID("z")
	key := testenv.ID("k")
	l := NewLimiter(rdb, []Rule{{Name: zone, Limit: 1, Window: 30 * time.Second, LocalLimit: -1,
		Ban: BanRule{Strikes: 5, Within: time.Minute, Duration: time.Hour}}}, time.Second)
	l.Decide(context.Background(), []string{key})
	l.Decide(context.Background(), []string{key}) // refused: creates the strike hash
	ctx := context.Background()
	for _, k := range []string{contract.ThrottleKey(zone, key), contract.ThrottleKey(zone, key) + ":ban"} {
		ttl := rdb.PTTL(ctx, k).Val()
		if ttl <= 0 || ttl > time.Minute+time.Second {
			t.Errorf("%s: PTTL %v, want a TTL of at most the window or the strike memory", k, ttl)
		}
	}
}

func TestARefusalByOneZoneGivesBackWhatTheOtherZonesCounted(t *testing.T) {
	rdb := testenv.Redis(t)
	ipZone, userZone := testenv.ID("ip"), testenv.ID("user")
	l := NewLimiter(rdb, []Rule{
		{Name: ipZone, Limit: 100, Window: time.Minute, LocalLimit: -1},
		{Name: userZone, Limit: 1, Window: time.Minute, LocalLimit: -1},
	}, time.Second)
	// Rules are tightest first: user, then ip.
	if l.Rules()[0].Name != userZone {
		t.Fatal("the tighter zone must come first")
	}
	ip, user := testenv.ID("ip"), testenv.ID("u")
	if d := l.Decide(context.Background(), []string{user, ip}); !d.Allowed() {
		t.Fatalf("first request refused: %+v", d)
	}
	// A second limiter (no blocklist) so the request reaches Redis for both zones.
	d := NewLimiter(rdb, []Rule{
		{Name: ipZone, Limit: 100, Window: time.Minute, LocalLimit: -1},
		{Name: userZone, Limit: 1, Window: time.Minute, LocalLimit: -1},
	}, time.Second).Decide(context.Background(), []string{user, ip})
	if d.Allowed() || d.Status != 429 || d.Results[0].Outcome != Limited || d.Results[1].Outcome != Allowed {
		t.Fatalf("want user zone limited, ip zone admitted then refunded: %+v", d)
	}
	testenv.WaitFor(t, 2*time.Second, "the ip zone's refund", func() bool {
		return logLen(t, rdb, contract.ThrottleKey(ipZone, ip)) == 1
	})
}

func TestShadowZonesCountButNeverRefuse(t *testing.T) {
	rdb := testenv.Redis(t)
	l := NewLimiter(rdb, []Rule{{Name: testenv.ID("z"), Limit: 2, Window: time.Minute, Shadow: true}}, time.Second)
	key := testenv.ID("k")
	var shadow int
	for i := 0; i < 10; i++ {
		d := l.Decide(context.Background(), []string{key})
		if !d.Allowed() {
			t.Fatalf("a shadow zone refused request %d", i)
		}
		if d.Results[0].Outcome == ShadowLimited {
			shadow++
		}
	}
	if shadow != 8 {
		t.Fatalf("%d requests reported shadow_limited, want 8", shadow)
	}
}

// commandCalls sums INFO commandstats calls of the given commands.
func commandCalls(t *testing.T, rdb *redis.Client, cmds ...string) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		for _, c := range cmds {
			prefix := "cmdstat_" + c + ":calls="
			if strings.HasPrefix(line, prefix) {
				n, _ := strconv.ParseInt(strings.SplitN(line[len(prefix):], ",", 2)[0], 10, 64)
				total += n
			}
		}
	}
	return total
}

func TestAFloodFromOneKeyCostsRedisAHandfulOfCalls(t *testing.T) {
	srv := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	const limit, flood, workers = 5, 50_000, 16
	// A generous timeout: a call past it fails open, which counts as admitted, and on a loaded
	// machine (two cores, -race) a call once took longer than a second (6 admitted of 5).
	l := NewLimiter(rdb, []Rule{{Name: "flood", Limit: limit, Window: time.Minute}}, 30*time.Second)
	before := commandCalls(t, rdb, "evalsha", "eval", "zrem")
	var admitted, local atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < flood/workers; i++ {
				d := l.Decide(context.Background(), []string{"203.0.113.9"})
				if d.Allowed() {
					admitted.Add(1)
				} else if d.Results[0].Outcome == LocalHit {
					local.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	calls := commandCalls(t, rdb, "evalsha", "eval", "zrem") - before
	t.Logf("%d requests: %d admitted, %d answered locally, %d script calls reached Redis", flood, admitted.Load(), local.Load(), calls)
	if admitted.Load() != limit {
		t.Fatalf("admitted %d, want %d", admitted.Load(), limit)
	}
	// limit admissions, at most limit refusals in flight when the window filled, and a
	// NOSCRIPT retry per concurrent first call.
	if bound := int64(2*limit + workers); calls > bound {
		t.Fatalf("Redis received %d script calls for one flooding key, want at most %d", calls, bound)
	}
}

func TestABannedKeyIsRefusedOnEveryInstanceUntilTheBanEnds(t *testing.T) {
	rdb := testenv.Redis(t)
	// Windows long enough that a loaded CI machine does not slide them between two calls.
	rule := Rule{Name: testenv.ID("z"), Limit: 1, Window: time.Second,
		Ban: BanRule{Strikes: 2, Within: time.Minute, Duration: 2500 * time.Millisecond}}
	a := NewLimiter(rdb, []Rule{rule}, time.Second)
	b := NewLimiter(rdb, []Rule{rule}, time.Second)
	key := testenv.ID("k")
	decide := func(l *Limiter) Decision { return l.Decide(context.Background(), []string{key}) }

	// Two over-limit episodes on instance a.
	for strike := 1; strike <= 2; strike++ {
		testenv.WaitFor(t, 4*time.Second, "an admission", func() bool { return decide(a).Allowed() })
		d := decide(a)
		if d.Allowed() {
			t.Fatal("second request in the window admitted")
		}
		if strike == 1 && d.Banned {
			t.Fatal("banned after one violation, want two")
		}
		if strike == 2 && (!d.Banned || d.Results[0].Outcome != Banned) {
			t.Fatalf("not banned after the second violation: %+v", d.Results[0])
		}
	}
	bannedAt := time.Now()
	// The ban holds on both instances, a from its blocklist, b from Redis, and outlasts the
	// window: both say so with a retry time longer than it (no sleep needed to see it).
	if d := decide(a); d.Allowed() || !d.Banned || d.Results[0].Outcome != LocalHit || d.RetryAfter <= rule.Window {
		t.Fatalf("instance a must refuse the banned key locally beyond the window: %+v", d.Results[0])
	}
	if d := decide(b); d.Allowed() || !d.Banned || d.Results[0].Outcome != Banned || d.RetryAfter <= rule.Window {
		t.Fatalf("instance b must refuse the banned key beyond the window: %+v", d.Results[0])
	}
	testenv.WaitFor(t, 5*time.Second, "the ban to end on a", func() bool { return decide(a).Allowed() })
	testenv.WaitFor(t, 5*time.Second, "the ban to end on b", func() bool { return decide(b).Allowed() })
	if since := time.Since(bannedAt); since < 2*time.Second {
		t.Fatalf("the ban lasted %v, want about 2.5s", since)
	}
}

func TestRedisDownAppliesEachZonesFailurePolicy(t *testing.T) {
	srv := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	l := NewLimiter(rdb, []Rule{
		{Name: "open", Limit: 100, Window: time.Minute},
		{Name: "closed", Limit: 100, Window: time.Minute, FailClosed: true},
	}, 200*time.Millisecond)
	l.Store.(*RedisStore).AutoPipeline = true
	open := l.Decide(context.Background(), []string{"k", ""})
	if !open.Allowed() || open.RedisErr != nil {
		t.Fatalf("with Redis up: %+v", open)
	}
	srv.Kill()
	open = l.Decide(context.Background(), []string{"k", ""})
	if !open.Allowed() || open.RedisErr == nil || open.Results[0].Outcome != FailedOpen {
		t.Fatalf("fail_open zone with Redis down: %+v", open)
	}
	closed := l.Decide(context.Background(), []string{"", "k"})
	if closed.Status != 503 || closed.RetryAfter <= 0 || closed.Results[1].Outcome != FailedClosed {
		t.Fatalf("fail_closed zone with Redis down: %+v", closed)
	}
	srv.Start()
	testenv.WaitFor(t, 5*time.Second, "decisions from Redis again", func() bool {
		d := l.Decide(context.Background(), []string{"", "k"})
		return d.Allowed() && d.Results[1].Outcome == Allowed
	})
}

func TestAStalledRedisHoldsAtMostMaxPendingDecisions(t *testing.T) {
	srv := testenv.StartRedis(t) // private: the test stalls it
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	l := NewLimiter(rdb, []Rule{{Name: "stall", Limit: 1000, Window: time.Minute, LocalLimit: -1}}, 100*time.Millisecond)
	l.Store.(*RedisStore).AutoPipeline = true
	l.Pending = edge.NewPending(3)
	if d := l.Decide(context.Background(), []string{"warm"}); !d.Allowed() || d.RedisErr != nil {
		t.Fatalf("before the stall: %+v", d)
	}
	before := commandCalls(t, rdb, "evalsha", "eval")
	if err := rdb.Do(context.Background(), "CLIENT", "PAUSE", "2000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	var shed, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := l.Decide(context.Background(), []string{"k" + strconv.Itoa(i)})
			if !d.Allowed() || d.Results[0].Outcome != FailedOpen {
				t.Errorf("stalled Redis, fail_open zone: %+v", d.Results[0])
			}
			if errors.Is(d.RedisErr, ErrShed) {
				shed.Add(1)
			} else if d.RedisErr != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	_ = rdb.Do(context.Background(), "CLIENT", "UNPAUSE").Err()
	testenv.WaitFor(t, 10*time.Second, "the stalled calls finish", func() bool { return l.Pending.Len() == 0 })
	sent := commandCalls(t, rdb, "evalsha", "eval") - before
	t.Logf("50 decisions during the stall: %d shed, %d timed out, %d script calls reached Redis", shed.Load(), failed.Load(), sent)
	if shed.Load() < 50-3 {
		t.Fatalf("only %d of 50 decisions were shed with max_pending 3", shed.Load())
	}
	if sent > 3+3 { // the stalled calls, and a NOSCRIPT retry each at worst
		t.Fatalf("%d script calls reached Redis with max_pending 3", sent)
	}
}
