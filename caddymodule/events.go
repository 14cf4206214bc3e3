package caddymodule

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"go.uber.org/zap"
)

// eventsPool holds one SaleEvents subscriber per Redis configuration (the same key as the
// Redis client), so a config reload keeps the subscription and the flags it has learned.
var eventsPool = caddy.NewUsagePool()

// SaleEvents is this instance's view of the sale events broadcast on contract.EventsChannel:
// which sales are sold out. A handler that sees `sold_out` from Redis marks the sale here; the
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
	cancel    context.CancelFunc
	done      chan struct{}
	connected atomic.Bool
	ps        atomic.Pointer[redis.PubSub] // closed by Destruct to end a blocking read
}

type saleFlag struct {
	soldOut atomic.Bool
	gen     atomic.Uint64 // restock generation of this sale
}

// SaleEvents returns the sale-event subscriber shared by every config that uses the same Redis
// settings, starting it on first use. Call it from a handler's Provision; the reference is
// released when this app stops.
func (a *App) SaleEvents() *SaleEvents {
	appEventsMu.Lock()
	defer appEventsMu.Unlock()
	if e, ok := appEvents[a]; ok {
		return e
	}
	val, _, _ := eventsPool.LoadOrNew(a.redisKey, func() (caddy.Destructor, error) {
		return newSaleEvents(a.redis.client, a.logger.Named("events")), nil
	})
	e := val.(*SaleEvents)
	appEvents[a] = e
	key := a.redisKey
	a.OnStop(func() error {
		appEventsMu.Lock()
		delete(appEvents, a)
		appEventsMu.Unlock()
		_, err := eventsPool.Delete(key)
		return err
	})
	return e
}

// appEvents remembers which subscriber each app holds a reference to (one per app).
var (
	appEventsMu sync.Mutex
	appEvents   = map[*App]*SaleEvents{}
)

func newSaleEvents(client redis.UniversalClient, logger *zap.Logger) *SaleEvents {
	ctx, cancel := context.WithCancel(context.Background())
	e := &SaleEvents{client: client, logger: logger, cancel: cancel, done: make(chan struct{})}
	go e.run(ctx)
	return e
}

// NewSaleEvents starts a subscriber on client outside of Caddy (tests, tools). Close it with
// Destruct.
func NewSaleEvents(client redis.UniversalClient, logger *zap.Logger) *SaleEvents {
	return newSaleEvents(client, logger)
}

func (e *SaleEvents) flag(sale string) *saleFlag {
	if f, ok := e.sales.Load(sale); ok {
		return f.(*saleFlag)
	}
	f, _ := e.sales.LoadOrStore(sale, new(saleFlag))
	return f.(*saleFlag)
}

// SoldOut reports whether this instance knows sale to be sold out. It never touches Redis.
func (e *SaleEvents) SoldOut(sale string) bool {
	f, ok := e.sales.Load(sale)
	return ok && f.(*saleFlag).soldOut.Load()
}

// Generation is a token to take before asking Redis; pass it to MarkSoldOut with the answer so
// that a restock (or a resubscription) that arrived meanwhile wins over the older answer.
type Generation struct{ epoch, restocks uint64 }

// Generation returns the current generation of sale.
func (e *SaleEvents) Generation(sale string) Generation {
	g := Generation{epoch: e.epoch.Load()}
	if f, ok := e.sales.Load(sale); ok {
		g.restocks = f.(*saleFlag).gen.Load()
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
	f := e.flag(sale)
	same := func() bool { return f.gen.Load() == gen.restocks && e.epoch.Load() == gen.epoch }
	if !same() {
		return
	}
	f.soldOut.Store(true)
	// A restock that landed between the check and the store bumps gen before clearing; redo
	// the check so the flag never outlives it.
	if !same() {
		f.soldOut.Store(false)
	}
}

// Apply handles one event message ("sold_out:<sale>" or "restock:<sale>").
func (e *SaleEvents) Apply(msg string) {
	kind, sale, ok := strings.Cut(msg, ":")
	// A sharded sale's events name one shard ("sold_out:<sale>:<i>"): each shard has its own
	// flag, keyed by its shard id.
	if !ok || !contract.ValidSaleOrShard(sale) {
		return
	}
	switch kind {
	case contract.EventSoldOut:
		e.flag(sale).soldOut.Store(true)
	case contract.EventRestock:
		f := e.flag(sale)
		f.gen.Add(1)
		f.soldOut.Store(false)
	}
}

// Connected reports whether the subscription is established (tests wait for it).
func (e *SaleEvents) Connected() bool { return e.connected.Load() }

func (e *SaleEvents) clearAll() {
	e.epoch.Add(1)
	e.sales.Range(func(_, v any) bool {
		v.(*saleFlag).soldOut.Store(false)
		return true
	})
}

func (e *SaleEvents) run(ctx context.Context) {
	defer close(e.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		ps := e.client.Subscribe(ctx, contract.EventsChannel)
		e.ps.Store(ps)
		if ctx.Err() != nil { // Destruct ran before the store
			_ = ps.Close()
			return
		}
		e.receive(ctx, ps)
		_ = ps.Close()
		e.connected.Store(false)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// receive reads until the subscription fails. go-redis resubscribes a PubSub by itself after a
// broken connection; each (re)subscription confirmation clears every flag.
func (e *SaleEvents) receive(ctx context.Context, ps *redis.PubSub) {
	for {
		msg, err := ps.ReceiveTimeout(ctx, 15*time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var nerr interface{ Timeout() bool }
			if errors.As(err, &nerr) && nerr.Timeout() {
				// Quiet channel: check the connection is alive.
				if perr := ps.Ping(ctx); perr == nil {
					continue
				}
			}
			if e.connected.Swap(false) {
				e.logger.Warn("sale events subscription lost; resubscribing", zap.Error(err))
			}
			return
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				e.clearAll()
				e.connected.Store(true)
			}
		case *redis.Message:
			e.Apply(m.Payload)
		}
	}
}

// Destruct stops the subscriber when the last config using it is unloaded.
func (e *SaleEvents) Destruct() error {
	e.cancel()
	if ps := e.ps.Load(); ps != nil {
		_ = ps.Close()
	}
	<-e.done
	return nil
}
