//go:build integration

package draw

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// raceGateway is the pool's configuration with a second server, for the race across two handlers.
var raceGateway = gateway(gatewayConfig{Two: true})

// Many users enter, change size and withdraw at once through two handler instances (two
// gateways' worth of caches), each user also racing himself across them: every user ends with
// one entry id, ids are the counter's values without gap or repeat, and the per-size counters
// equal what the entries say. Serial: each of its hundreds of concurrent requests must be
// answered within the handler's timeout on two cores.
func TestOneEntryPerUserUnderConcurrencyAcrossTwoHandlers(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	gw, gw2 := raceGateway.Two(t)
	sizes := []string{"38", "39", "40", "41"}
	sale := newDraw(t, rdb, drawArgs{Variants: map[string]int{"38": 5, "39": 5, "40": 5, "41": 5}, OpensIn: -time.Minute, ClosesIn: time.Hour})

	const users, workers, rounds = 60, 4, 6
	var (
		mu  sync.Mutex
		ids = map[string]map[string]bool{} // user -> entry ids answered
	)
	// Every user's set exists before any worker runs: the workers read ids while the loop
	// would still be adding users to it.
	for u := 0; u < users; u++ {
		ids[fmt.Sprintf("u%03d", u)] = map[string]bool{}
	}
	var wg sync.WaitGroup
	for u := 0; u < users; u++ {
		user := fmt.Sprintf("u%03d", u)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(base string) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(u), uint64(w)))
				for i := 0; i < rounds; i++ {
					var r reply
					if rng.IntN(4) == 0 {
						r = do(t, http.MethodDelete, base+"/seckill/"+sale+"/draw", user, "", nil)
						if r.Status == 404 && r.Code == CodeNotEntered {
							continue // withdrew before any entry of his landed
						}
					} else {
						r = enter(t, base, sale, user, sizes[rng.IntN(len(sizes))], nil)
					}
					if r.Status != 200 {
						t.Errorf("%s: %d %s", user, r.Status, r.Raw)
						return
					}
					if r.EntryID != "" {
						mu.Lock()
						ids[user][r.EntryID] = true
						mu.Unlock()
					}
				}
			}(map[bool]string{true: gw, false: gw2}[w%2 == 0])
		}
	}
	wg.Wait()

	entries := rdb.HGetAll(ctx, contract.DrawEntriesKey(sale)).Val()
	seen := map[string]string{}
	for user, answered := range ids {
		v, ok := entries[user]
		if !ok {
			t.Fatalf("%s has no entry", user)
		}
		id := v[:8]
		if len(answered) > 1 || (len(answered) == 1 && !answered[id]) {
			t.Fatalf("%s was answered entry ids %v, Redis has %s", user, answered, id)
		}
		if other, dup := seen[id]; dup {
			t.Fatalf("entry id %s given to %s and %s", id, other, user)
		}
		seen[id] = user
	}
	for i := 1; i <= users; i++ {
		if _, ok := seen[fmt.Sprintf("%08x", i)]; !ok {
			t.Fatalf("entry id %08x missing: ids must be the counter's values", i)
		}
	}
	if seq := rdb.HGet(ctx, contract.DrawKey(sale), "seq").Val(); seq != fmt.Sprint(users) {
		t.Fatalf("seq %s, want %d", seq, users)
	}
	stored, recounted := counters(t, rdb, sale)
	if fmt.Sprint(stored) != fmt.Sprint(recounted) {
		t.Fatalf("per-size counters %v, the entries say %v", stored, recounted)
	}
}
