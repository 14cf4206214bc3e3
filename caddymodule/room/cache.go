package room

import (
	"context"
	"sync"
	"time"

	"github.com/seckilledge/seckill/caddymodule/room/core"
)

// roomCache holds the rooms this gateway has read, by sale.
type roomCache struct {
	rooms sync.Map // sale -> *cachedRoom
	mu    sync.Mutex
	n     int64
}

// cachedRoom is a sale's room as this gateway last read it.
type cachedRoom struct {
	room core.SaleRoom
	read time.Time
	rate core.EntryRate
	// view is carried from one reading of the room to the next: the pace measures over
	// seconds, the summary lives across reads (summary.go).
	view  *core.View
	label bool
}

// paceOf is the pace of a reply's room, after counting the reply's admitted counter.
func (c *cachedRoom) paceOf(rep core.Reply) core.Pace {
	c.view.Pace.Observe(rep.Admitted, rep.Now)
	return c.paceFrom(rep)
}

// paceFrom is the pace of a reply's room as measured so far.
func (c *cachedRoom) paceFrom(rep core.Reply) core.Pace {
	p := core.Pace{Rate: c.room.Rate, Floor: core.FloorRate(c.room.Rate, rep.Stock, c.room.Settings)}
	p.Observed, p.Measured = c.view.Pace.Rate(rep.Admitted, rep.Now, c.room.Starts)
	return p
}

// maxCachedRooms bounds the cache; only sales that have a room are cached, so it is reached
// only with that many live rooms.
const maxCachedRooms = 10000

func (h *Room) roomOf(ctx context.Context, sale string) (*cachedRoom, bool, error) {
	now := h.now()
	if v, ok := h.cache.rooms.Load(sale); ok {
		c := v.(*cachedRoom)
		if now.Sub(c.read) < time.Duration(h.CacheTTL) {
			return c, true, nil
		}
	}
	r, ok, err := h.store.Room(ctx, sale)
	if err != nil || !ok {
		return nil, ok, err
	}
	c := &cachedRoom{room: r, read: now}
	// The entry rate read with the room is Redis's count across gateways: the freshest view.
	c.rate.Observe(r.EntryRate, now)
	if v, loaded := h.cache.rooms.Load(sale); loaded {
		c.label = v.(*cachedRoom).label
		c.view = v.(*cachedRoom).view
	} else {
		h.cache.mu.Lock()
		h.cache.n++
		if h.cache.n > maxCachedRooms {
			h.cache.rooms.Clear()
			h.cache.n = 1
		}
		h.cache.mu.Unlock()
	}
	if !c.label {
		rateGauge.WithLabelValues(sale).Set(r.Rate)
		c.label = true
	}
	if c.view == nil {
		c.view = core.NewView()
	}
	h.cache.rooms.Store(sale, c)
	return c, true, nil
}
