//go:build integration

package room

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The proof of work never throws honest work away: a challenge solved
// within its life is accepted at the difficulty it was issued with; a stockpile is stopped by
// the short life, the bounds on open challenges and the difficulty in force at the issue.

func testSealer(t testing.TB, ids ...string) *sealed.Sealer {
	t.Helper()
	if len(ids) == 0 {
		ids = []string{"k1"}
	}
	var keys []sealed.Key
	for _, id := range ids {
		secret := testSecret
		if id != "k1" {
			secret = "room-test-secret-0123456789abcdef-" + id
		}
		keys = append(keys, sealed.Key{ID: id, Secret: []byte(secret)})
	}
	s, err := sealed.NewSealer(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// expiresAt is a challenge answer's expires_at.
func expiresAt(t testing.TB, c reply) time.Time {
	t.Helper()
	var a struct {
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal([]byte(c.Raw), &a); err != nil || a.ExpiresAt.IsZero() {
		t.Fatalf("challenge without expires_at: %s", c.Raw)
	}
	return a.ExpiresAt
}

// A challenge fetched while the room was quiet must not help in
// the rush. It is refused because it expired (403 challenge_expired), while the rush, counted
// across gateways, raised the difficulty of the challenges issued in it. The rush goes through
// the second gateway, the late solution through the first.
// A life of 4s (3 to 4 once rounded down to the second): long enough for a fresh challenge to
// be solved and used on a loaded machine, short enough to wait out.
var quietHoursGateway = gateway(gatewayConfig{Two: true, Room: map[string]any{"difficulty_rate": 1, "challenge_life": "4s", "challenges_per_net": -1}})

// Serial: its rush floods a gateway until the quiet challenge's life is over, and every fresh
// challenge must be solved and used within its 4 s.
func TestAChallengeFetchedInTheQuietHoursIsRefusedInTheRushAsExpired(t *testing.T) {
	rdb := testenv.Redis(t)
	gwA, gwB := quietHoursGateway.Two(t)
	// 1 bit while at most one entry a second, then one more per doubling, up to 8.
	r := newRoom(t, rdb, 10, -time.Second, time.Hour, roomArgs{DifficultyMin: "1", DifficultyMax: "8"})
	challenge := func(gw, user string) reply {
		t.Helper()
		c := do(t, http.MethodGet, gw+"/seckill/"+r.Sale+"/challenge", user, nil)
		if c.Status != 200 {
			t.Fatalf("challenge: %d %s", c.Status, c.Raw)
		}
		return c
	}
	pow := func(c reply) map[string]string {
		return map[string]string{sealed.HeaderChallenge: c.Challenge, sealed.HeaderSolution: sealed.Solve(c.Challenge, c.Difficulty)}
	}
	old := challenge(gwA, "late")
	if old.Difficulty != 1 {
		t.Fatalf("a quiet room asks for %d bits, want its minimum 1", old.Difficulty)
	}
	oldExp := expiresAt(t, old)
	if life := time.Until(oldExp); life > 4*time.Second {
		t.Fatalf("a challenge of a 4s life expires in %v", life)
	}

	// A rush through gateway B, kept up until the late entry is done.
	stop := make(chan struct{})
	var flood sync.WaitGroup
	var entered atomic.Int64
	for w := range 4 {
		flood.Add(1)
		go func() {
			defer flood.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				u := fmt.Sprintf("rush%d_%d", w, i)
				// Not challenge(): t.Fatalf belongs to the test's goroutine.
				c := do(t, http.MethodGet, gwB+"/seckill/"+r.Sale+"/challenge", u, nil)
				if c.Status != 200 {
					continue
				}
				if a := enter(t, gwB, r.Sale, u, pow(c)); a.Status == 200 {
					entered.Add(1)
				}
			}
		}()
	}
	rate := func() int64 {
		h := rdb.HMGet(context.Background(), contract.RoomKey(r.Sale), "rate_s", "rate_cur", "rate_prev").Val()
		n := func(v any) int64 { s, _ := v.(string); i, _ := strconv.ParseInt(s, 10, 64); return i }
		return core.EntryRateAt(redisNow(t, rdb).Unix(), n(h[0]), n(h[1]), n(h[2]))
	}
	testenv.WaitFor(t, 20*time.Second, "8 entries a second counted in Redis", func() bool { return rate() >= 8 })
	// The rush raised the difficulty of what gateway A issues now: the difficulty in force at
	// the issue is part of what stops a stockpile.
	testenv.WaitFor(t, 10*time.Second, "gateway A to issue above the minimum in the rush", func() bool {
		return challenge(gwA, fmt.Sprintf("probe%d", time.Now().UnixNano())).Difficulty > 1
	})
	testenv.WaitFor(t, 10*time.Second, "the quiet challenge's life to end", func() bool { return time.Now().After(oldExp) })
	late := enter(t, gwA, r.Sale, "late", pow(old))
	close(stop)
	flood.Wait()
	if late.Status != http.StatusForbidden || late.Code != contract.CodeChallengeExpired {
		t.Fatalf("a 1-bit solution from the quiet hours, in the rush (%d entries): %d %s, want 403 %s",
			entered.Load(), late.Status, late.Raw, contract.CodeChallengeExpired)
	}
	// A fresh challenge asks for the difficulty in force, and enters at once: no retry needed.
	c := challenge(gwA, "late")
	if a := enter(t, gwA, r.Sale, "late", pow(c)); a.Status != 200 {
		t.Fatalf("a fresh challenge (%d bits): %d %s", c.Difficulty, a.Status, a.Raw)
	}
}

// A burst of 1 000 entries in about a second through two gateways, each solving the challenge
// it was given, while the burst itself raises the difficulty: none is refused for difficulty
// (26 % of 300 were, 403 "the difficulty rose since this challenge was issued").
// And a challenge older than its life is always refused: 20 challenges fetched from both
// gateways before the burst, solved at once, are all 403 challenge_expired once past their
// expires_at, whichever gateway they are taken to.
// Every test client is 127.0.0.1: no bound per network here (the bounds have their test). A
// life of 10 s: the burst's challenges are used at once, the early ones after it.
var burstGateway = gateway(gatewayConfig{Two: true, Room: map[string]any{"difficulty_rate": 20, "challenges_per_net": -1, "challenge_life": "10s"}})

// Serial: each of its 1 000 entries must solve and use its challenge within the challenge's
// life on two cores.
func TestABurstOfEntriesSolvingTheirOwnChallengesIsNeverRefusedForDifficulty(t *testing.T) {
	rdb := testenv.Redis(t)
	gwA, gwB := burstGateway.Two(t)
	r := newRoom(t, rdb, 100, -time.Second, time.Hour, roomArgs{DifficultyMin: "2", DifficultyMax: "10"})

	type early struct {
		gw, user, challenge, solution string
		expires                       time.Time
	}
	var olds []early
	for i := range 20 {
		gw, other := gwA, gwB
		if i%2 == 1 {
			gw, other = gwB, gwA
		}
		u := fmt.Sprintf("early%d", i)
		c := do(t, http.MethodGet, gw+"/seckill/"+r.Sale+"/challenge", u, nil)
		if c.Status != 200 {
			t.Fatalf("early challenge: %s", c.Raw)
		}
		// Solved now, taken to the other gateway later.
		olds = append(olds, early{other, u, c.Challenge, sealed.Solve(c.Challenge, c.Difficulty), expiresAt(t, c)})
	}

	const n, workers = 1000, 64
	var (
		refused, failed   atomic.Int64
		minD, maxD        atomic.Int64
		firstRefusal      atomic.Value
		wg                sync.WaitGroup
		slots             = make(chan struct{}, workers)
		start             = time.Now()
		difficultyRefusal = func(a reply) bool {
			return a.Status == http.StatusForbidden && (a.Code == contract.CodeInvalidChallenge || a.Code == contract.CodeChallengeExpired)
		}
	)
	minD.Store(1 << 20)
	for i := range n {
		// The entries start 1 ms apart (a second for the burst), at most 64 at a time.
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Millisecond)))
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			gw := gwA
			if i%2 == 1 {
				gw = gwB
			}
			u := fmt.Sprintf("burst%d", i)
			c := do(t, http.MethodGet, gw+"/seckill/"+r.Sale+"/challenge", u, nil)
			if c.Status != 200 {
				failed.Add(1)
				firstRefusal.CompareAndSwap(nil, "challenge: "+c.Raw)
				return
			}
			for d := int64(c.Difficulty); ; {
				m := minD.Load()
				if d >= m || minD.CompareAndSwap(m, d) {
					break
				}
			}
			for d := int64(c.Difficulty); ; {
				m := maxD.Load()
				if d <= m || maxD.CompareAndSwap(m, d) {
					break
				}
			}
			a := enter(t, gw, r.Sale, u, map[string]string{sealed.HeaderChallenge: c.Challenge, sealed.HeaderSolution: sealed.Solve(c.Challenge, c.Difficulty)})
			switch {
			case difficultyRefusal(a):
				refused.Add(1)
				firstRefusal.CompareAndSwap(nil, "entry: "+a.Raw)
			case a.Status != 200:
				failed.Add(1)
				firstRefusal.CompareAndSwap(nil, "entry: "+a.Raw)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d entries in %v, difficulties issued %d..%d", n, time.Since(start).Round(time.Millisecond), minD.Load(), maxD.Load())
	if maxD.Load() <= minD.Load() {
		t.Fatalf("the difficulty never rose during the burst (%d..%d bits): the test proves nothing", minD.Load(), maxD.Load())
	}
	if refused.Load() != 0 || failed.Load() != 0 {
		t.Fatalf("%d of %d honest entries refused for their proof of work, %d failed otherwise; first: %v",
			refused.Load(), n, failed.Load(), firstRefusal.Load())
	}
	if got := rdb.ZCard(context.Background(), contract.RoomQueueKey(r.Sale)).Val(); got != n {
		t.Fatalf("%d places in the queue, want %d", got, n)
	}
	for _, o := range olds {
		// Past its expires_at by Redis's clock and the gateways' (the same machine).
		for !redisNow(t, rdb).After(o.expires) || !time.Now().After(o.expires) {
			time.Sleep(50 * time.Millisecond)
		}
		a := enter(t, o.gw, r.Sale, o.user, map[string]string{sealed.HeaderChallenge: o.challenge, sealed.HeaderSolution: o.solution})
		if a.Status != http.StatusForbidden || a.Code != contract.CodeChallengeExpired {
			t.Fatalf("%s's challenge, past its life, solved right: %d %s, want 403 %s", o.user, a.Status, a.Raw, contract.CodeChallengeExpired)
		}
	}
	if got := rdb.ZCard(context.Background(), contract.RoomQueueKey(r.Sale)).Val(); got != n {
		t.Fatalf("%d places after the expired entries, want %d", got, n)
	}
}

// The bounds on open challenges hold exactly across two gateways: a user asking both at once
// gets challenges_per_user of them, the rest 429 too_many_challenges with Retry-After; once
// the open ones expire, he gets a new one. His network is never refused: beyond
// challenges_per_net open challenges its next ones get one bit harder per doubling, up to the
// room's highest difficulty.
// Every request of a burst lands within the life of the first (10s) even on a loaded machine,
// so the counts are exact; the last step waits the life out.
var openChallengesGateway = gateway(gatewayConfig{Two: true, Room: map[string]any{"challenge_life": "10s", "challenges_per_user": 3, "challenges_per_net": 10}})

func TestOpenChallengesAreBoundedPerUserAndHarderPerNetworkAcrossGateways(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gwA, gwB := openChallengesGateway.Two(t)
	r := newRoom(t, rdb, 10, -time.Second, time.Hour, roomArgs{DifficultyMin: "1", DifficultyMax: "4"})

	burst := func(users []string) (issued, bounded int, other []string, bits map[int]int) {
		bits = map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				gw := gwA
				if i%2 == 1 {
					gw = gwB
				}
				c := do(t, http.MethodGet, gw+"/seckill/"+r.Sale+"/challenge", u, nil)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case c.Status == 200 && c.Challenge != "":
					issued++
					bits[c.Difficulty]++
				case c.Status == http.StatusTooManyRequests && c.Code == contract.CodeTooManyChallenges && c.Retry != "":
					bounded++
				default:
					other = append(other, fmt.Sprintf("%d %s (Retry-After %q)", c.Status, c.Raw, c.Retry))
				}
			}()
		}
		wg.Wait()
		return issued, bounded, other, bits
	}
	alice := make([]string, 20)
	for i := range alice {
		alice[i] = "alice"
	}
	if issued, bounded, other, _ := burst(alice); issued != 3 || bounded != 17 || len(other) != 0 {
		t.Fatalf("one user, 20 at once over two gateways: %d issued, %d bounded, others %v; want 3 and 17", issued, bounded, other)
	}
	// Alice's 3 are her network's too: 7 more at the difficulty in force (1) for everyone else
	// behind 127.0.0.1, then 10 at 2 bits (10 to 19 open), then 13 at 3 (20 to 32 open).
	var others []string
	for i := range 30 {
		others = append(others, fmt.Sprintf("neighbour%d", i))
	}
	issued, bounded, other, bits := burst(others)
	if issued != 30 || bounded != 0 || len(other) != 0 {
		t.Fatalf("30 users of one network at once: %d issued, %d bounded, others %v; want all 30 issued", issued, bounded, other)
	}
	if bits[1] != 7 || bits[2] != 10 || bits[3] != 13 {
		t.Fatalf("30 users of one network at once, challenges by difficulty: %v; want 7 at 1, 10 at 2, 13 at 3", bits)
	}
	// An open challenge closes when its life ends: then the bound lets the next one through.
	testenv.WaitFor(t, 30*time.Second, "alice's challenges to expire", func() bool {
		return do(t, http.MethodGet, gwB+"/seckill/"+r.Sale+"/challenge", "alice", nil).Status == 200
	})
}
