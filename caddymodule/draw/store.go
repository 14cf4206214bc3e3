package draw

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// saleDraw is a sale's draw as this gateway last read it: whether the sale is a draw, its
// window, difficulty and variants. Only what the answers and the challenge need; the entry
// script reads the truth again in Redis.
type saleDraw struct {
	draw          bool
	opens, closes time.Time
	dmin, dmax    int
	variants      []string // sorted; empty for a sale without variants
	seq           int64    // the draw's entry counter when read
	read          time.Time
	rate          float64 // first entries per second across gateways, from seq between reads
}

// saleCache holds the sales this gateway has read, draws or not: the shared challenge path
// asks it for every sale, and a sale that is not a draw must not cost a Redis read per
// challenge. Anyone can name any sale, so the cache is bounded (emptied when full).
type saleCache struct {
	sales sync.Map // sale -> *saleDraw
	mu    sync.Mutex
	n     int64
}

const maxCachedSales = 10000

// saleOf returns the sale's draw, from the cache while it is younger than cache_ttl.
func (h *Draw) saleOf(ctx context.Context, sale string) (*saleDraw, error) {
	now := h.now()
	var prev *saleDraw
	if v, ok := h.cache.sales.Load(sale); ok {
		prev = v.(*saleDraw)
		if now.Sub(prev.read) < time.Duration(h.CacheTTL) {
			return prev, nil
		}
	}
	c, err := edge.Call(ctx, h.caller, func(ctx context.Context) (*saleDraw, error) { return readSale(ctx, h.rdb, sale) })
	if err != nil {
		return nil, err
	}
	c.read = now
	if prev != nil && prev.draw && c.draw {
		// The entry rate is the growth of the entry counter between two reads; reads more
		// than a few seconds apart say little about the rate now.
		if dt := now.Sub(prev.read).Seconds(); dt > 0 && dt < 10 {
			c.rate = float64(c.seq-prev.seq) / dt
		}
	}
	if prev == nil {
		h.cache.mu.Lock()
		h.cache.n++
		if h.cache.n > maxCachedSales {
			h.cache.sales.Clear()
			h.cache.n = 1
		}
		h.cache.mu.Unlock()
	}
	h.cache.sales.Store(sale, c)
	return c, nil
}

// difficulty is the proof of work asked of a new challenge: dmin, one more bit each time the
// entry rate doubles beyond difficulty_rate, at most dmax (sealed.Difficulty).
func (h *Draw) difficulty(c *saleDraw) int {
	if c.dmax < c.dmin {
		return c.dmin
	}
	return sealed.Difficulty(c.dmin, c.dmax, c.rate, h.DifficultyRate)
}

// readSale reads the draw hash's settings and the sale's variants in one pipeline. The seed
// is not read, only whether it exists: it stays in Redis until the draw.
func readSale(ctx context.Context, rdb redis.UniversalClient, sale string) (*saleDraw, error) {
	pipe := rdb.Pipeline()
	seed := pipe.HExists(ctx, contract.DrawKey(sale), "seed")
	d := pipe.HMGet(ctx, contract.DrawKey(sale), "opens_ms", "closes_ms", "dmin", "dmax", "seq")
	meta := pipe.HGetAll(ctx, contract.MetaKey(sale))
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, err
	}
	c := &saleDraw{}
	m := meta.Val()
	if !seed.Val() || m["draw"] != "1" {
		return c, nil
	}
	c.draw = true
	v := d.Val()
	num := func(i int) int64 {
		s, _ := v[i].(string)
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	c.opens, c.closes = time.UnixMilli(num(0)), time.UnixMilli(num(1))
	c.dmin, c.dmax, c.seq = int(num(2)), int(num(3)), num(4)
	for f := range m {
		if id, ok := strings.CutPrefix(f, contract.VariantFieldPrefix); ok {
			c.variants = append(c.variants, id)
		}
	}
	sort.Strings(c.variants)
	return c, nil
}

// enterCall runs draw_enter.lua within the handler's bound on Redis calls.
func (h *Draw) enterCall(ctx context.Context, call lua.DrawEnterCall) (lua.DrawReply, error) {
	return edge.Call(ctx, h.caller, func(ctx context.Context) (lua.DrawReply, error) { return call.Run(ctx, h.rdb) })
}

// statusCall runs draw_status.lua within the handler's bound on Redis calls.
func (h *Draw) statusCall(ctx context.Context, call lua.DrawStatusCall) (lua.DrawReply, error) {
	return edge.Call(ctx, h.caller, func(ctx context.Context) (lua.DrawReply, error) { return call.Run(ctx, h.rdb) })
}
