package caddymodule

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/seckilledge/seckill/caddymodule/internal/metric"
	"github.com/seckilledge/seckill/caddymodule/relay"
)

// workers are the background jobs the app owns: the sale-event subscription (shared across
// reloads through eventsPool) and this config's outbox relay. Handlers only ask for them in
// their Provision; the app starts them in Start, stops the relay in Stop and releases the
// subscription in Cleanup.
type workers struct {
	mu          sync.Mutex
	events      *SaleEvents
	eventsKey   string
	relayChosen bool // the relay's settings are decided (the app's own, or the defaults)
	relay       atomic.Pointer[relay.Relay]
	started     bool
}

// SaleEvents returns the sale-event subscriber shared by every config that uses the same Redis
// settings. Call it from a handler's Provision: the app subscribes in Start (no I/O before)
// and releases its reference in Cleanup.
func (a *App) SaleEvents() *SaleEvents {
	w := a.workers
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.events == nil {
		val, _, _ := eventsPool.LoadOrNew(a.redisKey, func() (caddy.Destructor, error) {
			return newSaleEvents(a.redis.client, a.logger.Named("events")), nil
		})
		w.events, w.eventsKey = val.(*SaleEvents), a.redisKey
		if w.started {
			w.events.start()
		}
	}
	return w.events
}

// UseRelay is called by seckill_gate's Provision: a config that accepts orders runs a relay,
// unless the app's relay is disabled. The app's relay settings apply (Provision already made
// the relay when it has some); without them, the defaults.
func (a *App) UseRelay() {
	w := a.workers
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.relayChosen {
		return
	}
	w.relayChosen = true
	w.relay.Store(a.newRelay(relay.Config{}))
}

// NotifyRelay wakes the relay: sale's outbox has a new entry. It never blocks; without a relay
// in this instance (or without an app: a handler built by hand in a test) it does nothing:
// another instance's relay, or the next scan, finds the entry.
func (a *App) NotifyRelay(sale string) {
	if a == nil || a.workers == nil {
		return
	}
	if r := a.workers.relay.Load(); r != nil {
		r.Notify(sale)
	}
}

// newRelay makes this config's relay (nil when disabled). No I/O: it runs from Start.
func (a *App) newRelay(cfg relay.Config) *relay.Relay {
	if cfg.Disabled {
		return nil
	}
	metric.Register(a.ctx.GetMetricsRegistry(), relay.Collectors()...)
	return relay.New(relay.Options{
		Redis:     a.redis.client,
		Connect:   a.broker.WaitConnection,
		Cork:      a.broker.Cork,
		Namespace: a.Namespace,
		Config:    cfg,
		Logger:    a.logger.Named("relay"),
	})
}

// start subscribes to the sale events (when a handler asked for them) and starts the relay.
func (w *workers) start(ctx context.Context, broker *Broker) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = true
	if w.events != nil {
		w.events.start()
	}
	if r := w.relay.Load(); r != nil {
		broker.Use()
		r.Start(ctx)
	}
}

// stop stops the relay; what it had in flight stays pending, for the next config's relay.
func (w *workers) stop() error {
	if r := w.relay.Load(); r != nil {
		return r.Stop()
	}
	return nil
}

// release drops this config's reference to the event subscription: the last one ends it.
func (w *workers) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.events != nil {
		_, _ = eventsPool.Delete(w.eventsKey) // Destruct's error: the subscription is gone either way
		w.events = nil
	}
}

// relayStatus is the relay's section of /seckill/status, or nil without a relay.
func (a *App) relayStatus() any {
	r := a.workers.relay.Load()
	if r == nil {
		return nil
	}
	return map[string]any{"backlog": r.Backlog(), "namespace": r.Namespace()}
}
