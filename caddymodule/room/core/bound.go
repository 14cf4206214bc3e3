package core

import (
	"context"
	"time"

	"github.com/seckilledge/seckill/caddymodule/edge"
)

// BoundStore runs every call of a Store through the handler's edge.Caller: each waits at most
// the timeout, and beyond max_pending outstanding calls a request is shed (edge.ErrShed)
// without touching Redis.
type BoundStore struct {
	Store
	Caller edge.Caller
}

func (s BoundStore) Room(ctx context.Context, sale string) (SaleRoom, bool, error) {
	type found struct {
		r  SaleRoom
		ok bool
	}
	f, err := edge.Call(ctx, s.Caller, func(ctx context.Context) (found, error) {
		r, ok, err := s.Store.Room(ctx, sale)
		return found{r, ok}, err
	})
	return f.r, f.ok, err
}

func (s BoundStore) Visit(ctx context.Context, sale string, v Visit) (Reply, error) {
	return edge.Call(ctx, s.Caller, func(ctx context.Context) (Reply, error) { return s.Store.Visit(ctx, sale, v) })
}

func (s BoundStore) Public(ctx context.Context, sale string) (Public, error) {
	return edge.Call(ctx, s.Caller, func(ctx context.Context) (Public, error) { return s.Store.Public(ctx, sale) })
}

func (s BoundStore) Prequeue(ctx context.Context, sale string, from, count int64) ([]string, int64, error) {
	type page struct {
		members []string
		total   int64
	}
	p, err := edge.Call(ctx, s.Caller, func(ctx context.Context) (page, error) {
		m, n, err := s.Store.Prequeue(ctx, sale, from, count)
		return page{m, n}, err
	})
	return p.members, p.total, err
}

func (s BoundStore) LanePrequeue(ctx context.Context, sale, lane string, from, count int64) ([]string, int64, error) {
	type page struct {
		members []string
		total   int64
	}
	p, err := edge.Call(ctx, s.Caller, func(ctx context.Context) (page, error) {
		ls, ok := s.Store.(LaneStore)
		if !ok {
			return page{}, ErrNoLaneStore
		}
		m, n, err := ls.LanePrequeue(ctx, sale, lane, from, count)
		return page{m, n}, err
	})
	return p.members, p.total, err
}

func (s BoundStore) Banned(ctx context.Context, zones, users []string) (map[string]time.Time, error) {
	return edge.Call(ctx, s.Caller, func(ctx context.Context) (map[string]time.Time, error) { return s.Store.Banned(ctx, zones, users) })
}
