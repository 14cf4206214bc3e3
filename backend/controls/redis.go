package controls

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/contract"
)

// The Redis side of the operator controls. Every script touches one meta hash (and keys under
// its hash tag), so on a sharded sale each runs once per shard, and all of them run unchanged
// on Redis Cluster. They live next to the controls rather than in lua/ because only the
// backend's controls run them.

//go:embed *.lua
var controlScripts embed.FS

func controlScript(name string) *redis.Script {
	src, err := controlScripts.ReadFile(name + ".lua")
	if err != nil {
		panic(err)
	}
	return redis.NewScript(string(src))
}

var (
	scriptState  = controlScript("state")
	scriptWindow = controlScript("window")
	scriptStock  = controlScript("stock")
)

// Meta hash states the controls read and write (contract.FieldState). Preheat writes
// stateOpen; the gateways refuse with 503 paused while it is statePaused.
const (
	stateOpen   = "open"
	statePaused = "paused"
)

// Events published on contract.EventsChannel by the controls, next to the contract's
// sold_out and restock: "paused:<sale>" and "resumed:<sale>", so a gateway that caches the
// state learns of a change at once (the scripts read the meta's state anyway).
const (
	eventPaused  = "paused"
	eventResumed = "resumed"
)

// StockRequestsKey is a sale's (or shard's) set of stock-change request ids applied in Redis.
func StockRequestsKey(id string) string { return "seckill:" + contract.SaleTag(id) + ":stock_requests" }

// metaIDs lists the ids whose meta hash a control writes: the sale's own and, for a sharded
// sale, every shard's (the gate reads the shard's meta when it decides).
func metaIDs(sale string, shards int) []string {
	if shards <= 1 {
		return []string{sale}
	}
	return append([]string{sale}, contract.ShardIDs(sale, shards)...)
}

// setState writes state into every meta hash of the sale that exists in Redis and publishes
// event. It reports whether the sale is in Redis at all.
func (ct *Controls) setState(ctx context.Context, sale string, shards int, state, event string) (bool, error) {
	inRedis := false
	for _, id := range metaIDs(sale, shards) {
		err := scriptState.Run(ctx, ct.Redis, []string{contract.MetaKey(id)}, state).Err()
		switch {
		case err == nil:
			inRedis = true
		case errors.Is(err, redis.Nil):
		default:
			return inRedis, fmt.Errorf("state.lua on %s: %w", id, err)
		}
	}
	return inRedis, ct.Redis.Publish(ctx, contract.EventsChannel, event+":"+sale).Err()
}

// redisStates reads the state field of every meta hash of the sale that exists.
func (ct *Controls) redisStates(ctx context.Context, sale string, shards int) ([]string, error) {
	ids := metaIDs(sale, shards)
	pipe := ct.Redis.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, contract.MetaKey(id), contract.FieldStock, contract.FieldState)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	var out []string
	for _, c := range cmds {
		v := c.Val()
		if len(v) == 2 && v[0] != nil {
			st, _ := v[1].(string)
			out = append(out, st)
		}
	}
	return out, nil
}

// setWindow writes a new window into every meta hash of the sale that exists in Redis and
// publishes "window:<sale>".
func (ct *Controls) setWindow(ctx context.Context, sale string, shards int, startsMS, endsMS int64) error {
	for _, id := range metaIDs(sale, shards) {
		err := scriptWindow.Run(ctx, ct.Redis, []string{contract.MetaKey(id), contract.BuyersKey(id), contract.HeldKey(id)},
			startsMS, endsMS, ct.Retention.Milliseconds()).Err()
		if err != nil {
			return fmt.Errorf("window.lua on %s: %w", id, err)
		}
	}
	// Gateways that remember the window (to answer not_started and ended without Redis)
	// forget it and ask again.
	return ct.Redis.Publish(ctx, contract.EventsChannel, contract.EventWindow+":"+sale).Err()
}

// Outcomes of stock.lua.
const (
	stockNotInRedis = 0
	stockApplied    = 1
	stockAlready    = 2
	stockRefused    = 3
)

// errStockShort refuses a removal of more units than are unsold.
var errStockShort = errors.New("not enough unsold units")

// applyStockRedis applies delta to the sale's Redis stock once for request id req: on an
// unsharded sale in one script call; on a sharded one spread over the shards (an addition
// evenly, a removal from the shards that hold most), each shard recording req. When a shard
// refuses a removal (buyers took its units since the snapshot), the shards already cut get
// their units back (under req+"#undo") and errStockShort is returned. With a variant ("" for
// none), the variant's units move together with the total in each script call, and a sharded
// sale's shares are judged by each shard's units of that variant.
func (ct *Controls) applyStockRedis(ctx context.Context, sale string, k int, req string, delta int, variant string) error {
	run := func(id string, req string, delta int64) ([]int64, error) {
		return scriptStock.Run(ctx, ct.Redis, []string{contract.MetaKey(id), StockRequestsKey(id)}, id, req, delta, variant).Int64Slice()
	}
	if k <= 1 {
		out, err := run(sale, req, int64(delta))
		if err != nil {
			return fmt.Errorf("stock.lua: %w", err)
		}
		if out[1] == stockRefused {
			return errStockShort
		}
		return nil
	}
	ids := contract.ShardIDs(sale, k)
	// One round trip reads each shard's total and its units of every variant.
	metas, err := shards.ReadMetas(ctx, ct.Redis, ids)
	if err != nil {
		return err
	}
	for _, ok := range metas.Present {
		if !ok {
			return nil // not (fully) in Redis: preheat loads the Postgres stock
		}
	}
	stocks := metas.Stocks
	if variant != "" {
		// A shard without the variant's field holds none of it.
		stocks = metas.VStocks[variant]
		if stocks == nil {
			stocks = make([]int64, len(ids))
		}
	}
	deltas := reconcile.ShardDeltas(stocks, int64(delta))
	var done []int
	for i, id := range ids {
		if deltas[i] == 0 {
			continue
		}
		out, err := run(id, req, deltas[i])
		if err == nil && out[1] != stockRefused {
			done = append(done, i)
			continue
		}
		for _, j := range done {
			_, _ = run(ids[j], req+"#undo", -deltas[j])
		}
		if err != nil {
			return fmt.Errorf("stock.lua on %s: %w", id, err)
		}
		return errStockShort
	}
	if delta > 0 {
		// The gateways' sold-out flags of a sharded sale are per shard (published above);
		// the sale's own is cleared too, for gateways that keep one.
		return ct.Redis.Publish(ctx, contract.EventsChannel, contract.EventRestock+":"+sale).Err()
	}
	return nil
}
