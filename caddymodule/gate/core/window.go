package core

import (
	"sync"
	"time"

	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
)

// WindowCache is this instance's memory of the sales' windows (caddymodule.SaleEvents), learnt
// from the script's not_started and ended answers, which carry the window. It is a cache of
// Redis: every event that may change what the script answers before its stock check (the
// backend's "window:<sale>" when it moves a window, "paused:", "resumed:", "restock:") and
// every resubscription forget a sale's window, and a window learnt while a forgetting
// happened (MarkWindow's gen) is not kept. The sale is the sale id, never a shard's: the
// backend writes one window into all of a sale's meta hashes.
type WindowCache interface {
	// Window returns the window of sale in unix ms; ok is false when it is not known.
	Window(sale string) (starts, ends int64, ok bool)
	// MarkWindow records the window of sale, unless sale's generation moved since gen.
	MarkWindow(sale string, starts, ends int64, gen hcore.Generation)
}

// WindowMargin is how far outside the window a click must be, by this gateway's clock, to be
// answered from memory: nearer, Redis TIME decides (a gateway whose clock is off by less than
// this never refuses a buyer at the opening second, nor answers ended before the end).
const WindowMargin = time.Second

// fromWindow answers not_started or ended from the remembered window of sale, when the clock is
// clearly outside it.
func (d *Decider) fromWindow(sale string) (Verdict, bool) {
	if d.Windows == nil {
		return Verdict{}, false
	}
	starts, ends, ok := d.Windows.Window(sale)
	if !ok {
		return Verdict{}, false
	}
	now := d.Now().UnixMilli()
	switch {
	case now < starts-WindowMargin.Milliseconds():
		return Verdict{Outcome: NotStarted, Target: sale, Starts: starts, Ends: ends, Memory: true}, true
	case now >= ends+WindowMargin.Milliseconds():
		return Verdict{Outcome: Ended, Target: sale, Starts: starts, Ends: ends, Memory: true}, true
	}
	return Verdict{}, false
}

// rememberWindow keeps the window a not_started or ended answer carried.
func (d *Decider) rememberWindow(sale string, v Verdict, gen hcore.Generation) {
	if d.Windows == nil || (v.Outcome != NotStarted && v.Outcome != Ended) || v.Ends <= v.Starts {
		return
	}
	d.Windows.MarkWindow(sale, v.Starts, v.Ends, gen)
}

// generalTargets are the sales and shards that answered General (gate_common.lua: not a common
// sale). A sale never becomes common again (its variants, limit, room, draw and waitlist stay),
// so they are kept; bounded, it starts again past maxGeneral targets (a forgotten one costs
// one more General answer).
type generalTargets struct {
	m sync.Map // target -> struct{}
	n sync.Mutex
	c int
}

const maxGeneral = 4096

func (g *generalTargets) has(target string) bool {
	_, ok := g.m.Load(target)
	return ok
}

func (g *generalTargets) add(target string) {
	g.n.Lock()
	defer g.n.Unlock()
	if g.c >= maxGeneral {
		g.m.Clear()
		g.c = 0
	}
	if _, loaded := g.m.LoadOrStore(target, struct{}{}); !loaded {
		g.c++
	}
}
