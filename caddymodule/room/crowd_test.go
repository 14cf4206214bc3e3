//go:build integration

package room

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// enterWithWork fetches a challenge from gw, solves it and enters: the page's steps.
func enterWithWork(t testing.TB, gw, sale, user string) (challenge, entry reply) {
	t.Helper()
	challenge = do(t, http.MethodGet, gw+"/seckill/"+sale+"/challenge", user, nil)
	if challenge.Status != http.StatusOK {
		return challenge, reply{}
	}
	return challenge, enter(t, gw, sale, user, map[string]string{sealed.HeaderChallenge: challenge.Challenge,
		sealed.HeaderSolution: sealed.Solve(challenge.Challenge, challenge.Difficulty)})
}

// TestACrowdBehindOneAddressIsPrequeuedWholeAndAdmittedInThePermutation: 2 000 people behind
// one address (a carrier's NAT: every request here comes from 127.0.0.1) enter the pre-queue
// at once through two gateways, each fetching a challenge, solving it and entering. Nobody is
// refused for sharing the address (the network's crowd raises its challenges' difficulty
// instead), every one is pre-queued, and at the start they are admitted in the seed's
// permutation over all of them.
// Everyone in turn once the sale starts (the presence rule is not what is tested here).
var crowdRoom = map[string]any{"presence_window": -1}

var crowdGateway = gateway(gatewayConfig{Room: crowdRoom})

// Serial: each of its 2 000 entries, 32 at a time, must be answered within the handler's
// timeout on two cores.
func TestACrowdBehindOneAddressIsPrequeuedWholeAndAdmittedInThePermutation(t *testing.T) {
	const n = 2000
	rdb := testenv.Redis(t)
	gws := []string{crowdGateway.Base(t), secondProcess(t, gatewayConfig{Room: crowdRoom})}
	// Low difficulties keep the work cheap on two cores.
	r := newRoom(t, rdb, n+1, 10*time.Minute, 2*time.Hour, roomArgs{Rate: "5000", Oversubscribe: "1", SessionMS: "600000",
		DifficultyMin: "1", DifficultyMax: "4"})

	began := time.Now()
	ids := make([]string, n)
	var mu sync.Mutex
	difficulties := map[int]int{}
	var refused []string
	var wg sync.WaitGroup
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				u := fmt.Sprintf("nat%04d", i)
				c, e := enterWithWork(t, gws[i%2], r.Sale, u)
				mu.Lock()
				switch {
				case c.Status != http.StatusOK:
					refused = append(refused, fmt.Sprintf("%s's challenge: %d %s", u, c.Status, c.Raw))
				case e.Status != http.StatusOK || e.State != string(core.Waiting) || e.EntryID == "":
					refused = append(refused, fmt.Sprintf("%s's entry: %d %s", u, e.Status, e.Raw))
				default:
					ids[i] = e.EntryID
					difficulties[c.Difficulty]++
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	took := time.Since(began)
	if len(refused) > 0 {
		t.Fatalf("%d of %d people behind one address were refused, e.g. %v", len(refused), n, refused[:min(len(refused), 5)])
	}
	t.Logf("%d people behind one address entered through two gateways in %v; challenges by difficulty: %v", n, took.Round(time.Millisecond), difficulties)
	ctx := context.Background()
	if got := rdb.ZCount(ctx, contract.RoomQueueKey(r.Sale), "0", "0").Val(); got != n {
		t.Fatalf("%d places in the pre-queue, want %d", got, n)
	}
	// The pre-queue is the seed's permutation over all of them.
	want := append([]string(nil), ids...)
	sort.Slice(want, func(i, j int) bool { return bytes.Compare(core.Rank(r.Seed, want[i]), core.Rank(r.Seed, want[j])) < 0 })
	members := rdb.ZRange(ctx, contract.RoomQueueKey(r.Sale), 0, n-1).Val()
	for i, m := range members {
		if core.EntryIDOfMember(m) != want[i] {
			t.Fatalf("place %d is %s, the seed's permutation says %s", i, core.EntryIDOfMember(m), want[i])
		}
	}

	// The start: a late arrival behind the pre-queue polls until admitted, so by then every
	// pre-queued place has been, and the room's log shows in which order.
	starts := redisNow(t, rdb).Add(300 * time.Millisecond)
	rdb.HSet(ctx, contract.MetaKey(r.Sale), "starts_ms", starts.UnixMilli())
	testenv.WaitFor(t, 15*time.Second, "the start", func() bool { return !redisNow(t, rdb).Before(starts) })
	_, late := enterWithWork(t, gws[0], r.Sale, "late")
	if late.Status != http.StatusOK || late.Ticket == "" {
		t.Fatalf("the late arrival: %d %s", late.Status, late.Raw)
	}
	for i := 0; ; i++ {
		p := poll(t, gws[i%2], r.Sale, "late", late.Ticket)
		if p.State == string(core.Admitted) {
			break
		}
		if p.Status != http.StatusOK || p.State != string(core.Waiting) || i > 100000 {
			t.Fatalf("the late arrival's poll: %d %s", p.Status, p.Raw)
		}
		if p.Ticket != "" {
			late.Ticket = p.Ticket
		}
		time.Sleep(20 * time.Millisecond)
	}
	checks, err := invariants.Room(ctx, rdb, r.Sale, nil, invariants.RoomOptions{})
	if err != nil || len(checks) != 4 {
		t.Fatalf("invariants.Room: %d checks, %v", len(checks), err)
	}
	for _, c := range checks {
		if c.Verdict != invariants.Pass {
			t.Errorf("invariant %d (%s): %s %v", c.N, c.Name, c.Detail, c.Problems)
		}
	}
	if got := checks[0].Numbers["prequeue_admitted"]; got != n {
		t.Errorf("the log shows %d pre-queue admissions in the permutation's order, want %d", got, n)
	}
}
