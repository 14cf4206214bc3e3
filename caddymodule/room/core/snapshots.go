package core

import (
	"encoding/base64"
	"sync"
	"time"
)

// The published pre-queue (GET /seckill/{sale}/room/prequeue, after the end) never changes
// once the sale has ended: no entry after the start is ever a pre-queue place. Reading it
// whole on every request would cost ~25 MB and 0.3 s of Redis per request for 1 M waiters.
// So each gateway reads it once, in pages of PrequeuePageMax, keeps the raw entry ids (16
// bytes each) in memory within a bound, and the handler serves pages of it with caching
// headers. A list beyond the bound is served page by page from Redis (ZRANGE by index:
// O(log N + page)), never whole.

// Pages of the published list.
const (
	// PrequeuePageMax is the default and largest `limit` of a page: about 250 KB of JSON.
	PrequeuePageMax = 10_000
	// MaxSnapshotEntries bounds the entry ids a gateway keeps for every sale together
	// (16 bytes each: 64 MB), unless Gateway.SnapshotBound says otherwise.
	MaxSnapshotEntries = 4_000_000
)

// Snapshot is one sale's published list as this gateway read it.
type Snapshot struct {
	commitment string
	ready      chan struct{} // closed once ids or err is set
	ids        []byte        // raw entry ids, EntryIDLen bytes each, in admission order
	err        error
	used       time.Time
}

func (s *Snapshot) N() int64 { return int64(len(s.ids) / EntryIDLen) }

// prequeueCache holds the snapshots of this gateway within a bound of entries, the least
// recently used dropped first.
type prequeueCache struct {
	once  sync.Once
	mu    sync.Mutex
	sales map[string]*Snapshot
	held  int64 // entries held by finished snapshots
	limit int64
}

// Page is entries [after, after+limit) as public entry ids.
func (s *Snapshot) Page(after, limit int64) []string {
	n := s.N()
	if after >= n {
		return []string{}
	}
	end := min(after+limit, n)
	out := make([]string, 0, end-after)
	for i := after; i < end; i++ {
		out = append(out, base64.RawURLEncoding.EncodeToString(s.ids[i*EntryIDLen:(i+1)*EntryIDLen]))
	}
	return out
}

// drop forgets a sale's snapshot (mu held).
func (pc *prequeueCache) drop(sale string) {
	if s, ok := pc.sales[sale]; ok {
		select {
		case <-s.ready:
			pc.held -= s.N()
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
