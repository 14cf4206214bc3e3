package sales

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/saleevents"
	"github.com/seckilledge/seckill/lua"
)

// Rebalancing a sharded sale's stock over its shards (docs/scaling.md): on demand, after
// reconcile, and as soon as a shard runs dry (RunRebalancer).

// PlanRebalance returns the moves that even out stocks over the shards: the units there are
// (negative stocks count 0) are split as contract.SplitStock does, the larger portions going
// first to the hungry shards (hungry[i]: shard i just sold out, so it has buyers waiting; nil
// for none), then to the shards that hold more already, so that as few units as possible move.
// With fewer units than shards, some shards must stay empty: the hungry ones are served first,
// the others keep what they hold. A plan never has a move of 0 units; an even distribution
// yields no moves.
func PlanRebalance(stocks []int64, hungry []bool) []admin.Move {
	k := len(stocks)
	if k < 2 {
		return nil
	}
	order := make([]int, k)
	total := 0
	for i, s := range stocks {
		order[i] = i
		if s > 0 {
			total += int(s)
		}
	}
	isHungry := func(i int) bool { return i < len(hungry) && hungry[i] }
	sort.SliceStable(order, func(a, b int) bool {
		if ha, hb := isHungry(order[a]), isHungry(order[b]); ha != hb {
			return ha
		}
		return stocks[order[a]] > stocks[order[b]]
	})
	portions := contract.SplitStock(total, k)
	target := make([]int, k)
	for rank, shard := range order {
		target[shard] = portions[rank]
	}
	type side struct{ shard, units int }
	var donors, receivers []side
	for i, s := range stocks {
		have := max(int(s), 0)
		switch {
		case have > target[i]:
			donors = append(donors, side{i, have - target[i]})
		case have < target[i]:
			receivers = append(receivers, side{i, target[i] - have})
		}
	}
	var moves []admin.Move
	for len(donors) > 0 && len(receivers) > 0 {
		d, r := &donors[0], &receivers[0]
		n := min(d.units, r.units)
		moves = append(moves, admin.Move{From: d.shard, To: r.shard, Units: n})
		d.units -= n
		r.units -= n
		if d.units == 0 {
			donors = donors[1:]
		}
		if r.units == 0 {
			receivers = receivers[1:]
		}
	}
	return moves
}

// metricRebalanced counts the units rebalance moved (registered by the backend: Collectors).
var metricRebalanced = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "seckill_backend_rebalanced_units_total",
	Help: "Units moved between the shards of sharded sales by rebalance.",
})

// Collectors are the package's metrics, for the backend's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{metricRebalanced} }

// ErrNotSharded is Rebalance's answer for a sale of one shard.
var ErrNotSharded = errors.New("the sale is not sharded")

// Rebalance moves a sharded sale's remaining units from shards that have more than their even
// share to shards that have less, under the sale's lock (see PlanRebalance). Each move is
// shard_take.lua on the donor (atomic: it takes at most what the donor has, and journals the
// move in the donor's own slot), then shard_give.lua on the receiver (once per move id), then
// the journal entry is deleted. So a unit is never created; one interrupted between the halves
// stays journaled and the next rebalance (or reconcile) delivers it.
func (s *Sales) Rebalance(ctx context.Context, sale string) (admin.RebalanceReport, error) {
	return s.RebalanceHungry(ctx, sale, nil)
}

// RebalanceHungry is Rebalance serving the hungry shards first (see PlanRebalance and Hunger); a
// nil Hunger evens out everything.
func (s *Sales) RebalanceHungry(ctx context.Context, sale string, hungry *Hunger) (admin.RebalanceReport, error) {
	rep := admin.RebalanceReport{SaleID: sale, Moves: []admin.Move{}}
	k, err := s.Shards.Of(ctx, s.Pool, sale)
	if err != nil {
		return rep, err
	}
	var exists bool
	if err := s.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sales WHERE id = $1)`, sale).Scan(&exists); err != nil {
		return rep, err
	}
	if !exists {
		return rep, ErrUnknownSale
	}
	rep.Shards = k
	if k < 2 {
		return rep, ErrNotSharded
	}
	err = s.WithSaleLock(ctx, sale, 5*time.Second, func(lock.Held) error {
		return s.RebalanceLocked(ctx, sale, k, hungry, &rep)
	})
	if err == nil && len(rep.Moves)+rep.Finished > 0 {
		s.Log.Info("sale rebalanced", "sale_id", sale, "moves", len(rep.Moves), "finished", rep.Finished)
	}
	return rep, err
}

// RebalanceLocked is the rebalance of a sale of k shards, its lock held by the caller.
func (s *Sales) RebalanceLocked(ctx context.Context, sale string, k int, hungry *Hunger, rep *admin.RebalanceReport) error {
	ids := contract.ShardIDs(sale, k)
	n, err := shards.FinishMoves(ctx, s.Redis, ids)
	rep.Finished = n
	if err != nil {
		return err
	}
	before, err := shards.ReadMetas(ctx, s.Redis, ids)
	if err != nil {
		return err
	}
	for i, ok := range before.Present {
		// Units given to a shard that is not in Redis would be lost: move nothing.
		if !ok {
			return fmt.Errorf("shard %s is not in Redis: preheat the sale first", ids[i])
		}
	}
	rep.StocksBefore = before.Stocks
	// A single-stock sale moves its stock; a sale with variants moves each variant on its
	// own (shard_take.lua takes nothing from it without one), its stock following.
	plans := []string{""}
	if len(before.Variants) > 0 {
		plans = plans[:0]
		for _, v := range before.Variants {
			// Buyers wait for some variants only: the others stay where they are.
			if hungry.wants(v) {
				plans = append(plans, v)
			}
		}
	}
	for _, v := range plans {
		stocks := before.Stocks
		if v != "" {
			stocks = before.VStocks[v]
		}
		for _, m := range PlanRebalance(stocks, hungry.of(v)) {
			got, err := moveUnits(ctx, s.Redis, ids[m.From], ids[m.To], v, m.Units)
			if err != nil {
				return err
			}
			if got > 0 {
				rep.Moves = append(rep.Moves, admin.Move{From: m.From, To: m.To, Units: got, Variant: v})
				metricRebalanced.Add(float64(got))
			}
		}
	}
	after, err := shards.ReadMetas(ctx, s.Redis, ids)
	if err != nil {
		return err
	}
	rep.StocksAfter = after.Stocks
	for i, ok := range after.Present {
		if !ok {
			rep.StocksAfter[i] = -1
		}
	}
	rep.Variants = variantReport(before, after)
	return nil
}

// moveUnits moves up to n units (of variant, "" for a single-stock sale) from shard from to
// shard to and returns how many moved.
func moveUnits(ctx context.Context, rdb redis.UniversalClient, from, to, variant string, n int) (int, error) {
	id := uuid.Must(uuid.NewV7()).String()
	if variant != "" {
		// The scripts read the variant from the id, so the journal (and finishMoves) need
		// nothing more to finish an interrupted variant move.
		id = contract.VariantMoveID(id, variant)
	}
	taken, err := lua.ShardTakeCall{From: from, Move: id, Units: n, To: to}.Run(ctx, rdb)
	if err != nil || taken == 0 {
		return 0, err
	}
	// From here the units are journaled in the donor: an error below leaves them there for
	// finishMoves, never lost. The give outlives a cancelled ctx, so that a shutdown between
	// the halves does not leave units unsellable until the next rebalance.
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if err := shards.GiveUnits(gctx, rdb, from, to, id, taken); err != nil {
		return 0, err
	}
	return taken, nil
}

// HandleRebalance is POST /admin/sales/{id}/rebalance.
func (s *Sales) HandleRebalance(w http.ResponseWriter, r *http.Request) {
	rep, err := s.Rebalance(r.Context(), r.PathValue("id"))
	if errors.Is(err, ErrNotSharded) {
		httpapi.Refuse(w, http.StatusConflict, "not_sharded", "the sale is not sharded: nothing to rebalance")
		return
	}
	s.AnswerLocked(w, "rebalance", err, rep)
}

// RunRebalancer rebalances a sharded sale as soon as one of its shards runs dry: it listens
// to the gates' "sold_out:<sale>:<i>" events on contract.EventsChannel (published by the gate
// script when it sells a shard's last unit, or refuses a buyer on an empty shard: either way
// buyers wait there) and rebalances the sale serving those shards first (coalescing events
// that arrive while one runs). On a sale with variants, "sold_out:<sale>:<i>/<variant>" (the
// shard sold its last unit of the variant, or refused a buyer of it) makes the shard hungry
// for that variant only, and only the variants some shard is hungry for move; a shard whose
// total ran out is hungry for every variant. It runs until ctx ends. An event missed while the
// subscription is down is made up by the next one, or by reconcile (which rebalances too) or
// the admin API.
//
// Only buyers trigger it; a donor emptied by a rebalance publishes nothing, so units never
// bounce between shards on their own: they follow the buyers.
func (s *Sales) RunRebalancer(ctx context.Context) {
	var mu sync.Mutex
	pending := map[string]*Hunger{} // sale -> shards that sold out, and of what
	wake := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			mu.Lock()
			work := pending
			pending = map[string]*Hunger{}
			mu.Unlock()
			for sale, hungry := range work {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				if _, err := s.RebalanceHungry(rctx, sale, hungry); err != nil && ctx.Err() == nil && !errors.Is(err, ErrNotSharded) {
					s.Log.Warn("rebalance failed", "sale_id", sale, "err", err)
				}
				cancel()
			}
		}
	}()
	saleevents.Run(ctx, s.Redis, saleevents.Handler{
		Subscribed: s.Subscribed, // tests wait for it
		Event: func(ev saleevents.Event) {
			if ev.Kind != contract.EventSoldOut {
				return
			}
			target, variant, ok := contract.SplitVariantTarget(ev.Sale)
			if !ok {
				return
			}
			sale, shard, ok := contract.SplitShardID(target)
			if !ok {
				return
			}
			mu.Lock()
			if pending[sale] == nil {
				pending[sale] = &Hunger{}
			}
			pending[sale].Add(shard, variant)
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		},
	})
}

// AfterReconcile evens out a sharded sale's shards once reconcile has repaired them
// (it holds the sale's lock already).
func (s *Sales) AfterReconcile(ctx context.Context, sale string, k int, rep *admin.ReconcileReport) error {
	if k < 2 {
		return nil
	}
	rb := admin.RebalanceReport{SaleID: sale, Shards: k, Moves: []admin.Move{}}
	if err := s.RebalanceLocked(ctx, sale, k, nil, &rb); err != nil {
		return err
	}
	rep.Rebalance = &rb
	if len(rb.Moves) > 0 {
		rep.Actions = append(rep.Actions, fmt.Sprintf("%d moves between shards to even out their stock", len(rb.Moves)))
	}
	return nil
}
