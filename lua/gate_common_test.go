//go:build integration

package lua

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// commonCase is one state of a sale and one purchase on it, set up alike on two sales: one
// decided by gate.lua, one by gate_common.lua.
type commonCase struct {
	name  string
	meta  func(now int64) map[string]any // the meta hash (nil: no sale)
	setup func(t *testing.T, rdb *redis.Client, sale, user string, now int64)
	token func(now int64) string // the presented token's store value ("" for none)
	order string                 // the order id of the call ("" for "o-new")
	tp    string
}

func openMeta(stock int) func(int64) map[string]any {
	return func(now int64) map[string]any {
		return map[string]any{"stock": stock, "starts_ms": now - 3_600_000, "ends_ms": now + 3_600_000, "state": "open", "buyers_ttl": 1}
	}
}

func with(base func(int64) map[string]any, kv ...any) func(int64) map[string]any {
	return func(now int64) map[string]any {
		m := base(now)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
				continue
			}
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
}

func bought(order string) func(*testing.T, *redis.Client, string, string, int64) {
	return func(t *testing.T, rdb *redis.Client, sale, user string, _ int64) {
		rdb.HSet(context.Background(), contract.BuyersKey(sale), user, order)
	}
}

func issued(value func(int64) string) func(*testing.T, *redis.Client, string, string, int64) {
	return func(t *testing.T, rdb *redis.Client, sale, user string, now int64) {
		rdb.HSet(context.Background(), contract.TokensKey(sale), user, value(now))
	}
}

func liveToken(now int64) string    { return "n1:" + strconv.FormatInt(now+60_000, 10) }
func expiredToken(now int64) string { return "n1:" + strconv.FormatInt(now-1, 10) }

// saleState is what a purchase may have written: the meta hash, buyers, tokens, the outbox's
// entries (their fields but t) and which keys expire.
func saleState(t *testing.T, rdb *redis.Client, sale string) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	out["meta"] = rdb.HGetAll(ctx, contract.MetaKey(sale)).Val()
	out["buyers"] = rdb.HGetAll(ctx, contract.BuyersKey(sale)).Val()
	out["tokens"] = rdb.HGetAll(ctx, contract.TokensKey(sale)).Val()
	var entries []map[string]any
	for _, e := range rdb.XRange(ctx, contract.OutboxKey(sale), "-", "+").Val() {
		delete(e.Values, "t")
		entries = append(entries, e.Values)
	}
	out["outbox"] = entries
	for _, k := range []string{contract.BuyersKey(sale), contract.OutboxKey(sale)} {
		out["expires:"+k[len(k)-7:]] = rdb.PTTL(ctx, k).Val() > 0
	}
	return out
}

// On a common sale gate_common.lua answers and writes what gate.lua does, case by case:
// accepted (with and without a token, traced, the last unit, the sale's first purchase, an
// outbox the relay gave an expiry), sold out, a duplicate and a retried call, a spent or
// expired token, before and after the window, paused, ended, unknown, sharded.
func TestTheCommonScriptAnswersAndWritesAsTheGeneralOne(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	cases := []commonCase{
		{name: "accepted", meta: openMeta(5)},
		{name: "accepted with a token", meta: openMeta(5), setup: issued(liveToken), token: liveToken},
		{name: "accepted, traced", meta: openMeta(5), tp: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		{name: "the last unit", meta: openMeta(1)},
		{name: "the sale's first purchase", meta: with(openMeta(5), "buyers_ttl", nil)},
		{name: "an outbox with an expiry", meta: with(openMeta(5), "outbox_ttl", 1),
			setup: func(t *testing.T, rdb *redis.Client, sale, _ string, _ int64) {
				rdb.XAdd(ctx, &redis.XAddArgs{Stream: contract.OutboxKey(sale), Values: []any{"o", "x", "u", "y", "t", 1}})
				rdb.XTrimMaxLen(ctx, contract.OutboxKey(sale), 0)
				rdb.PExpire(ctx, contract.OutboxKey(sale), time.Hour)
			}},
		{name: "sold out", meta: openMeta(0)},
		{name: "sold out, a buyer", meta: openMeta(0), setup: bought("o-old")},
		{name: "duplicate", meta: openMeta(5), setup: bought("o-old")},
		{name: "a retried call", meta: openMeta(5), setup: bought("o-new")},
		{name: "token used", meta: openMeta(5), token: liveToken},
		{name: "token used, a buyer", meta: openMeta(5), setup: bought("o-old"), token: liveToken},
		{name: "token expired", meta: openMeta(5), setup: issued(expiredToken), token: expiredToken},
		{name: "not started", meta: with(openMeta(5), "starts_ms", "NOW+60000")},
		{name: "ended", meta: with(openMeta(5), "ends_ms", "NOW-60000")},
		{name: "ended by state", meta: with(openMeta(5), "state", "ended")},
		{name: "paused", meta: with(openMeta(5), "state", "paused")},
		{name: "unknown sale"},
		{name: "sharded", meta: func(now int64) map[string]any {
			return map[string]any{"stock": 0, "starts_ms": now - 1000, "ends_ms": now + 3_600_000, "state": "open", "shards": 4}
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := time.Now().UnixMilli()
			user, order := "u"+strconv.Itoa(i), c.order
			if order == "" {
				order = "o-new"
			}
			token := ""
			if c.token != nil {
				token = c.token(now)
			}
			var replies [2]any
			var states [2]map[string]any
			for j := range 2 {
				sale := testenv.ID("cc")
				if c.meta != nil {
					m := c.meta(now)
					for k, v := range m {
						if s, ok := v.(string); ok && len(s) > 3 && s[:3] == "NOW" {
							d, _ := strconv.ParseInt(s[3:], 10, 64)
							m[k] = now + d
						}
					}
					rdb.HSet(ctx, contract.MetaKey(sale), m)
					rdb.PExpire(ctx, contract.MetaKey(sale), time.Hour)
				}
				if c.setup != nil {
					c.setup(t, rdb, sale, user, now)
				}
				call := GateCall{Sale: sale, User: user, OrderID: order, TokenValue: token, Group: "relay", TraceParent: c.tp}
				var res []any
				var err error
				if j == 0 {
					res, err = call.Run(ctx, rdb)
				} else {
					cc, ok := call.Common()
					if !ok {
						t.Fatal("a plain purchase is not common")
					}
					res, err = cc.Run(ctx, rdb)
				}
				if err != nil {
					t.Fatal(err)
				}
				replies[j] = res
				st := saleState(t, rdb, sale)
				st["outbox"] = fmt.Sprint(st["outbox"])
				states[j] = st
				for _, k := range []string{contract.MetaKey(sale), contract.BuyersKey(sale), contract.TokensKey(sale), contract.OutboxKey(sale)} {
					rdb.Del(ctx, k)
				}
			}
			if !reflect.DeepEqual(replies[0], replies[1]) {
				t.Fatalf("gate.lua answered %v, gate_common.lua %v", replies[0], replies[1])
			}
			if !reflect.DeepEqual(states[0], states[1]) {
				t.Fatalf("the writes differ:\ngate.lua        %v\ngate_common.lua %v", states[0], states[1])
			}
		})
	}
}

// gate_common.lua answers {19} and writes nothing on a sale that is not common: variants, a
// limit above 1, a room, a draw, a waitlist, units reserved for it.
func TestTheCommonScriptHandsEveryOtherSaleToTheGeneralOne(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		kv   []any
	}{
		{"variants", []any{"variants", 2, "v:red", 2, "v:blue", 3}},
		{"a limit above 1", []any{"limit", 3}},
		{"a room", []any{"room", 1}},
		{"a draw", []any{"draw", 1}},
		{"a waitlist", []any{"waitlist", 1}},
		{"reserved units", []any{"reserved", 1}},
	} {
		now := time.Now().UnixMilli()
		sale := testenv.ID("cg")
		m := map[string]any{"stock": 5, "starts_ms": now - 60_000, "ends_ms": now + 3_600_000, "state": "open", "buyers_ttl": 1}
		for i := 0; i < len(c.kv); i += 2 {
			m[c.kv[i].(string)] = c.kv[i+1]
		}
		rdb.HSet(ctx, contract.MetaKey(sale), m)
		rdb.PExpire(ctx, contract.MetaKey(sale), time.Hour)
		before := saleState(t, rdb, sale)
		res, err := GateCommonCall{Sale: sale, User: "u1", OrderID: "o1"}.Run(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0] != int64(19) {
			t.Errorf("%s: gate_common.lua answered %v, want [19]", c.name, res)
		}
		if after := saleState(t, rdb, sale); !reflect.DeepEqual(before, after) {
			t.Errorf("%s: gate_common.lua wrote on a sale it does not decide:\nbefore %v\nafter  %v", c.name, before, after)
		}
	}
}

// In one call with the throttle's zones the common script answers as the general one: a zone
// that refuses (throttled, then banned) stops both before the decision, an admitted request
// gets the same decision.
func TestTheCommonScriptWithTheZonesAnswersAsTheGeneralOne(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	now := time.Now().UnixMilli()
	run := func(common bool, sale, zone, user, order string) []any {
		t.Helper()
		call := GateCall{Sale: sale, User: user, OrderID: order, Group: "relay"}
		var keys []string
		var args []any
		script := GateThrottled
		if common {
			cc, _ := call.Common()
			keys, args, script = cc.Keys(), cc.Args(), GateCommonThrottled
		} else {
			keys, args = call.Keys(), call.Args()
		}
		// One zone: one admission a minute, a ban after the first over-limit episode.
		keys = append(keys, "seckill:rl:{"+zone+"}", "seckill:rl:{"+zone+"}:ban")
		args = append(args, 1, 60_000_000, 1, 600_000, 300_000_000, 1, "1")
		res, err := script.Run(ctx, rdb, keys, args...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var got [2][][]any
	for j, common := range []bool{false, true} {
		sale, zone := testenv.ID("cz"), testenv.ID("z")
		rdb.HSet(ctx, contract.MetaKey(sale), "stock", 5, "starts_ms", now-60_000, "ends_ms", now+3_600_000, "state", "open")
		rdb.PExpire(ctx, contract.MetaKey(sale), time.Hour)
		for _, order := range []string{"o1", "o2", "o3"} {
			res := run(common, sale, zone, "u1", order)
			zones := res[0].([]any)
			// The zone's retry times and members differ from call to call: keep the status.
			r := []any{zones[0]}
			if len(res) == 2 {
				r = append(r, res[1])
			}
			got[j] = append(got[j], r)
		}
	}
	if !reflect.DeepEqual(got[0], got[1]) {
		t.Fatalf("with the zones gate.lua answered %v, gate_common.lua %v", got[0], got[1])
	}
	want := fmt.Sprint([][]any{{int64(0), []any{int64(0), "o1", int64(4)}}, {int64(2)}, {int64(2)}})
	if fmt.Sprint(got[1]) != want {
		t.Fatalf("gate_common.lua with the zones answered %v, want %v (admitted and accepted, then banned twice)", got[1], want)
	}
}

// An outbox never expires while it holds an entry the relay has not handed on: preheat and the
// relay's drain (outbox_ack.lua) give an empty outbox the sale's expiry and mark it in the meta
// hash, and the next purchase, by either script, removes both.
func TestAnOutboxWithAnEntryHasNoExpiry(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	for _, common := range []bool{false, true} {
		sale := testenv.ID("ot")
		box, meta := contract.OutboxKey(sale), contract.MetaKey(sale)
		now := time.Now()
		if _, _, err := (PreheatCall{Sale: sale, Stock: 10, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour), Retention: time.Hour}).Run(ctx, rdb); err != nil {
			t.Fatal(err)
		}
		buy := func(user string) {
			t.Helper()
			call := GateCall{Sale: sale, User: user, OrderID: "o-" + user, Group: "relay"}
			var res []any
			var err error
			if common {
				cc, _ := call.Common()
				res, err = cc.Run(ctx, rdb)
			} else {
				res, err = call.Run(ctx, rdb)
			}
			if err != nil || res[0] != int64(0) {
				t.Fatalf("purchase of %s: %v %v", user, res, err)
			}
		}
		marked := func() bool { return rdb.HExists(ctx, meta, "outbox_ttl").Val() }
		if rdb.PTTL(ctx, box).Val() <= 0 || !marked() {
			t.Fatalf("a preheated empty outbox: PTTL %v, marked %v; want an expiry and the mark", rdb.PTTL(ctx, box).Val(), marked())
		}
		for round, users := range [][]string{{"a", "b"}, {"c"}} {
			for _, u := range users {
				buy(u)
				if ttl := rdb.PTTL(ctx, box).Val(); ttl != -1 || marked() {
					t.Fatalf("common=%v round %d: an outbox holding an entry has PTTL %v, marked %v; want no expiry", common, round, ttl, marked())
				}
			}
			// The relay hands the entries on and drains the outbox.
			var ids []any
			for _, e := range rdb.XRange(ctx, box, "-", "+").Val() {
				ids = append(ids, e.ID)
			}
			if _, err := (OutboxAckCall{Sale: sale, Group: "relay", Retention: time.Hour, IDs: idStrings(ids)}).Run(ctx, rdb); err != nil {
				t.Fatal(err)
			}
			if rdb.XLen(ctx, box).Val() != 0 || rdb.PTTL(ctx, box).Val() <= 0 || !marked() {
				t.Fatalf("a drained outbox: len %d, PTTL %v, marked %v; want empty, an expiry and the mark", rdb.XLen(ctx, box).Val(), rdb.PTTL(ctx, box).Val(), marked())
			}
		}
	}
}

func idStrings(ids []any) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.(string)
	}
	return out
}

// A preheat that moves the window of a sale already in Redis publishes "window:<sale>", so
// gateways forget the window they remember; one that leaves it as it is publishes nothing.
func TestAPreheatThatMovesTheWindowPublishesIt(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("pw")
	events := rdb.Subscribe(ctx, contract.EventsChannel)
	defer events.Close()
	if _, err := events.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	preheat := func(starts time.Time) {
		t.Helper()
		if _, _, err := (PreheatCall{Sale: sale, Stock: 0, Starts: starts, Ends: now.Add(time.Hour), Retention: time.Hour}).Run(ctx, rdb); err != nil {
			t.Fatal(err)
		}
	}
	preheat(now.Add(time.Minute))
	preheat(now.Add(time.Minute)) // the same window: no event
	preheat(now.Add(2 * time.Minute))
	// Every event of the three calls comes before a marker published after them.
	rdb.Publish(ctx, contract.EventsChannel, "marker:"+sale)
	deadline, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n := 0
	for {
		msg, err := events.ReceiveMessage(deadline)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Payload == "marker:"+sale {
			break
		}
		if msg.Payload == contract.EventWindow+":"+sale {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d window events for one preheat that moved the window and one that did not, want 1", n)
	}
}
