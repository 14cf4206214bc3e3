package caddymodule

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/saleevents"
	"go.uber.org/zap"
)

// eventsPool holds one SaleEvents subscriber per Redis configuration (the same key as the
// Redis client), so a config reload keeps the subscription and the flags it has learned. The
// app takes its reference when a handler asks for it (App.SaleEvents), starts it in Start and
// releases it in Cleanup.
var eventsPool = caddy.NewUsagePool()

// SaleEvents is this instance's view of the sale events broadcast on contract.EventsChannel:
// which sales are sold out, and the windows of sales learnt from the gate's not_started and
// ended answers (forgotten on "window:<sale>", "paused:", "resumed:" and "restock:"). A handler that sees `sold_out` from Redis marks the sale here; the
// gate script publishes "sold_out:<sale>" when it sells the last unit, so every instance
// learns it; "restock:<sale>" (preheat, compensation, release) clears it.
//
// The flags are a cache of Redis, never the authority: when the subscription is (re)established
// every flag is cleared, because a restock may have been missed while it was down. A cleared
// flag costs one script call; a stale flag would refuse buyers while stock exists.
type SaleEvents struct {
	client redis.UniversalClient
	logger *zap.Logger
	sales  sync.Map // sale id -> *saleFlag
	// epoch rises on every (re)subscription; it is part of every generation, so a sold-out
	// answer that raced with a resubscription cannot set a flag.
	epoch     atomic.Uint64
	ctx       context.Context // of the subscription: cancelled by Destruct
	cancel    context.CancelFunc
	started   sync.Once
	done      chan struct{} // closed when the subscription has ended
	connected atomic.Bool
}

type saleFlag struct {
	soldOut atomic.Bool
	// window is the sale's window (unix ms) learnt from a not_started or ended answer; nil
	// when not known.
	window atomic.Pointer[[2]int64]
	gen    atomic.Uint64 // restock generation of this sale
	// variants holds the sold-out flags of the sale's variants (variant id -> *atomic.Bool).
	// They share the sale's generation: "restock:<sale>" clears them all.
	variants sync.Map
}

// variant returns the flag of variant, made on first use.
func (f *saleFlag) variant(v string) *atomic.Bool {
	if b, ok := f.variants.Load(v); ok {
		return b.(*atomic.Bool)
	}
	b, _ := f.variants.LoadOrStore(v, new(atomic.Bool))
	return b.(*atomic.Bool)
}

// clear drops the sale's flag and its variants', and its window.
func (f *saleFlag) clear() {
	f.soldOut.Store(false)
	f.window.Store(nil)
	f.variants.Range(func(_, b any) bool {
		b.(*atomic.Bool).Store(false)
		return true
	})
}

// splitTarget splits a flag name: a sale or shard id, or contract.VariantTarget of one.
func splitTarget(t string) (sale, variant string) {
	sale, variant, _ = strings.Cut(t, "/")
	return sale, variant
}

func newSaleEvents(client redis.UniversalClient, logger *zap.Logger) *SaleEvents {
	ctx, cancel := context.WithCancel(context.Background())
	return &SaleEvents{client: client, logger: logger, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// NewSaleEvents starts a subscriber on client outside of Caddy (tests, tools). Close it with
// Destruct.
func NewSaleEvents(client redis.UniversalClient, logger *zap.Logger) *SaleEvents {
	e := newSaleEvents(client, logger)
	e.start()
	return e
}

// start subscribes (once): the app calls it in Start, so that Provision does no I/O.
func (e *SaleEvents) start() {
	e.started.Do(func() {
		go func() {
			defer close(e.done)
			saleevents.Run(e.ctx, e.client, saleevents.Handler{
				Subscribed: func() {
					e.clearAll()
					e.connected.Store(true)
				},
				Event: e.apply,
				Lost: func(err error) {
					e.connected.Store(false)
					e.logger.Warn("sale events subscription lost; resubscribing", zap.Error(err))
				},
			})
		}()
	})
}

func (e *SaleEvents) flag(sale string) *saleFlag {
	if f, ok := e.sales.Load(sale); ok {
		return f.(*saleFlag)
	}
	f, _ := e.sales.LoadOrStore(sale, new(saleFlag))
	return f.(*saleFlag)
}

// SoldOut reports whether this instance knows sale to be sold out. It never touches Redis.
// sale may name a variant (contract.VariantTarget): that variant's flag.
func (e *SaleEvents) SoldOut(sale string) bool {
	sale, variant := splitTarget(sale)
	f, ok := e.sales.Load(sale)
	if !ok {
		return false
	}
	if variant == "" {
		return f.(*saleFlag).soldOut.Load()
	}
	b, ok := f.(*saleFlag).variants.Load(variant)
	return ok && b.(*atomic.Bool).Load()
}

// Generation is a token to take before asking Redis; pass it to MarkSoldOut with the answer so
// that a restock (or a resubscription) that arrived meanwhile wins over the older answer
// (handler.Generation: the cores hold it without linking Caddy).
type Generation = handler.Generation

// Generation returns the current generation of sale (a variant's is its sale's).
func (e *SaleEvents) Generation(sale string) Generation {
	sale, _ = splitTarget(sale)
	g := Generation{Epoch: e.epoch.Load()}
	if f, ok := e.sales.Load(sale); ok {
		g.Restocks = f.(*saleFlag).gen.Load()
	}
	return g
}

// MarkSoldOut records that Redis answered sold_out for sale, unless a restock or a
// resubscription happened since gen was taken. It is a no-op while the subscription is down:
// a flag nobody can clear must not be set.
func (e *SaleEvents) MarkSoldOut(sale string, gen Generation) {
	if !e.connected.Load() {
		return
	}
	sale, variant := splitTarget(sale)
	f := e.flag(sale)
	flag := &f.soldOut
	if variant != "" {
		flag = f.variant(variant)
	}
	same := func() bool { return f.gen.Load() == gen.Restocks && e.epoch.Load() == gen.Epoch }
	if !same() {
		return
	}
	flag.Store(true)
	// A restock that landed between the check and the store bumps gen before clearing; redo
	// the check so the flag never outlives it.
	if !same() {
		flag.Store(false)
	}
}

// Apply handles one event message ("sold_out:<sale>", "sold_out:<sale>/<variant>" or
// "restock:<sale>").
func (e *SaleEvents) Apply(msg string) {
	if ev, ok := saleevents.Parse(msg); ok {
		e.apply(ev)
	}
}

// apply handles one event. A sharded sale's events name one shard ("sold_out:<sale>:<i>"):
// each shard has its own flag, keyed by its shard id.
func (e *SaleEvents) apply(ev saleevents.Event) {
	switch ev.Kind {
	case contract.EventSoldOut:
		sale, variant := splitTarget(ev.Sale)
		if variant != "" {
			e.flag(sale).variant(variant).Store(true)
			return
		}
		e.flag(sale).soldOut.Store(true)
	case contract.EventRestock:
		// A restock names a sale or shard: it clears its flag and its variants' flags.
		sale, variant := splitTarget(ev.Sale)
		if variant != "" {
			return
		}
		f := e.flag(sale)
		f.gen.Add(1)
		f.clear()
	case contract.EventWindow, eventPaused, eventResumed:
		// The window moved, or the state the script checks before it changed: the remembered
		// window goes (a window learnt meanwhile is not kept: the generation moves first).
		sale, variant := splitTarget(ev.Sale)
		if variant != "" {
			return
		}
		if v, ok := e.sales.Load(sale); ok {
			f := v.(*saleFlag)
			f.gen.Add(1)
			f.window.Store(nil)
		}
	}
}

// The backend's pause and resume events (backend/controls): the script answers paused before
// it looks at the window, so a paused sale's window is not an answer.
const (
	eventPaused  = "paused"
	eventResumed = "resumed"
)

// Window returns the window of sale (unix ms) this instance learnt, when it knows one. It never
// touches Redis.
func (e *SaleEvents) Window(sale string) (starts, ends int64, ok bool) {
	f, found := e.sales.Load(sale)
	if !found {
		return 0, 0, false
	}
	w := f.(*saleFlag).window.Load()
	if w == nil {
		return 0, 0, false
	}
	return w[0], w[1], true
}

// MarkWindow records the window of sale that Redis answered with, unless a window, pause,
// resume or restock event or a resubscription happened since gen was taken. A no-op while the
// subscription is down, as MarkSoldOut.
func (e *SaleEvents) MarkWindow(sale string, starts, ends int64, gen Generation) {
	if !e.connected.Load() {
		return
	}
	f := e.flag(sale)
	same := func() bool { return f.gen.Load() == gen.Restocks && e.epoch.Load() == gen.Epoch }
	if !same() {
		return
	}
	w := &[2]int64{starts, ends}
	f.window.Store(w)
	if !same() {
		f.window.CompareAndSwap(w, nil)
	}
}

// Connected reports whether the subscription is established (tests wait for it).
func (e *SaleEvents) Connected() bool { return e.connected.Load() }

func (e *SaleEvents) clearAll() {
	e.epoch.Add(1)
	e.sales.Range(func(_, v any) bool {
		v.(*saleFlag).clear()
		return true
	})
}

// Destruct stops the subscriber when the last config using it is unloaded.
func (e *SaleEvents) Destruct() error {
	e.cancel()
	e.started.Do(func() { close(e.done) }) // never started: nothing to wait for
	<-e.done
	e.connected.Store(false)
	return nil
}

// Interface guard
var _ caddy.Destructor = (*SaleEvents)(nil)
