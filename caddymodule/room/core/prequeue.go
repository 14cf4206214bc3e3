package core

import (
	"context"
)

// prequeuesOf is the gateway's pre-queue cache, made at its first use with SnapshotBound.
func (g *Gateway) prequeuesOf() *prequeueCache {
	pc := &g.prequeues
	pc.once.Do(func() {
		pc.sales = map[string]*Snapshot{}
		pc.limit = g.SnapshotBound
		if pc.limit <= 0 {
			pc.limit = MaxSnapshotEntries
		}
	})
	return pc
}

// Snapshot returns the sale's snapshot, reading it when no gateway request has (one reader per
// sale; the others wait for it). ok is false when the list is too long to keep: the caller
// serves a page from Redis.
func (g *Gateway) Snapshot(ctx context.Context, sale, commitment string, total int64) (*Snapshot, bool, error) {
	pc := g.prequeuesOf()
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
		s = &Snapshot{commitment: commitment, ready: make(chan struct{})}
		pc.sales[sale] = s
		pc.mu.Unlock()
		s.ids, s.err = g.readPrequeue(ctx, sale, total)
		pc.mu.Lock()
		if s.err != nil {
			delete(pc.sales, sale) // the next request tries again
		} else {
			pc.held += s.N()
			pc.evict(sale)
		}
		close(s.ready)
	}
	s.used = g.Now()
	pc.mu.Unlock()
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	return s, s.err == nil, s.err
}

// readPrequeue reads the whole pre-queue, a page per round trip so no single call holds Redis
// long, and keeps the raw entry ids.
func (g *Gateway) readPrequeue(ctx context.Context, sale string, total int64) ([]byte, error) {
	ids := make([]byte, 0, total*EntryIDLen)
	for from := int64(0); from < total; from += PrequeuePageMax {
		members, _, err := g.Store.Prequeue(ctx, sale, from, PrequeuePageMax)
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			if len(m) > RankLen+EntryIDLen {
				ids = append(ids, m[RankLen:RankLen+EntryIDLen]...)
			}
		}
	}
	return ids, nil
}

// ReadySnapshot is the sale's finished snapshot, or nil.
func (g *Gateway) ReadySnapshot(sale, commitment string) *Snapshot {
	pc := g.prequeuesOf()
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
		s.used = g.Now()
		return s
	default:
		return nil
	}
}

// SnapshotsHeld is how many entry ids the gateway keeps for the published pre-queues.
func (g *Gateway) SnapshotsHeld() int64 {
	pc := g.prequeuesOf()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.held
}
