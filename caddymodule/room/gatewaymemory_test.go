//go:build integration

package room

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
)

// What a gateway keeps for a room of N waiters (each gateway's memory for
// the room's summaries and caches stays bounded; measured at 100 000 and 1 000 000 waiters, the
// second from a synthetic queue). The gateway is the real handler (ServeHTTP, its room cache,
// its core.View with the summary, the pace and the presence set, its published pre-queue cache)
// over a synthetic Store that answers as room_queue.lua would for a started room of N waiters:
// every waiter polls once with his placed ticket, the few near the front reach the store, the
// others are answered from the summary. The heap retained afterwards (HeapAlloc after GC, less
// the same before the polls) is what the gateway keeps for the room. Then the sale ends and one
// request reads the published pre-queue, which the gateway keeps (16 bytes per entry id, at
// most core.MaxSnapshotEntries over all sales): the one structure that grows with the waiters, and
// only after the end.
//
//	go test -run '^$' -bench GatewayRoomMemory -benchtime 1x ./caddymodule/room/
//	SECKILL_ROOM_GATEWAY_WAITERS=2000,20000 go test -run '^$' -bench GatewayRoomMemory -benchtime 1x ./caddymodule/room/

// synthStore is a Store of one room of n waiters, none admitted: its answers are the ones the
// script gives (a tick's counters, a front poll's place, the pre-queue in pages), made up on
// the fly so that it keeps nothing per waiter itself.
type synthStore struct {
	n       int64
	room    core.SaleRoom
	ended   atomic.Bool
	ticks   atomic.Int64
	visits  atomic.Int64
	present atomic.Int64 // users the ticks carried
}

func newSynthStore(n int64) *synthStore {
	now := time.Now()
	seed := sha256.Sum256([]byte("synthetic seed"))
	ekey := sha256.Sum256([]byte("synthetic entry key"))
	commit := sha256.Sum256(seed[:])
	return &synthStore{n: n, room: core.SaleRoom{
		Settings: core.Settings{Rate: 200, Oversubscribe: 1.5, Session: 10 * time.Second, MaxWaiters: MaxWaitersLimit},
		Seed:     seed[:], EntryKey: ekey[:], Commitment: hex.EncodeToString(commit[:]),
		Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour)}}
}

func (s *synthStore) Room(context.Context, string) (core.SaleRoom, bool, error) {
	r := s.room
	if s.ended.Load() {
		r.Ends = time.Now().Add(-time.Second)
	}
	return r, true, nil
}

func (s *synthStore) Visit(_ context.Context, _ string, v core.Visit) (core.Reply, error) {
	rep := core.Reply{Outcome: core.Open, Now: time.Now(), Stock: s.n, Depth: s.n, Starts: s.room.Starts, EntryRate: -1}
	if v.Tick {
		s.ticks.Add(1)
		s.present.Add(int64(len(v.Present)))
		return rep, nil
	}
	// A poll near the front: the waiter is told his place (the synthetic room admits nobody,
	// so that every waiter stays in the queue for the measurement).
	s.visits.Add(1)
	rep.Outcome, rep.Position, rep.Ahead = core.Waiting, 1, 0
	return rep, nil
}

func (s *synthStore) Public(context.Context, string) (core.Public, error) {
	st := "open"
	now := time.Now()
	if s.ended.Load() {
		now = now.Add(2 * time.Hour)
	}
	return core.Public{Stock: s.n, State: st, Now: now}, nil
}

// Prequeue makes the members of the pre-queue's places from..from+count: rank, entry id, user,
// as room_queue.lua stores them (the rank is made up: only its length matters here).
func (s *synthStore) Prequeue(_ context.Context, _ string, from, count int64) ([]string, int64, error) {
	var out []string
	for i := from; i < min(from+count, s.n); i++ {
		user := "user" + strconv.FormatInt(i, 10)
		p := core.PlaceOf(s.room.EntryKey, s.room.Seed, "s1", user)
		out = append(out, p.Member(user))
	}
	return out, s.n, nil
}

// noEvents is a gateway whose sale events never flag a sale sold out.
type noEvents struct{}

func (noEvents) SoldOut(string) bool                        { return false }
func (noEvents) Generation(string) caddymodule.Generation   { return caddymodule.Generation{} }
func (noEvents) MarkSoldOut(string, caddymodule.Generation) {}

// heapInUse is HeapAlloc after two collections.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func BenchmarkGatewayRoomMemory(b *testing.B) {
	sizes := []int64{100_000, 1_000_000}
	if v := os.Getenv("SECKILL_ROOM_GATEWAY_WAITERS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil || n <= 0 {
				b.Fatalf("SECKILL_ROOM_GATEWAY_WAITERS: %q is not a count", f)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			for range b.N {
				live, published, fromMemory := gatewayRoomMemory(b, n)
				b.ReportMetric(float64(live), "live-B")
				b.ReportMetric(float64(live)/float64(n), "live-B/waiter")
				b.ReportMetric(float64(published), "published-B")
				b.ReportMetric(float64(published)/float64(n), "published-B/waiter")
				b.Logf("%d waiters: the gateway keeps %d bytes for the open room (%.3f B per waiter; %d of %d polls answered from memory), "+
					"%d bytes once the published pre-queue is read after the end (%.1f B per waiter)",
					n, live, float64(live)/float64(n), fromMemory, n, published, float64(published)/float64(n))
				// The live room's structures are fixed (a summary, 8 pace samples, at most
				// maxPresent user ids: ~280 KB full): anything growing with the waiters
				// passes 1 MiB long before 100 000 of them.
				if live > 1<<20 {
					b.Fatalf("the gateway keeps %d bytes for an open room of %d waiters, want at most 1 MiB whatever the waiters", live, n)
				}
				// The published list is 16 bytes per entry id, within the cache's bound.
				if n <= core.MaxSnapshotEntries && published > 24*n+(1<<20) {
					b.Fatalf("the published pre-queue of %d waiters takes %d bytes, want about 16 per waiter", n, published)
				}
			}
		})
	}
}

// gatewayRoomMemory polls a synthetic room of n waiters through a gateway's handler once per
// waiter and returns the bytes the gateway retains for the open room, then for the ended room
// with its published pre-queue read, and how many polls were answered from memory.
func gatewayRoomMemory(b *testing.B, n int64) (live, published, fromMemory int64) {
	store := newSynthStore(n)
	h := &Room{Kit: roomkit.Kit{Subject: handler.Subject{Sale: "s1", User: "{http.request.header.X-User-ID}"}}}
	h.setDefaults()
	sealer, err := sealed.NewSealer(sealed.Key{ID: "k1", Secret: []byte(testSecret)})
	if err != nil {
		b.Fatal(err)
	}
	h.mem.Sealer = sealer
	h.mem.Store = core.BoundStore{Store: store, Caller: h.Calls}
	h.events = noEvents{}
	// The gateway's clock stands still: no tick after the first empties the presence set, so
	// it fills to its bound (maxPresent users) and the figure is the worst case at every size,
	// not whatever the last tick of a long loop left.
	t0 := time.Now()
	h.mem.Now = func() time.Time { return t0 }
	exp := store.room.Ends.Add(core.TicketGrace)
	poll := func(i int64) {
		user := "user" + strconv.FormatInt(i, 10)
		r := httptest.NewRequest(http.MethodGet, "/seckill/s1/queue", nil)
		r.Header.Set("X-User-ID", user)
		r.Header.Set(sealed.HeaderTicket, sealer.TicketAt("s1", user, exp, i))
		repl := caddy.NewReplacer()
		repl.Set("http.request.header.X-User-ID", user)
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
		w := httptest.NewRecorder()
		if err := h.ServeHTTP(w, r, nil); err != nil || w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"state":"waiting"`) {
			b.Fatalf("poll of waiter %d: %v %d %s", i, err, w.Code, w.Body)
		}
	}
	// The room is read, its view made and the first tick taken before the baseline: those
	// are the room's, whatever its size, and the measurement is what the waiters add.
	poll(n - 1)
	before := heapInUse()
	mem0 := store.visits.Load()
	for i := range n {
		poll(i)
	}
	live = heapInUse() - before
	fromMemory = n - (store.visits.Load() - mem0)
	b.Logf("%d ticks carried %d users seen", store.ticks.Load(), store.present.Load())

	// After the end: one request reads the published pre-queue, which the gateway keeps.
	store.ended.Store(true)
	h.mem.Forget() // the room is read again, with its end
	h.mem.Now = time.Now
	r := httptest.NewRequest(http.MethodGet, "/seckill/s1/room/prequeue?limit=1", nil)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, r, nil); err != nil || w.Code != http.StatusOK {
		b.Fatalf("published pre-queue: %v %d %s", err, w.Code, w.Body)
	}
	published = heapInUse() - before
	runtime.KeepAlive(h)
	return live, published, fromMemory
}

func (s *synthStore) Banned(context.Context, []string, []string) (map[string]time.Time, error) {
	return nil, nil
}
