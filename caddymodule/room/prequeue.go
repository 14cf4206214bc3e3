package room

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/room/core"
)

// The published pre-queue (GET /seckill/{sale}/room/prequeue, after the end) never changes
// once the sale has ended: no entry after the start is ever a pre-queue place. Reading it
// whole on every request cost ~25 MB and 0.3 s of Redis per request for 1 M waiters (issue
// 24, item 6). So each gateway reads it once, in pages of PrequeuePageMax, keeps the raw entry
// ids (16 bytes each) in memory within a bound, and serves pages of it with caching headers.
// A list beyond the bound is served page by page from Redis (ZRANGE by index: O(log N + page)),
// never whole.

// Pages of the published list.
const (
	// PrequeuePageMax is the default and largest `limit`: about 250 KB of JSON.
	PrequeuePageMax = 10_000
	// prequeueMaxAge is the caching lifetime: the list never changes after the end.
	prequeueMaxAge = 24 * time.Hour
	// maxSnapshotEntries bounds the entry ids a gateway keeps for every sale together
	// (16 bytes each: 64 MB).
	maxSnapshotEntries = 4_000_000
)

// PrequeueList is the body of GET /seckill/{sale}/room/prequeue: one page of the pre-queue's
// entry ids in admission order. Without parameters it is the first page, in the contract's
// shape {"seed","entries"}; Next, present when more entries follow, is the `after` of the next
// page.
type PrequeueList struct {
	Seed    string   `json:"seed"`
	Entries []string `json:"entries"`
	Total   int64    `json:"total"`
	Next    string   `json:"next,omitempty"`
}

// prequeueSnapshot is one sale's published list as this gateway read it.
type prequeueSnapshot struct {
	commitment string
	ready      chan struct{} // closed once ids or err is set
	ids        []byte        // raw entry ids, entryIDLen bytes each, in admission order
	err        error
	used       time.Time
}

func (s *prequeueSnapshot) n() int64 { return int64(len(s.ids) / core.EntryIDLen) }

// prequeueCache holds the snapshots of this gateway within a bound of entries, the least
// recently used dropped first.
type prequeueCache struct {
	mu    sync.Mutex
	sales map[string]*prequeueSnapshot
	held  int64 // entries held by finished snapshots
	limit int64
}

func newPrequeueCache(limit int64) *prequeueCache {
	return &prequeueCache{sales: map[string]*prequeueSnapshot{}, limit: limit}
}

// snapshot returns the sale's snapshot, reading it when no gateway request has (one reader per
// sale; the others wait for it). ok is false when the list is too long to keep: the caller
// serves a page from Redis.
func (h *Room) snapshot(ctx context.Context, sale, commitment string, total int64) (*prequeueSnapshot, bool, error) {
	pc := h.prequeues
	if total > pc.limit {
		return nil, false, nil
	}
	pc.mu.Lock()
	s, found := pc.sales[sale]
	if found && s.commitment != commitment {
		pc.drop(sale)
		found = false
	}
	if !found {
		s = &prequeueSnapshot{commitment: commitment, ready: make(chan struct{})}
		pc.sales[sale] = s
		pc.mu.Unlock()
		s.ids, s.err = h.readPrequeue(ctx, sale, total)
		pc.mu.Lock()
		if s.err != nil {
			delete(pc.sales, sale) // the next request tries again
		} else {
			pc.held += s.n()
			pc.evict(sale)
		}
		close(s.ready)
	}
	s.used = h.now()
	pc.mu.Unlock()
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	return s, s.err == nil, s.err
}

// drop forgets a sale's snapshot (mu held).
func (pc *prequeueCache) drop(sale string) {
	if s, ok := pc.sales[sale]; ok {
		select {
		case <-s.ready:
			pc.held -= s.n()
		default:
		}
		delete(pc.sales, sale)
	}
}

// evict drops the least recently used finished snapshots, other than keep, until the held
// entries fit the bound (mu held).
func (pc *prequeueCache) evict(keep string) {
	for pc.held > pc.limit {
		var oldest string
		var at time.Time
		for sale, s := range pc.sales {
			select {
			case <-s.ready:
			default:
				continue
			}
			if sale != keep && (oldest == "" || s.used.Before(at)) {
				oldest, at = sale, s.used
			}
		}
		if oldest == "" {
			return
		}
		pc.drop(oldest)
	}
}

// readPrequeue reads the whole pre-queue, a page per round trip so no single call holds Redis
// long, and keeps the raw entry ids.
func (h *Room) readPrequeue(ctx context.Context, sale string, total int64) ([]byte, error) {
	ids := make([]byte, 0, total*core.EntryIDLen)
	for from := int64(0); from < total; from += PrequeuePageMax {
		members, _, err := h.store.Prequeue(ctx, sale, from, PrequeuePageMax)
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			if len(m) > core.RankLen+core.EntryIDLen {
				ids = append(ids, m[core.RankLen:core.RankLen+core.EntryIDLen]...)
			}
		}
	}
	return ids, nil
}

// prequeuePage reads `after` (entries to skip, default 0) and `limit` (1..PrequeuePageMax,
// default PrequeuePageMax); ok is false when either is malformed.
func prequeuePage(r *http.Request) (after, limit int64, ok bool) {
	q := r.URL.Query()
	after, limit = 0, PrequeuePageMax
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || len(v) > 12 {
			return 0, 0, false
		}
		after = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > PrequeuePageMax {
			return 0, 0, false
		}
		limit = n
	}
	return after, limit, true
}

func (h *Room) servePrequeue(ctx context.Context, w http.ResponseWriter, r *http.Request, sale string) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return h.methodNotAllowed(w, "prequeue", "GET")
	}
	after, limit, ok := prequeuePage(r)
	if !ok {
		return h.refuse(w, "prequeue", handler.Refusal{Status: http.StatusBadRequest, Code: handler.BadRequest.Code,
			Message: "after is a count of entries (>= 0), limit 1 to " + strconv.Itoa(PrequeuePageMax)})
	}
	c, ok, err := h.roomOf(ctx, sale)
	if err != nil {
		return h.unavailable(w, "prequeue", err)
	}
	if !ok {
		return h.refuse(w, "prequeue", noRoom)
	}
	list := PrequeueList{Seed: hex.EncodeToString(c.room.Seed), Entries: []string{}}
	if s := h.readySnapshot(sale, c.room.Commitment); s != nil {
		// Published already: the sale has ended (for good), nothing to ask Redis.
		list.Total = s.n()
		list.Entries = s.page(after, limit)
	} else {
		p, err := h.store.Public(ctx, sale)
		if err != nil {
			return h.unavailable(w, "prequeue", err)
		}
		if p.Now.Before(c.room.Ends) {
			return h.refuse(w, "prequeue", notEnded)
		}
		_, total, err := h.store.Prequeue(ctx, sale, 0, 0)
		if err != nil {
			return h.unavailable(w, "prequeue", err)
		}
		s, kept, err := h.snapshot(ctx, sale, c.room.Commitment, total)
		if err != nil {
			return h.unavailable(w, "prequeue", err)
		}
		list.Total = total
		if kept {
			list.Total = s.n()
			list.Entries = s.page(after, limit)
		} else if after < total {
			members, _, err := h.store.Prequeue(ctx, sale, after, min(limit, total-after))
			if err != nil {
				return h.unavailable(w, "prequeue", err)
			}
			for _, m := range members {
				if id := core.EntryIDOfMember(m); id != "" {
					list.Entries = append(list.Entries, id)
				}
			}
		}
	}
	if end := after + int64(len(list.Entries)); end < list.Total {
		list.Next = strconv.FormatInt(end, 10)
	}
	return h.answerPublished(w, r, list)
}

// readySnapshot is the sale's finished snapshot, or nil.
func (h *Room) readySnapshot(sale, commitment string) *prequeueSnapshot {
	pc := h.prequeues
	pc.mu.Lock()
	defer pc.mu.Unlock()
	s, ok := pc.sales[sale]
	if !ok || s.commitment != commitment {
		return nil
	}
	select {
	case <-s.ready:
		if s.err != nil {
			return nil
		}
		s.used = h.now()
		return s
	default:
		return nil
	}
}

// page is entries [after, after+limit) as public entry ids.
func (s *prequeueSnapshot) page(after, limit int64) []string {
	n := s.n()
	if after >= n {
		return []string{}
	}
	end := min(after+limit, n)
	out := make([]string, 0, end-after)
	for i := after; i < end; i++ {
		out = append(out, base64.RawURLEncoding.EncodeToString(s.ids[i*core.EntryIDLen:(i+1)*core.EntryIDLen]))
	}
	return out
}

// answerPublished answers a page of the published list: the same bytes for every request of
// it from now on, so shared caches keep it (public, max-age) and a client revalidates with
// If-None-Match for a 304.
func (h *Room) answerPublished(w http.ResponseWriter, r *http.Request, list PrequeueList) error {
	b, err := json.Marshal(list)
	if err != nil {
		return h.unavailable(w, "prequeue", err)
	}
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	hd := w.Header()
	hd.Set("ETag", etag)
	hd.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(prequeueMaxAge.Seconds()))+", immutable")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		requests.WithLabelValues("prequeue", "not_modified").Inc()
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	requests.WithLabelValues("prequeue", "ok").Inc()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	_, err = w.Write(b)
	return err
}

// etagMatches implements If-None-Match's list (weak comparison, "*").
func etagMatches(header, etag string) bool {
	for header != "" {
		var tag string
		tag, header, _ = strings.Cut(header, ",")
		tag = strings.TrimSpace(tag)
		if tag == "*" || tag == etag || tag == "W/"+etag {
			return true
		}
	}
	return false
}
