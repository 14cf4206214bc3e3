//go:build integration

package gate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// twinGatewaysConfig is one Caddy of two servers on rdb's Redis, each with the throttle of
// zone prefix right before the gate in the purchase's route: two gateways that share the
// zones' counters in Redis and keep their own local tiers (blocklist, shield).
func twinGatewaysConfig(t *testing.T, redisAddr, prefix string, ports [2]int, limit, bans int) []byte {
	t.Helper()
	gate := map[string]any{"handler": "seckill_gate", "user": "{http.request.header.X-User-ID}", "timeout": "10s"}
	buy := map[string]any{"path": []string{"/seckill/*/buy"}}
	servers := map[string]any{}
	for i, port := range ports {
		servers["gw"+strconv.Itoa(i)] = map[string]any{"listen": []string{fmt.Sprintf("127.0.0.1:%d", port)}, "routes": []any{
			map[string]any{"match": []any{buy}, "handle": []any{json.RawMessage(throttleZones(prefix, limit, bans)), gate}},
		}}
	}
	c := map[string]any{
		"admin":   map[string]any{"disabled": true},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": handlertest.LogLevel()}}},
		"apps": map[string]any{
			"seckill": map[string]any{
				"redis":     map[string]any{"addrs": []string{redisAddr}, "read_timeout": "5s"},
				"relay":     map[string]any{"disabled": true},
				"namespace": testNamespace,
			},
			"http": map[string]any{"servers": servers},
		},
	}
	b, _ := json.Marshal(c)
	return b
}

// commands is how many commands the Redis at rdb has run, INFO and PING (the test's own
// reads, the event subscription's health checks) apart.
func commands(t *testing.T, rdb *redis.Client) (all int, byName map[string]int) {
	t.Helper()
	byName = testenv.RedisCommands(t, rdb, "ping")
	for _, n := range byName {
		all += n
	}
	return all, byName
}

func delta(before, after map[string]int) map[string]int {
	d := map[string]int{}
	for k, v := range after {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// Once a gateway knows a sale is sold out, a click on it is answered from memory before the
// throttle's zones reach Redis: a user's first late click costs one plain read of the buyers
// hash (he may be a buyer, told his order), no script; his later clicks cost Redis nothing.
// The zones still hold: a key this gateway has blocked (a ban it learnt from Redis) is refused
// 429, and a user past the zone's local limit is refused by the shield, neither asking Redis.
func TestAClickOnASoldOutSaleReachesNoScriptAndABannedUserStaysRefused(t *testing.T) {
	rs := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	ports := [2]int{testenv.FreePort(t), testenv.FreePort(t)}
	// Four admissions a minute per user; the first over-limit episode is a ban.
	prefix := testenv.ID("f")
	cfg := twinGatewaysConfig(t, rs.Addr(), prefix, ports, 4, 1)
	gw := [2]string{fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])}
	handlertest.StartCaddy(t, cfg, gw[0])
	handlertest.WaitListening(t, gw[1])

	// A user banned on gateway 0: accepted, already_bought three times, then the ban.
	open := newSale(t, rdb, 100, -time.Minute, time.Hour)
	banned := testenv.ID("ban")
	for i, want := range []int{202, 409, 409, 409, 429} {
		if r := purchase(t, gw[0], open, banned); r.Status != want {
			t.Fatalf("purchase %d of the user to ban: %+v, want %d", i, r, want)
		}
	}
	// The ban is in Redis: on the other gateway too he buys nothing on a sale that sells.
	other := newSale(t, rdb, 100, -time.Minute, time.Hour)
	if r := purchase(t, gw[1], other, banned); r.Status != 429 || r.Message != "too many requests: temporarily blocked" {
		t.Fatalf("the banned user on the other gateway: %+v, want 429 temporarily blocked", r)
	}

	// A sale of one unit: the first buyer wins, the second is told sold_out by the script;
	// gateway 0, which heard it, now knows the sale is sold out.
	gone := newSale(t, rdb, 1, -time.Minute, time.Hour)
	winner := testenv.ID("w")
	if r := purchase(t, gw[0], gone, winner); r.Status != 202 {
		t.Fatalf("the last unit: %+v", r)
	}
	if r := purchase(t, gw[0], gone, testenv.ID("l")); r.Status != 409 || r.Code != "sold_out" {
		t.Fatalf("after the last unit: %+v, want 409 sold_out", r)
	}

	late := make([]string, 10)
	for i := range late {
		late[i] = testenv.ID("late")
	}
	all0, by0 := commands(t, rdb)
	for _, u := range late {
		if r := purchase(t, gw[0], gone, u); r.Status != 409 || r.Code != "sold_out" {
			t.Fatalf("a first late click: %+v, want 409 sold_out", r)
		}
	}
	all1, by1 := commands(t, rdb)
	if d := delta(by0, by1); all1-all0 != len(late) || d["hget"] != len(late) {
		t.Fatalf("%d first late clicks ran %v in Redis, want one hget each and nothing else", len(late), d)
	}
	// The winner clicking again is told his order, from the same read.
	if r := purchase(t, gw[0], gone, winner); r.Status != 409 || r.Code != "already_bought" || !r.hasOrder {
		t.Fatalf("the winner's late click: %+v, want 409 already_bought with his order", r)
	}
	all1, by1 = commands(t, rdb)
	for round := range 2 {
		for _, u := range append(late, winner) {
			if r := purchase(t, gw[0], gone, u); r.Status != 409 {
				t.Fatalf("late click %d: %+v, want 409", round, r)
			}
		}
	}
	// The banned user: refused by gateway 0's blocklist, on the sold-out sale too.
	if r := purchase(t, gw[0], gone, banned); r.Status != 429 || r.Message != "too many requests: temporarily blocked" {
		t.Fatalf("the banned user's late click: %+v, want 429 temporarily blocked", r)
	}
	// A user past the zone's limit of 4 a minute: the shield refuses his 5th late click here.
	flood := late[0] // three clicks so far
	if r := purchase(t, gw[0], gone, flood); r.Status != 409 {
		t.Fatalf("a 4th late click within the minute: %+v, want 409", r)
	}
	if r := purchase(t, gw[0], gone, flood); r.Status != 429 || r.Code != "rate_limited" || r.RetryAfter == "" {
		t.Fatalf("a 5th late click within the minute: %+v, want 429 rate_limited with Retry-After", r)
	}
	if r := purchase(t, gw[0], gone, flood); r.Status != 429 {
		t.Fatalf("a 6th late click within the minute: %+v, want 429", r)
	}
	if all2, by2 := commands(t, rdb); all2 != all1 {
		t.Fatalf("repeated late clicks, a banned user's and a flooding user's ran %v in Redis, want nothing", delta(by1, by2))
	}
	if n := stockOf(t, rdb, gone); n != 0 {
		t.Fatalf("stock of the sold-out sale %d, want 0", n)
	}
}
