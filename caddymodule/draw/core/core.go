// Package core is the draw at the edge without transport: what one gateway knows of the
// draws it serves (Gateway: each sale's window, difficulty and variants as last read, and its
// entry rate), the difficulty of a new challenge, the entry's body (ParseEntry), and the Store
// port with its Redis adapter (RedisStore: lua/draw_enter.lua, lua/draw_status.lua and the
// draw's settings, each call within the handler's bound). It imports no Caddy (caddymodule/draw is the handler), so its
// tests link no Caddy either (TestTheSharedCorePartsLinkNoCaddy, in internal/testlayout).
package core

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/internal/salecache"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/strictjson"
	"github.com/seckilledge/seckill/lua"
)

// Store is what the draw asks Redis.
type Store interface {
	// Sale reads a sale's draw settings (Draw false for a sale that is not a draw).
	Sale(ctx context.Context, sale string) (*Sale, error)
	// Enter runs draw_enter.lua: an entry, a change of size or a withdrawal.
	Enter(ctx context.Context, call lua.DrawEnterCall) (lua.DrawReply, error)
	// Status runs draw_status.lua: where an entry stands.
	Status(ctx context.Context, call lua.DrawStatusCall) (lua.DrawReply, error)
}

// RedisStore is the Store of a real Redis (every key of a call shares the sale's hash tag),
// each call within Caller's bound (timeout, max_pending).
type RedisStore struct {
	Client redis.UniversalClient
	Caller edge.Caller
}

// Sale reads the draw hash's settings and the sale's variants in one pipeline.
func (s RedisStore) Sale(ctx context.Context, sale string) (*Sale, error) {
	return edge.Call(ctx, s.Caller, func(ctx context.Context) (*Sale, error) { return readSale(ctx, s.Client, sale) })
}

// Enter runs draw_enter.lua.
func (s RedisStore) Enter(ctx context.Context, call lua.DrawEnterCall) (lua.DrawReply, error) {
	return edge.Call(ctx, s.Caller, func(ctx context.Context) (lua.DrawReply, error) { return call.Run(ctx, s.Client) })
}

// Status runs draw_status.lua.
func (s RedisStore) Status(ctx context.Context, call lua.DrawStatusCall) (lua.DrawReply, error) {
	return edge.Call(ctx, s.Caller, func(ctx context.Context) (lua.DrawReply, error) { return call.Run(ctx, s.Client) })
}

// Gateway is what one gateway knows of the draws it serves, over the Store port.
type Gateway struct {
	Store Store
	// CacheTTL: how long a sale's draw settings are kept before they are read again.
	CacheTTL time.Duration
	// DifficultyRate: the entry rate up to which a challenge's difficulty stays at DMin.
	DifficultyRate float64
	Now            func() time.Time
	// sales holds the sales this gateway has read, draws or not: the shared challenge path
	// asks it for every sale, and a sale that is not a draw must not cost a Redis read per
	// challenge (salecache bounds it: anyone can name any sale).
	sales salecache.Cache[*Sale]
}

// Sale is a sale's draw as this gateway last read it: whether the sale is a draw, its
// window, difficulty and variants. Only what the answers and the challenge need; the entry
// script reads the truth again in Redis.
type Sale struct {
	Draw          bool
	Opens, Closes time.Time
	DMin, DMax    int
	Variants      []string // sorted; empty for a sale without variants
	Seq           int64    // the draw's entry counter when read
	read          time.Time
	rate          float64 // first entries per second across gateways, from Seq between reads
}

// Sale returns the sale's draw, from memory while it is younger than CacheTTL.
func (g *Gateway) Sale(ctx context.Context, sale string) (*Sale, error) {
	now := g.Now()
	prev, held := g.sales.Load(sale)
	if held && now.Sub(prev.read) < g.CacheTTL {
		return prev, nil
	}
	c, err := g.Store.Sale(ctx, sale)
	if err != nil {
		return nil, err
	}
	c.read = now
	if prev != nil && prev.Draw && c.Draw {
		// The entry rate is the growth of the entry counter between two reads; reads more
		// than a few seconds apart say little about the rate now.
		if dt := now.Sub(prev.read).Seconds(); dt > 0 && dt < 10 {
			c.rate = float64(c.Seq-prev.Seq) / dt
		}
	}
	g.sales.Store(sale, c)
	return c, nil
}

// Difficulty is the proof of work asked of a new challenge: DMin, one more bit each time the
// entry rate doubles beyond DifficultyRate, at most DMax (sealed.Difficulty).
func (g *Gateway) Difficulty(c *Sale) int {
	if c.DMax < c.DMin {
		return c.DMin
	}
	return sealed.Difficulty(c.DMin, c.DMax, c.rate, g.DifficultyRate)
}

// readSale reads the draw hash's settings and the sale's variants in one pipeline. The seed
// is not read, only whether it exists: it stays in Redis until the draw.
func readSale(ctx context.Context, rdb redis.UniversalClient, sale string) (*Sale, error) {
	pipe := rdb.Pipeline()
	seed := pipe.HExists(ctx, contract.DrawKey(sale), "seed")
	d := pipe.HMGet(ctx, contract.DrawKey(sale), "opens_ms", "closes_ms", "dmin", "dmax", "seq")
	meta := pipe.HGetAll(ctx, contract.MetaKey(sale))
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, err
	}
	c := &Sale{}
	m := meta.Val()
	if !seed.Val() || m["draw"] != "1" {
		return c, nil
	}
	c.Draw = true
	v := d.Val()
	num := func(i int) int64 {
		s, _ := v[i].(string)
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	c.Opens, c.Closes = time.UnixMilli(num(0)), time.UnixMilli(num(1))
	c.DMin, c.DMax, c.Seq = int(num(2)), int(num(3)), num(4)
	for f := range m {
		if id, ok := strings.CutPrefix(f, contract.VariantFieldPrefix); ok {
			c.Variants = append(c.Variants, id)
		}
	}
	sort.Strings(c.Variants)
	return c, nil
}

// MaxEntryBody bounds the entry's body: {"variant":"<64 characters>"} and some whitespace.
const MaxEntryBody = 1024

// EntryBody is the body of POST /seckill/{sale}/draw.
type EntryBody struct {
	Variant string `json:"variant"`
}

// ParseEntry decodes an entry's body strictly (internal/strictjson: no unknown, repeated or
// miscased key, nothing after the object) and checks the variant's syntax; "" (or absent)
// names the sale's only variant. Anything else is a bad request, before Redis is asked.
func ParseEntry(body []byte) (string, bool) {
	var b EntryBody
	if len(body) > MaxEntryBody || strictjson.Unmarshal(body, &b) != nil {
		return "", false
	}
	if b.Variant != "" && !contract.ValidVariantID(b.Variant) {
		return "", false
	}
	return b.Variant, true
}
