//go:build integration

package room

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// prequeueUsers is how many users the order test pre-queues: the 10 000, or 2000
// under -race (make test), which keeps the test near ten seconds on two shared cores;
// SECKILL_ROOM_USERS overrides either.
func prequeueUsers() int {
	if n, err := strconv.Atoi(os.Getenv("SECKILL_ROOM_USERS")); err == nil && n > 0 {
		return n
	}
	if raceDetector {
		return 2000
	}
	return 10000
}

// Serial: each of its thousands of entries, 64 at a time, must be answered within the
// handler's timeout on two cores.
func TestPrequeuedUsersAreAdmittedInThePermutationOfTheRevealedSeedAcrossTwoGateways(t *testing.T) {
	rdb := testenv.Redis(t)
	n := prequeueUsers()
	// The start is far; once every entry is in, the test moves it to now (as a preheat with a
	// new window would). The rate admits a few places per script call.
	r := newRoom(t, rdb, n+1, 10*time.Minute, 2*time.Hour, roomArgs{Rate: "1000", Oversubscribe: "1", SessionMS: "600000"})
	gwA := plainGateway.Base(t)
	gwB := secondProcess(t, gatewayConfig{})
	gws := []string{gwA, gwB}

	published := do(t, http.MethodGet, gwA+"/seckill/"+r.Sale+"/room", "", nil)
	if published.Status != 200 || !bytes.Contains([]byte(published.Raw), []byte(r.Commitment)) || bytes.Contains([]byte(published.Raw), []byte(`"seed"`)) {
		t.Fatalf("room before the start: %d %s; want the commitment and no seed", published.Status, published.Raw)
	}

	began := time.Now()
	type entry struct{ user, ticket, entryID string }
	entries := make([]entry, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				u := fmt.Sprintf("u%05d", i)
				a := enter(t, gws[i%2], r.Sale, u, nil)
				if a.Status != 200 || a.State != "waiting" || a.EntryID == "" {
					t.Errorf("pre-queue entry of %s: %d %s", u, a.Status, a.Raw)
					continue
				}
				// Entering again, on the other gateway, keeps the place.
				if i%50 == 0 {
					again := enter(t, gws[(i+1)%2], r.Sale, u, nil)
					if again.EntryID != a.EntryID {
						t.Errorf("%s re-entered as %s, was %s", u, again.EntryID, a.EntryID)
					}
				}
				entries[i] = entry{u, a.Ticket, a.EntryID}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	took := time.Since(began)
	starts := redisNow(t, rdb).Add(300 * time.Millisecond)
	rdb.HSet(context.Background(), contract.MetaKey(r.Sale), "starts_ms", starts.UnixMilli())

	// After the start, one late arrival polls through both gateways until it is admitted:
	// it queues behind every pre-queued place, so by then all of them are admitted.
	testenv.WaitFor(t, 15*time.Second, "the start", func() bool { return !redisNow(t, rdb).Before(starts) })
	late := enter(t, gwA, r.Sale, "late", nil)
	if late.Status != 200 || late.State != "waiting" || late.Position < 1 || late.Position > int64(n)+1 {
		t.Fatalf("late arrival: %d %s, want a place behind the %d pre-queued", late.Status, late.Raw, n)
	}
	for i := 0; ; i++ {
		p := poll(t, gws[i%2], r.Sale, "late", late.Ticket)
		if p.State == "admitted" {
			break
		}
		if p.Status != 200 || p.State != "waiting" || i > 100000 {
			t.Fatalf("late arrival's poll: %d %s", p.Status, p.Raw)
		}
	}
	until := make(map[string]time.Time, n)
	var mu sync.Mutex
	idx := make(chan int)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				e := entries[i]
				p := poll(t, gws[i%2], r.Sale, e.user, e.ticket)
				tu, err := time.Parse(time.RFC3339, p.AdmittedUntil)
				if p.State != "admitted" || err != nil {
					t.Errorf("%s: %s, want admitted", e.user, p.Raw)
					continue
				}
				mu.Lock()
				until[e.entryID] = tu
				mu.Unlock()
			}
		}()
	}
	for i := range entries {
		idx <- i
	}
	close(idx)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// End the sale (what the operator's "end now" does to the meta hash) and read what the
	// room publishes.
	rdb.HSet(context.Background(), contract.MetaKey(r.Sale), "ends_ms", redisNow(t, rdb).UnixMilli())
	var info reply
	testenv.WaitFor(t, 5*time.Second, "the seed to be revealed", func() bool {
		info = do(t, http.MethodGet, gwB+"/seckill/"+r.Sale+"/room", "", nil)
		return bytes.Contains([]byte(info.Raw), []byte(`"seed":"`))
	})
	// The other gateway reads the new end within its cache_ttl.
	testenv.WaitFor(t, 5*time.Second, "the pre-queue list on the other gateway", func() bool {
		return do(t, http.MethodGet, gwA+"/seckill/"+r.Sale+"/room/prequeue", "", nil).Status == 200
	})
	list := fetchPrequeue(t, gwA, r.Sale)
	seed, err := hex.DecodeString(list.Seed)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(seed); hex.EncodeToString(sum[:]) != r.Commitment {
		t.Fatal("the revealed seed does not match the commitment published before the start")
	}
	// Recompute the permutation from the seed alone.
	want := make([]string, 0, n)
	for _, e := range entries {
		want = append(want, e.entryID)
	}
	sort.Slice(want, func(i, j int) bool { return bytes.Compare(core.Rank(seed, want[i]), core.Rank(seed, want[j])) < 0 })
	if len(list.Entries) != n {
		t.Fatalf("the published pre-queue has %d entries, want %d", len(list.Entries), n)
	}
	for i := range want {
		if list.Entries[i] != want[i] {
			t.Fatalf("published place %d is %s, the seed says %s", i, list.Entries[i], want[i])
		}
	}
	// The admissions happened in that order: admitted_until never goes back along it (places
	// admitted by one script call share it).
	for i := 1; i < n; i++ {
		if until[want[i]].Before(until[want[i-1]]) {
			t.Fatalf("place %d (%s) was admitted before place %d", i, want[i], i-1)
		}
	}
	// The whole-system verifier reads the same from Redis, exactly: the room's log shows the
	// k-th admission went to the k-th place, and no place was given twice.
	checks, err := invariants.Room(context.Background(), rdb, r.Sale, nil, invariants.RoomOptions{})
	if err != nil || len(checks) != 4 {
		t.Fatalf("invariants.Room: %d checks, %v", len(checks), err)
	}
	for _, c := range checks {
		if c.Verdict != invariants.Pass {
			t.Errorf("invariant %d (%s): %s %v", c.N, c.Name, c.Detail, c.Problems)
		}
	}
	if got := checks[0].Numbers["prequeue_admitted"]; got != n {
		t.Errorf("the log shows %d pre-queue admissions in order, want %d", got, n)
	}
	t.Logf("%d users pre-queued through two gateways in %v", n, took.Round(time.Millisecond))
	if first, last := until[want[0]], until[want[n-1]]; !first.Before(last) {
		t.Fatalf("every place admitted at once (%v): the order is not tested", first)
	}
}

// fetchPrequeue reads the whole published list, page after page.
func fetchPrequeue(t testing.TB, base, sale string) PrequeueList {
	t.Helper()
	var all PrequeueList
	for after := "0"; after != ""; {
		resp, err := client.Get(base + "/seckill/" + sale + "/room/prequeue?after=" + after)
		if err != nil {
			t.Fatal(err)
		}
		var l PrequeueList
		if resp.StatusCode != 200 {
			resp.Body.Close()
			t.Fatalf("prequeue: %d", resp.StatusCode)
		}
		err = jsonDecode(resp, &l)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		all.Seed, all.Total = l.Seed, l.Total
		all.Entries = append(all.Entries, l.Entries...)
		after = l.Next
	}
	return all
}

func mustInt(t testing.TB, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}
