package core

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule/internal/salecache"
	"github.com/seckilledge/seckill/caddymodule/sealed"
)

// Gateway is what one gateway knows of the rooms it serves, over the Store port: each sale's
// settings as last read (within CacheTTL), its summary and the view carried from one read to
// the next (presence.go), the tickets it verified (tickets.go), the published pre-queues it
// read (prequeue.go), and the passing on of the admissions of banned users (bans.go). The
// handler (caddymodule/room) asks it, and writes the answers.
type Gateway struct {
	Store  Store
	Sealer *sealed.Sealer
	Now    func() time.Time
	Logger *zap.Logger
	Timing
	Counts Counts
	// SnapshotBound bounds the entry ids kept for every published pre-queue together (0:
	// MaxSnapshotEntries); read once, at the first snapshot.
	SnapshotBound int64

	rooms     salecache.Cache[*Cached]
	tickets   *ticketCache
	prequeues prequeueCache
}

// Timing is how the gateway paces what it asks Redis, from the handler's options.
type Timing struct {
	// CacheTTL: how long a sale's room settings are kept before they are read again.
	CacheTTL time.Duration
	// SummaryInterval: how often, at most, the room is looked at to answer from memory.
	SummaryInterval time.Duration
	// AdmitInterval: how often, at most, this gateway lets a room admit.
	AdmitInterval time.Duration
	// FrontWindow: waiters within this much of admissions from the front ask Redis (0: only
	// those the cursor reached).
	FrontWindow time.Duration
	// PresenceWindow: one window of presence for everyone (0: each waiter's refresh_s plus a
	// grace; negative: none, everyone admitted in turn).
	PresenceWindow time.Duration
	// Refresh bounds the refresh_s told to waiters.
	Refresh Refresh
	// BanZones are the throttle zones keyed on the room's user id (bans.go).
	BanZones []string
}

// Counter is what the gateway counts into (a prometheus.Counter is one).
type Counter interface{ Add(float64) }

// Counts are the gateway's counters; a nil one counts nothing.
type Counts struct {
	Admissions, Lapsed, FromMemory, Revoked Counter
	// Rate is told a room's admission rate the first time the gateway reads the room.
	Rate func(sale string, rate float64)
}

func add(c Counter, n float64) {
	if c != nil && n != 0 {
		c.Add(n)
	}
}

// NewGateway is a gateway that knows no room yet; Store, Sealer and Logger are the caller's
// to set.
func NewGateway(t Timing, c Counts) *Gateway {
	return &Gateway{Timing: t, Counts: c, tickets: newTicketCache(), Now: time.Now, Logger: zap.NewNop()}
}

// Cached is a sale's room as this gateway last read it.
type Cached struct {
	Room SaleRoom
	// Rate is the room's entry rate, from Redis's count across gateways and this gateway's
	// entries since.
	Rate EntryRate
	// View is carried from one reading of the room to the next: the pace measures over
	// seconds, the summary lives across reads (presence.go).
	View  *View
	read  time.Time
	label bool
	// reading is set while one request reads the room again after CacheTTL: the others keep
	// this reading meanwhile instead of each sending the same three commands.
	reading atomic.Bool
}

// PaceOf is the pace of a reply's room, after counting the reply's admitted counter.
func (c *Cached) PaceOf(rep Reply) Pace {
	c.View.Pace.Observe(rep.Admitted, rep.Now)
	return c.PaceFrom(rep)
}

// PaceFrom is the pace of a reply's room as measured so far.
func (c *Cached) PaceFrom(rep Reply) Pace {
	p := Pace{Rate: c.Room.Rate, Floor: FloorRate(c.Room.Rate, rep.Stock, c.Room.Settings)}
	p.Observed, p.Measured = c.View.Pace.Rate(rep.Admitted, rep.Now, c.Room.Starts)
	return p
}

// Forget drops every room this gateway has read: the next request reads its room again.
func (g *Gateway) Forget() {
	g.rooms.Clear()
}

// Room is the sale's room, from memory while it is younger than CacheTTL; ok is false when
// the sale has none. Once it is older, one request reads it again while the others keep the
// last reading (the settings change only at a preheat).
func (g *Gateway) Room(ctx context.Context, sale string) (*Cached, bool, error) {
	now := g.Now()
	if c, ok := g.rooms.Load(sale); ok {
		if now.Sub(c.read) < g.CacheTTL || !c.reading.CompareAndSwap(false, true) {
			return c, true, nil
		}
		defer c.reading.Store(false)
	}
	r, ok, err := g.Store.Room(ctx, sale)
	if err != nil || !ok {
		return nil, ok, err
	}
	c := &Cached{Room: r, read: now}
	// The entry rate read with the room is Redis's count across gateways: the freshest view.
	c.Rate.Observe(r.EntryRate, now)
	if prev, loaded := g.rooms.Load(sale); loaded {
		c.label = prev.label
		c.View = prev.View
	}
	if !c.label {
		if g.Counts.Rate != nil {
			g.Counts.Rate(sale, r.Rate)
		}
		c.label = true
	}
	if c.View == nil {
		c.View = NewView()
	}
	g.rooms.Store(sale, c)
	return c, true, nil
}
