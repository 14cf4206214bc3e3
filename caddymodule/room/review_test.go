//go:build integration

package room

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// What the room refuses so that a bot gains nothing a browser cannot (stale challenges, the
// queue's bounds, the page's CSP).

// A challenge fetched while quiet and used in the rush is covered by
// TestAChallengeFetchedInTheQuietHoursIsRefusedInTheRushAsExpired (challenge_test.go).

// The queue holds at most max_waiters places, exactly, across gateways; beyond it a new entry
// is 503 queue_full with Retry-After, and whoever holds a place gets it again.
var fullGateway = gateway(gatewayConfig{Two: true, Room: map[string]any{"max_waiters": 3}}) // the gateways' default

func TestAFullRoomAnswersQueueFull(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gwA, gwB := fullGateway.Two(t)
	// A pre-queue: nobody is admitted, every place stays a waiter.
	own := newRoom(t, rdb, 5, 10*time.Minute, time.Hour, roomArgs{MaxWaiters: "10"})

	const users = 40
	answers := make([]reply, users)
	var wg sync.WaitGroup
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gw := gwA
			if i%2 == 1 {
				gw = gwB
			}
			answers[i] = enter(t, gw, own.Sale, fmt.Sprintf("u%02d", i), nil)
		}()
	}
	wg.Wait()
	var placed []int
	for i, a := range answers {
		switch {
		case a.Status == 200 && a.State == "waiting":
			placed = append(placed, i)
		case a.Status == http.StatusServiceUnavailable && a.Code == core.CodeQueueFull && a.Retry != "":
		default:
			t.Fatalf("u%02d: %d %q %s, want 200 waiting or 503 %s with Retry-After", i, a.Status, a.Retry, a.Raw, core.CodeQueueFull)
		}
	}
	if len(placed) != 10 || rdb.ZCard(context.Background(), contract.RoomQueueKey(own.Sale)).Val() != 10 {
		t.Fatalf("%d entries placed, %d places in Redis: want exactly the sale's max_waiters 10", len(placed),
			rdb.ZCard(context.Background(), contract.RoomQueueKey(own.Sale)).Val())
	}
	first := placed[0]
	again := enter(t, gwB, own.Sale, fmt.Sprintf("u%02d", first), nil)
	if again.Status != 200 || again.EntryID != answers[first].EntryID {
		t.Fatalf("re-entering a full room with a place: %d %s, want 200 with entry %s", again.Status, again.Raw, answers[first].EntryID)
	}

	// A sale that sets no bound gets the gateways' max_waiters.
	plain := newRoom(t, rdb, 5, 10*time.Minute, time.Hour, roomArgs{})
	for i := range 3 {
		if a := enter(t, gwA, plain.Sale, fmt.Sprintf("p%d", i), nil); a.Status != 200 {
			t.Fatalf("p%d: %d %s", i, a.Status, a.Raw)
		}
	}
	if a := enter(t, gwB, plain.Sale, "p3", nil); a.Status != http.StatusServiceUnavailable || a.Code != core.CodeQueueFull {
		t.Fatalf("a 4th place with max_waiters 3: %d %s", a.Status, a.Raw)
	}
}

func TestTheBuiltInQueueBoundScalesWithTheStock(t *testing.T) {
	for units, want := range map[int64]int64{0: 10_000, 100: 10_000, 1_000: 50_000, 40_000: 2_000_000, 1_000_000: 2_000_000} {
		if got := core.DefaultMaxWaiters(units); got != want {
			t.Errorf("%d units: %d places, want %d", units, got, want)
		}
	}
}

// After the end the published pre-queue is read from Redis once per gateway and served in
// pages from memory, with caching headers.
func TestThePublishedPrequeueIsReadOnce(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	gw := plainGateway.Base(t)
	r := newRoom(t, rdb, 5, 10*time.Minute, time.Hour, roomArgs{})
	var ids []string
	for i := range 25 {
		a := enter(t, gw, r.Sale, fmt.Sprintf("u%02d", i), nil)
		if a.Status != 200 {
			t.Fatalf("enter: %d %s", a.Status, a.Raw)
		}
		ids = append(ids, a.EntryID)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(core.Rank(r.Seed, ids[i]), core.Rank(r.Seed, ids[j])) < 0 })
	now := redisNow(t, rdb)
	rdb.HSet(ctx, contract.MetaKey(r.Sale), "starts_ms", now.Add(-2*time.Second).UnixMilli(), "ends_ms", now.Add(-time.Second).UnixMilli())
	url := gw + "/seckill/" + r.Sale + "/room/prequeue"
	testenv.WaitFor(t, 5*time.Second, "the gateway to see the end", func() bool {
		return strings.Contains(do(t, http.MethodGet, gw+"/seckill/"+r.Sale+"/room", "", nil).Raw, `"state":"ended"`)
	})

	get := func(query string, headers map[string]string) (*http.Response, PrequeueList) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url+query, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l PrequeueList
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 200 {
			if err := json.Unmarshal(b, &l); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
		}
		return resp, l
	}

	marker := "seckill:{sale:" + r.Sale + "}:room:marker"
	counted := func(m *monitor) int64 {
		m.marked.Store(false)
		testenv.WaitFor(t, 10*time.Second, "the monitor to see the marker", func() bool {
			rdb.Exists(ctx, marker)
			return m.marked.Load()
		})
		return m.count.Load()
	}
	first := startMonitor(t, contract.RoomQueueKey(r.Sale), marker)
	resp, whole := get("", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("the list: %d", resp.StatusCode)
	}
	if n := counted(first); n == 0 {
		t.Fatal("the first request did not read the queue: the monitor sees nothing")
	}
	later := startMonitor(t, contract.RoomQueueKey(r.Sale), marker)

	// Without parameters: the contract's {"seed","entries"}, whole for a list this short.
	if strings.Join(whole.Entries, ",") != strings.Join(ids, ",") || whole.Next != "" || whole.Total != 25 {
		t.Fatalf("the list: %+v, want the 25 entries in rank order and no next", whole)
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "public") || !strings.Contains(cc, "max-age=") || resp.Header.Get("ETag") == "" {
		t.Fatalf("caching headers: Cache-Control %q, ETag %q", cc, resp.Header.Get("ETag"))
	}
	// Pages of 10, chained by next, give the same list.
	var paged []string
	// The natural client loop: an empty after is the first page.
	after := ""
	for pages := 0; pages == 0 || after != ""; pages++ {
		_, p := get("?limit=10&after="+after, nil)
		if pages > 3 || len(p.Entries) > 10 || p.Seed != whole.Seed {
			t.Fatalf("page after %s: %+v", after, p)
		}
		paged = append(paged, p.Entries...)
		after = p.Next
	}
	if strings.Join(paged, ",") != strings.Join(ids, ",") {
		t.Fatalf("paged: %v, want %v", paged, ids)
	}
	if resp, _ := get("", map[string]string{"If-None-Match": resp.Header.Get("ETag")}); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation: %d, want 304", resp.StatusCode)
	}
	for _, q := range []string{"?limit=0", "?limit=10001", "?after=-1", "?after=x"} {
		if a := do(t, http.MethodGet, url+q, "", nil); a.Status != 400 || a.Code != contract.CodeBadRequest {
			t.Errorf("%s: %d %s, want 400 bad_request", q, a.Status, a.Raw)
		}
	}
	if n := counted(later); n != 0 {
		t.Fatalf("%d commands named the queue after the first request, want none: the list is read once", n)
	}
}

// The waiting page holds a Buy button: no other site may frame it (clickjacking) unless the
// shop lists its origins, and only the page's own script runs.
func TestTheWaitingPageMayNotBeFramed(t *testing.T) {
	get := func(h *Room) http.Header {
		t.Helper()
		h.setDefaults()
		if err := h.SetupPage(pageKind); err != nil {
			t.Fatal(err)
		}
		sealer, _ := sealed.NewSealer(sealed.Key{ID: "k1", Secret: []byte(testSecret)})
		h.mem.Sealer = sealer
		req, _ := http.NewRequest(http.MethodGet, "/seckill/s1/queue", nil)
		req.Header.Set("Accept", "text/html")
		w := newRecorder()
		if err := h.ServeHTTP(w, req, nil); err != nil || w.status != 200 {
			t.Fatalf("page: %d %v", w.status, err)
		}
		body := w.body.String()
		open := `<script type="module">`
		script := body[strings.Index(body, open)+len(open) : strings.Index(body, "</script>")]
		sum := sha256.Sum256([]byte(script))
		csp := w.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") || strings.Contains(csp, "unsafe-inline") {
			t.Fatalf("CSP %q: the page's script is not allowed by its hash alone", csp)
		}
		return w.header
	}
	subject := handler.Subject{Sale: "s1", User: "u1"}
	if csp := get(&Room{Kit: roomkit.Kit{Subject: subject}}).Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("default CSP %q: want frame-ancestors 'none'", csp)
	}
	shop := &Room{Kit: roomkit.Kit{Subject: subject, FrameAncestors: []string{"https://shop.example", "'self'"}}}
	if csp := get(shop).Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors https://shop.example 'self'") {
		t.Fatalf("CSP %q: want the shop's frame-ancestors", csp)
	}

	d := caddyfile.NewTestDispenser("seckill_room {\n frame_ancestors https://shop.example\n max_waiters 5000\n}")
	var parsed Room
	if err := parsed.UnmarshalCaddyfile(d); err != nil || len(parsed.FrameAncestors) != 1 || parsed.MaxWaiters != 5000 {
		t.Fatalf("Caddyfile: %+v %v", parsed, err)
	}
	bad := Room{Kit: roomkit.Kit{FrameAncestors: []string{"https://x; script-src *"}}}
	bad.setDefaults()
	if bad.Validate() == nil {
		t.Fatal("a frame_ancestors source that ends the directive was accepted")
	}
}

// recorder is an http.ResponseWriter in memory.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder                    { return &recorder{header: http.Header{}} }
func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(s int)           { r.status = s }

// listStore is a Store whose pre-queues are n made-up places per sale; it counts the pages
// read.
type listStore struct {
	fakeStore
	n     map[string]int64
	pages atomic.Int64
	slow  chan struct{} // page reads wait for it (nil: no wait)
}

func (s *listStore) Prequeue(_ context.Context, sale string, from, count int64) ([]string, int64, error) {
	n := s.n[sale]
	if count == 0 {
		return nil, n, nil
	}
	s.pages.Add(1)
	if s.slow != nil {
		<-s.slow
	}
	var out []string
	for i := from; i < min(from+count, n); i++ {
		raw := fmt.Sprintf("%016d", i)
		out = append(out, strings.Repeat("r", core.RankLen)+raw+"user")
	}
	return out, n, nil
}

// Concurrent first readers share one read; the gateway keeps at most its bound of entry ids,
// the least recently used list dropped first, and a list beyond the bound is never kept.
func TestPrequeueListsAreReadOnceAndKeptWithinABound(t *testing.T) {
	store := &listStore{n: map[string]int64{"a": 25_000, "b": 10, "c": 30_000, "huge": 50_000}, slow: make(chan struct{})}
	h := unitRoom(t, store, handler.Limits{})
	h.mem.SnapshotBound = 40_000
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s, ok, err := h.mem.Snapshot(ctx, "a", "c1", 25_000); err != nil || !ok || s.N() != 25_000 {
				t.Errorf("a: %v %v", ok, err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(store.slow)
	wg.Wait()
	if got := store.pages.Load(); got != 3 {
		t.Fatalf("8 first readers of 25 000 entries read %d pages, want 3 (one reader, pages of %d)", got, core.PrequeuePageMax)
	}
	if p := h.mem.ReadySnapshot("a", "c1").Page(9_999, 2); len(p) != 2 || p[0] != base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%016d", 9_999))) {
		t.Fatalf("page: %v", p)
	}
	if _, ok, _ := h.mem.Snapshot(ctx, "b", "c1", 10); !ok {
		t.Fatal("b not kept")
	}
	h.mem.ReadySnapshot("b", "c1") // b is used after a: a goes first
	if _, ok, _ := h.mem.Snapshot(ctx, "c", "c1", 30_000); !ok || h.mem.ReadySnapshot("a", "c1") != nil || h.mem.ReadySnapshot("b", "c1") == nil {
		t.Fatal("keeping c (30 000 of 40 000) did not drop a, the least recently used")
	}
	before := store.pages.Load()
	if _, ok, err := h.mem.Snapshot(ctx, "huge", "c1", 50_000); ok || err != nil || store.pages.Load() != before {
		t.Fatalf("a list beyond the bound: kept %v, %v, %d pages read", ok, err, store.pages.Load()-before)
	}
	if held := h.mem.SnapshotsHeld(); held > 40_000 {
		t.Fatalf("%d entry ids held, above the bound", held)
	}
}

func (s *listStore) Banned(context.Context, []string, []string) (map[string]time.Time, error) {
	return nil, nil
}
