//go:build integration

package room

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// TestWaitersBackWithinASecondOfTheStartAreAdmittedInThePermutation: the pre-queue's promise
// is that the admitted set is the top of the permutation among those who are there. Waiters
// who last polled at their pre-queue entry (told to come back at the start, they did not poll
// since) come back within a second of the start, through two gateways, and poll as told; the
// room's admissions are the best-ranked of them, in every one of 20 runs. Small and quick:
// refresh_s is always 1 s and the summary 100 ms, so each waiter's presence from his entry
// ends seconds before the start, as a longer wait's would. Each run waits out its lead and
// its polls (about 7 s), so the runs go ten at a time, each a room of its own on the same two
// gateways (200 waiters polling once a second between them).
var comebackRoom = map[string]any{"refresh_min": "1s", "refresh_max": "1s", "summary_interval": "100ms", "admit_interval": "100ms"}

var comebackGateway = gateway(gatewayConfig{Room: comebackRoom})

// Serial: its 200 waiters polling once a second must be answered within the handler's timeout
// on two cores.
func TestWaitersBackWithinASecondOfTheStartAreAdmittedInThePermutation(t *testing.T) {
	const (
		runs, batch = 20, 10
		waiters     = 20
		units       = 4
		lead        = 3500 * time.Millisecond // from the room's setup to the start
	)
	rdb := testenv.Redis(t)
	gws := []string{comebackGateway.Base(t), secondProcess(t, gatewayConfig{Room: comebackRoom})}
	ctx := context.Background()

	run := func(k int) string {
		r := newRoom(t, rdb, units, lead, time.Hour, roomArgs{Rate: "1000", Oversubscribe: "1", SessionMS: "60000",
			DifficultyMin: "0", DifficultyMax: "0"})
		t.Cleanup(func() {
			rdb.Del(context.Background(), contract.RoomLogKey(r.Sale), contract.RoomSeenKey(r.Sale), contract.RoomAwayKey(r.Sale), contract.RoomBackKey(r.Sale),
				contract.RoomClaimKey(r.Sale), contract.RoomIdleKey(r.Sale))
		})
		starts := time.UnixMilli(mustInt(t, rdb.HGet(ctx, contract.MetaKey(r.Sale), "starts_ms").Val()))
		ids := map[string]string{}
		tickets := map[string]string{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range waiters {
			u := fmt.Sprintf("w%02d", i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				e := enter(t, gws[i%2], r.Sale, u, nil)
				mu.Lock()
				defer mu.Unlock()
				if e.Status != 200 || e.State != string(core.Waiting) {
					t.Errorf("run %d: %s's pre-queue entry: %d %s", k, u, e.Status, e.Raw)
				}
				ids[u], tickets[u] = e.EntryID, e.Ticket
			}()
		}
		wg.Wait()
		// Everyone comes back within a second of the start, then polls as told until the
		// start plus 3.5 s.
		until := starts.Add(3500 * time.Millisecond)
		for i := range waiters {
			u := fmt.Sprintf("w%02d", i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Until(starts.Add(time.Duration(rand.Int64N(int64(time.Second))))))
				mu.Lock()
				ticket := tickets[u]
				mu.Unlock()
				for n := 0; time.Now().Before(until); n++ {
					p := poll(t, gws[(i+n)%2], r.Sale, u, ticket)
					if p.Status != 200 {
						t.Errorf("run %d: %s's poll: %d %s", k, u, p.Status, p.Raw)
						return
					}
					if p.Ticket != "" {
						ticket = p.Ticket
					}
					time.Sleep(time.Duration(max(p.RefreshS, 1)) * time.Second)
				}
			}()
		}
		wg.Wait()
		// The permutation of the waiters, and who the room admitted.
		order := make([]string, 0, waiters)
		for u := range ids {
			order = append(order, u)
		}
		sort.Slice(order, func(i, j int) bool {
			return bytes.Compare(core.Rank(r.Seed, ids[order[i]]), core.Rank(r.Seed, ids[order[j]])) < 0
		})
		admitted := map[string]bool{}
		for _, e := range rdb.LRange(ctx, contract.RoomLogKey(r.Sale), 0, -1).Val() {
			if f := strings.SplitN(e, ":", 4); len(f) == 4 && f[0] == "a" {
				admitted[f[3]] = true
			}
		}
		if len(admitted) < units {
			return fmt.Sprintf("run %d: %d admitted, want at least %d", k, len(admitted), units)
		}
		for i, u := range order[:len(admitted)] {
			if !admitted[u] {
				var got []string
				for j, v := range order {
					if admitted[v] {
						got = append(got, fmt.Sprint(j+1))
					}
				}
				return fmt.Sprintf("run %d: the waiter ranked %d (%s) was not admitted; the ranks admitted: %s", k, i+1, u, strings.Join(got, " "))
			}
		}
		return ""
	}
	for b := 0; b < runs; b += batch {
		problems := make([]string, batch)
		var wg sync.WaitGroup
		for k := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				problems[k] = run(b + k)
			}()
		}
		wg.Wait()
		for _, p := range problems {
			if p != "" {
				t.Error(p)
			}
		}
	}
}
