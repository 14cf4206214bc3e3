//go:build integration

package core

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// logLen is the number of admissions a zone's log holds, in either form (lua/throttle.lua):
// a compact string of 8-byte timestamps or a sorted set.
func logLen(t testing.TB, rdb redis.Cmdable, key string) int64 {
	t.Helper()
	ctx := context.Background()
	switch kind := rdb.Type(ctx, key).Val(); kind {
	case "none":
		return 0
	case "string":
		return int64(len(rdb.Get(ctx, key).Val()) / 8)
	case "zset":
		return rdb.ZCard(ctx, key).Val()
	default:
		t.Fatalf("%s is a %s", key, kind)
		return 0
	}
}

// packed is a compact log holding the given timestamps (µs).
func packed(ts ...int64) string {
	b := make([]byte, 0, 8*len(ts))
	for _, v := range ts {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(v)))
	}
	return string(b)
}

func unpacked(s string) []int64 {
	var out []int64
	for i := 0; i+8 <= len(s); i += 8 {
		out = append(out, int64(math.Float64frombits(binary.LittleEndian.Uint64([]byte(s[i:i+8])))))
	}
	return out
}

func redisNow(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMicro()
}

// zoneArgs are one zone's keys and arguments for the script.
type zoneArgs struct {
	key             string
	limit           int
	window          time.Duration
	strikes         int
	strikeMs, banUs int64
}

func throttleCall(t *testing.T, rdb *redis.Client, zones ...zoneArgs) []Reply {
	t.Helper()
	var keys []string
	var args []any
	for _, z := range zones {
		keys = append(keys, z.key, z.key+":ban")
		args = append(args, z.limit, z.window.Microseconds(), z.strikes, max(z.strikeMs, 1), z.banUs)
	}
	v, err := lua.Throttle.Run(context.Background(), rdb, keys, args...).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 5*len(zones) {
		t.Fatalf("reply of %d items for %d zones", len(v), len(zones))
	}
	out := make([]Reply, len(zones))
	for i := range zones {
		if out[i], err = parseReply(v[5*i : 5*i+5]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestCompactLogForgetsAnEntryExactlyOneWindowOldAndKeepsYoungerOnes(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	key := contract.ThrottleKey(testenv.ID("z"), testenv.ID("k"))
	w := 10 * time.Second
	now := redisNow(t, rdb)
	// At the script's time (>= now), the first entry is at or before now - window: it has left
	// the window; the next two are 5 s and 1 s old: still in it.
	rdb.Set(ctx, key, packed(now-w.Microseconds(), now-5_000_000, now-1_000_000), time.Minute)
	r := throttleCall(t, rdb, zoneArgs{key: key, limit: 3, window: w})[0]
	if r.Status != 0 || r.Remaining != 0 {
		t.Fatalf("two live entries and limit 3: want admitted with 0 remaining, got %+v", r)
	}
	if r.Reset > 5*time.Second || r.Reset < 4*time.Second {
		t.Fatalf("reset %v, want about 5 s (the 5 s old entry leaves first)", r.Reset)
	}
	log := unpacked(rdb.Get(ctx, key).Val())
	if len(log) != 3 || log[0] != now-5_000_000 || log[1] != now-1_000_000 || log[2] < now {
		t.Fatalf("log after the admission %v: want the two live entries then the new one (>= %d)", log, now)
	}
	if strconv.FormatInt(log[2], 10) != r.Member {
		t.Fatalf("member %q, want the admission's timestamp %d", r.Member, log[2])
	}
	r = throttleCall(t, rdb, zoneArgs{key: key, limit: 3, window: w})[0]
	if r.Status != 1 || r.Retry < 4*time.Second || r.Retry > 5*time.Second || r.Member != "" {
		t.Fatalf("full window: want limited with retry about 5 s and no member, got %+v", r)
	}
	if n := logLen(t, rdb, key); n != 3 {
		t.Fatalf("a refusal changed the log to %d entries", n)
	}
}

func TestCompactLogHoldsExactlyItsLimitUpTo128AndASortedSetAbove(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	for _, c := range []struct {
		limit int
		kind  string
	}{{1, "string"}, {128, "string"}, {129, "zset"}} {
		key := contract.ThrottleKey(testenv.ID("z"), testenv.ID("k"))
		admitted := 0
		for i := 0; i < c.limit+5; i++ {
			if throttleCall(t, rdb, zoneArgs{key: key, limit: c.limit, window: time.Minute})[0].Status == 0 {
				admitted++
			}
		}
		if admitted != c.limit {
			t.Fatalf("limit %d: admitted %d of %d", c.limit, admitted, c.limit+5)
		}
		if kind := rdb.Type(ctx, key).Val(); kind != c.kind {
			t.Fatalf("limit %d: the log is a %s, want a %s", c.limit, kind, c.kind)
		}
		if c.kind == "string" && len(rdb.Get(ctx, key).Val()) != 8*c.limit {
			t.Fatalf("limit %d: %d bytes, want 8 per admission", c.limit, len(rdb.Get(ctx, key).Val()))
		}
	}
}

func TestCompactLogExpiresOneWindowAfterTheLastAdmission(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	key := contract.ThrottleKey(testenv.ID("z"), testenv.ID("k"))
	w := 300 * time.Millisecond
	throttleCall(t, rdb, zoneArgs{key: key, limit: 2, window: w})
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > w+time.Millisecond {
		t.Fatalf("PTTL %v, want (0, %v]", ttl, w+time.Millisecond)
	}
	testenv.WaitFor(t, 5*time.Second, "the log to expire", func() bool { return rdb.Exists(ctx, key).Val() == 0 })
	// Then the key is new: the whole limit again.
	for i := 0; i < 2; i++ {
		if r := throttleCall(t, rdb, zoneArgs{key: key, limit: 2, window: w})[0]; r.Status != 0 {
			t.Fatalf("admission %d after expiry refused: %+v", i+1, r)
		}
	}
}

func TestALogChangesFormWithoutForgettingItsAdmissions(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	// A sorted-set log (limit was 200) used with limit 3: two live members and one expired.
	key := contract.ThrottleKey(testenv.ID("z"), testenv.ID("k"))
	now := redisNow(t, rdb)
	rdb.ZAdd(ctx, key, redis.Z{Score: float64(now - 120_000_000), Member: "old-0"},
		redis.Z{Score: float64(now - 2_000_000), Member: "a-1"}, redis.Z{Score: float64(now - 1_000_000), Member: "b-2"})
	rdb.Expire(ctx, key, time.Minute)
	if r := throttleCall(t, rdb, zoneArgs{key: key, limit: 3, window: time.Minute})[0]; r.Status != 0 || r.Remaining != 0 {
		t.Fatalf("want the third admission of 3 (two kept from the sorted set), got %+v", r)
	}
	if r := throttleCall(t, rdb, zoneArgs{key: key, limit: 3, window: time.Minute})[0]; r.Status != 1 {
		t.Fatalf("fourth request admitted: the converted log forgot admissions (%+v)", r)
	}
	if rdb.Type(ctx, key).Val() != "string" || logLen(t, rdb, key) != 3 {
		t.Fatalf("want a compact log of 3, got a %s of %d", rdb.Type(ctx, key).Val(), logLen(t, rdb, key))
	}
	// And back: the limit raised to 200 makes it a sorted set again, with the 3 admissions.
	if r := throttleCall(t, rdb, zoneArgs{key: key, limit: 200, window: time.Minute})[0]; r.Status != 0 || r.Remaining != 200-4 {
		t.Fatalf("limit 200 after 3 admissions: want admitted with %d remaining, got %+v", 200-4, r)
	}
	if rdb.Type(ctx, key).Val() != "zset" || logLen(t, rdb, key) != 4 {
		t.Fatalf("want a sorted set of 4, got a %s of %d", rdb.Type(ctx, key).Val(), logLen(t, rdb, key))
	}
}

func TestARefundRemovesExactlyTheOverruledAdmissionAndKeepsTheTTL(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	for _, limit := range []int{5, 200} { // compact and sorted set
		key := contract.ThrottleKey(testenv.ID("z"), testenv.ID("k"))
		var members []string
		for i := 0; i < 3; i++ {
			members = append(members, throttleCall(t, rdb, zoneArgs{key: key, limit: limit, window: time.Minute})[0].Member)
		}
		store := &RedisStore{R: rdb}
		if err := store.Undo(ctx, []Refund{{Key: key, Member: members[1]}}); err != nil {
			t.Fatal(err)
		}
		if n := logLen(t, rdb, key); n != 2 {
			t.Fatalf("limit %d: %d admissions after one refund of 3, want 2", limit, n)
		}
		if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 {
			t.Fatalf("limit %d: the refund dropped the TTL (%v)", limit, ttl)
		}
		// A refund of an admission that is no longer there changes nothing.
		if err := store.Undo(ctx, []Refund{{Key: key, Member: members[1]}}); err != nil || logLen(t, rdb, key) != 2 {
			t.Fatalf("limit %d: a second refund of the same admission: %v, %d left", limit, err, logLen(t, rdb, key))
		}
	}
}

func TestOneScriptCallDecidesEachZoneAsSeparateCallsWould(t *testing.T) {
	rdb := testenv.Redis(t)
	user := contract.ThrottleKey(testenv.ID("user"), "u")
	ip := contract.ThrottleKey(testenv.ID("ip"), "1.2.3.4")
	zones := []zoneArgs{{key: user, limit: 1, window: time.Minute}, {key: ip, limit: 150, window: time.Minute}}
	r := throttleCall(t, rdb, zones...)
	if r[0].Status != 0 || r[1].Status != 0 || r[0].Remaining != 0 || r[1].Remaining != 149 {
		t.Fatalf("first request: %+v", r)
	}
	r = throttleCall(t, rdb, zones...)
	if r[0].Status != 1 || r[1].Status != 0 || r[1].Remaining != 148 {
		t.Fatalf("second request: want user limited, ip admitted (the caller refunds it): %+v", r)
	}
	// Keys and arguments that do not pair up are refused before anything is written.
	err := lua.Throttle.Run(context.Background(), rdb, []string{user, user + ":ban", ip}, 1, 60_000_000, 0, 1, 0).Err()
	if err == nil {
		t.Fatal("3 keys for one zone's arguments: want an error")
	}
}

// Two instances, several zones per request (merged into one script call on this standalone
// Redis), many goroutines: each key is admitted at most its limit, and once the refunds of
// overruled admissions have landed, the shared IP zone's log holds exactly the requests that
// passed.
func TestTwoInstancesStayExactWithSeveralZonesInOneScript(t *testing.T) {
	rdb := testenv.Redis(t)
	other := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr})
	t.Cleanup(func() { _ = other.Close() })
	userZone, ipZone := testenv.ID("user"), testenv.ID("ip")
	rules := []Rule{{Name: userZone, Limit: 3, Window: time.Minute, LocalLimit: -1}, {Name: ipZone, Limit: 20, Window: time.Minute, LocalLimit: -1}}
	a, b := NewLimiter(rdb, rules, 2*time.Second), NewLimiter(other, rules, 2*time.Second)
	b.Store.(*RedisStore).AutoPipeline = true
	ip := testenv.ID("ip")
	const users = 10
	var perUser [users]atomic.Int64
	var passed atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			inst := []*Limiter{a, b}[g%2]
			for i := 0; i < 25; i++ {
				u := (g*7 + i) % users
				d := inst.Decide(context.Background(), []string{"u" + strconv.Itoa(u), ip})
				if d.RedisErr != nil {
					t.Error(d.RedisErr)
					return
				}
				if d.Allowed() {
					perUser[u].Add(1)
					passed.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	if p := passed.Load(); p > 20 || p == 0 {
		t.Fatalf("%d requests passed, want between 1 and the IP limit 20", p)
	}
	for u := range perUser {
		if n := perUser[u].Load(); n > 3 {
			t.Fatalf("user %d passed %d times, limit 3", u, n)
		}
	}
	testenv.WaitFor(t, 5*time.Second, "the refunds to land", func() bool {
		return logLen(t, rdb, contract.ThrottleKey(ipZone, ip)) == passed.Load()
	})
}

// The sorted-set form (limits above 128) stays exact across two instances too.
func TestTwoInstancesAdmitOneCombinedLargeLimit(t *testing.T) {
	rdb := testenv.Redis(t)
	other := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr})
	t.Cleanup(func() { _ = other.Close() })
	const limit = 150
	rule := Rule{Name: testenv.ID("z"), Limit: limit, Window: time.Minute, LocalLimit: -1}
	a, b := NewLimiter(rdb, []Rule{rule}, 2*time.Second), NewLimiter(other, []Rule{rule}, 2*time.Second)
	key := testenv.ID("k")
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if d := []*Limiter{a, b}[g%2].Decide(context.Background(), []string{key}); d.Allowed() {
					admitted.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	if n := admitted.Load(); n != limit {
		t.Fatalf("admitted %d of 320, want exactly %d", n, limit)
	}
}
