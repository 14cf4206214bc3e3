//go:build integration

package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// roomGatewayJSON is a gateway of the system with the room, the token and the gate, each
// checking admissions, as the shipped Caddyfiles pair them.
func (s *system) roomGatewayJSON(port int) []byte {
	user := "{http.request.header.X-User-ID}"
	route := func(paths []string, h map[string]any) map[string]any {
		return map[string]any{"match": []any{map[string]any{"path": paths}}, "handle": []any{h}}
	}
	cfg := map[string]any{
		"admin":   map[string]any{"disabled": true},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": handlertest.LogLevel()}}},
		"apps": map[string]any{
			"seckill": map[string]any{
				"redis":      map[string]any{"addrs": []string{testenv.RedisAddr()}, "read_timeout": "5s", "dial_timeout": "500ms"},
				"amqp":       map[string]any{"url": s.amqp, "reconnect_interval": "200ms"},
				"token_keys": []map[string]any{{"id": "k1", "secret": "waitlist-test-token-key-0123456789abcdef"}},
				"relay":      map[string]any{"poll_interval": "20ms", "discover_interval": "300ms"},
				"namespace":  s.ns,
			},
			"http": map[string]any{"servers": map[string]any{"gw": map[string]any{
				"listen":          []string{fmt.Sprintf("127.0.0.1:%d", port)},
				"automatic_https": map[string]any{"disable": true},
				"routes": []any{
					route([]string{"/seckill/*/room", "/seckill/*/queue"}, map[string]any{"handler": "seckill_room", "user": user, "timeout": "10s"}),
					route([]string{"/seckill/*/token"}, map[string]any{"handler": "seckill_token", "user": user, "require_admission": true}),
					route([]string{"/seckill/*/buy"}, map[string]any{"handler": "seckill_gate", "user": user,
						"require_token": true, "require_admission": true, "timeout": "10s"}),
					map[string]any{"handle": []any{map[string]any{"handler": "static_response", "body": "ok"}}},
				},
			}}},
		},
	}
	b, _ := json.Marshal(cfg)
	return b
}

// roomCall is one request of a buyer to a gateway, decoded.
type roomCall struct {
	Status                   int
	State, Code, Ticket      string
	Token, OrderID           string
	Position                 int
	AdmittedUntil, ExpiresAt string
	raw                      string
}

func roomDo(t *testing.T, method, url, user string, headers map[string]string) roomCall {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("X-User-ID", user)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := checked(t).Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return roomCall{}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var b struct {
		State, Code, Ticket, Token string
		OrderID                    string `json:"order_id"`
		Position                   int
		AdmittedUntil              string `json:"admitted_until"`
	}
	_ = json.Unmarshal(raw, &b)
	return roomCall{Status: resp.StatusCode, State: b.State, Code: b.Code, Ticket: b.Ticket, Token: b.Token,
		OrderID: b.OrderID, Position: b.Position, AdmittedUntil: b.AdmittedUntil, raw: string(raw)}
}

// purchase takes a token on one gateway and buys with it on the other.
func purchase(t *testing.T, tokenAt, buyAt, sale, user string) roomCall {
	t.Helper()
	tk := roomDo(t, http.MethodPost, tokenAt+"/seckill/"+sale+"/token", user, nil)
	if tk.Status != http.StatusOK {
		return tk
	}
	return roomDo(t, http.MethodPost, buyAt+"/seckill/"+sale+"/buy", user, map[string]string{"X-Seckill-Token": tk.Token})
}

// A room sale with unpaid winners, through two gateway processes: every unit the sweeper
// releases goes to the next present waiter in queue order, as an admission of its own that
// the waiter sees on his next poll, whatever gateway he polls; a waiter who lets his offer's
// window pass hands it on to the next; an absent waiter's place is passed. Admitted users who
// missed the sell-out keep clicking all along on both gateways and never get a unit. No unit is
// offered twice, none is lost (invariants 1-9 and the waitlist's, 16), and the shop is told of
// each offer and each pass. The log has the time from each release to the next waiter's
// admission; SECKILL_WAITLIST_UNITS sets the units (and as many waiters plus six; the late
// clickers stay six: the measured run of BENCHMARKS.md).
func TestReleasedUnitsGoToTheNextPresentWaitersAcrossGateways(t *testing.T) {
	units, late, waiters := 6, 6, 12
	if v, err := strconv.Atoi(os.Getenv("SECKILL_WAITLIST_UNITS")); err == nil && v > units {
		units, waiters = v, v+6
	}
	s := newSystem(t)
	ctx := context.Background()
	hooks := &webhook.Worker{Pool: s.pool, DefaultURL: "http://127.0.0.1:9/unused", Log: quietLog()}
	s.svc.Compensator.Waitlist = &orders.Waitlist{Pool: s.pool, Redis: s.rdb, Log: quietLog(), Webhooks: hooks, Window: 3 * time.Second}
	s.consume(nil)
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); s.svc.Sweeper.Run(sweepCtx, 50*time.Millisecond) }()
	t.Cleanup(func() { stopSweep(); <-swept })

	id := testenv.ID("wl")
	// stock x oversubscribe = the rush: those who buy and those admitted too late.
	rate, over := 1000.0, float64(units+late)/float64(units)
	now := time.Now()
	if _, err := s.svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: id, Stock: units, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PayWithin: "1h", Room: &admin.RoomSpec{Rate: &rate, Oversubscribe: &over,
			Session: "10m", Difficulty: &admin.Difficulty{0, 0}, Waitlist: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Sales.Preheat(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		keys, _ := s.rdb.Keys(context.Background(), "seckill:"+contract.SaleTag(id)+":*").Result()
		if len(keys) > 0 {
			s.rdb.Del(context.Background(), keys...)
		}
		s.rdb.SRem(context.Background(), contract.SalesIndexKey, id)
	})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		c := context.Background()
		meta, _ := s.rdb.HGetAll(c, contract.MetaKey(id)).Result()
		room, _ := s.rdb.HGetAll(c, contract.RoomKey(id)).Result()
		delete(room, "seed")
		delete(room, "ekey")
		lg, _ := s.rdb.LRange(c, contract.RoomOfferLogKey(id), 0, -1).Result()
		var st []string
		rows, _ := s.pool.Query(c, `SELECT user_id || ':' || status FROM orders WHERE sale_id = $1 ORDER BY user_id`, id)
		for rows != nil && rows.Next() {
			var x string
			_ = rows.Scan(&x)
			st = append(st, x)
		}
		t.Logf("meta %v\nroom %v\nwaitlist log %v\norders %v", meta, room, lg, st)
	})
	gw := [2]string{}
	for i := range gw {
		port := testenv.FreePort(t)
		gw[i] = handlertest.StartGateway(t, s.roomGatewayJSON(port), fmt.Sprintf("http://127.0.0.1:%d", port)).Base
	}

	// The rush: stock x oversubscribe admitted at their entry; the first `units` of them buy.
	type person struct {
		user, ticket string
		gw           int
	}
	var rush, queue []person
	for i := range units + late + waiters {
		p := person{user: fmt.Sprintf("u%02d", i), gw: i % 2}
		a := roomDo(t, http.MethodPost, gw[p.gw]+"/seckill/"+id+"/queue", p.user, nil)
		p.ticket = a.Ticket
		if a.State != "admitted" && a.State != "waiting" {
			t.Fatalf("%s entering: %s", p.user, a.raw)
		}
		if i < units+late {
			rush = append(rush, p)
		} else {
			queue = append(queue, p)
		}
	}
	// The admission steps admit the first stock x oversubscribe places, nobody behind them.
	for _, p := range rush {
		testenv.WaitFor(t, 30*time.Second, p.user+" admitted", func() bool {
			return roomDo(t, http.MethodGet, gw[p.gw]+"/seckill/"+id+"/queue", p.user, map[string]string{"X-Seckill-Ticket": p.ticket}).State == "admitted"
		})
	}
	for i, p := range queue {
		if i == 2 {
			continue // he closes his tab after entering (below): not polled
		}
		if a := roomDo(t, http.MethodGet, gw[p.gw]+"/seckill/"+id+"/queue", p.user, map[string]string{"X-Seckill-Ticket": p.ticket}); a.State != "waiting" {
			t.Fatalf("%s: %s, want waiting behind the rush", p.user, a.raw)
		}
	}
	var accepted []invariants.Accepted
	var mu sync.Mutex
	accept := func(user string, a roomCall) {
		mu.Lock()
		defer mu.Unlock()
		accepted = append(accepted, invariants.Accepted{OrderID: a.OrderID, UserID: user, At: time.Now()})
	}
	for _, p := range rush[:units] {
		a := purchase(t, gw[p.gw], gw[1-p.gw], id, p.user)
		if a.Status != http.StatusAccepted {
			t.Fatalf("%s buys: %s", p.user, a.raw)
		}
		accept(p.user, a)
	}
	testenv.WaitFor(t, 30*time.Second, "the rush's orders written", func() bool {
		var n int
		_ = s.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'created'`, id).Scan(&n)
		return n == units
	})

	// The waiters poll, each on his gateway, as the page does; one of them (the third) closed
	// his tab: he is not there. Who is offered a unit buys it through the other gateway and
	// pays, but for one (the second), who lets his window pass.
	absent, idle := queue[2].user, queue[1].user
	s.rdb.ZAdd(ctx, contract.RoomSeenKey(id), redis.Z{Score: 1, Member: absent})
	pollCtx, stopPolls := context.WithCancel(ctx)
	var wg sync.WaitGroup
	admittedAt := sync.Map{} // user -> time.Time his poll first said admitted
	last := sync.Map{}       // user -> his last answer, for a failure's log
	t.Cleanup(func() {
		if t.Failed() {
			last.Range(func(u, a any) bool { t.Logf("%s's last answer: %s", u, a); return true })
		}
	})
	var bought []string
	var lateWins atomic.Int64
	for _, p := range queue {
		if p.user == absent {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pollCtx.Err() == nil {
				a := roomDo(t, http.MethodGet, gw[p.gw]+"/seckill/"+id+"/queue", p.user, map[string]string{"X-Seckill-Ticket": p.ticket})
				last.Store(p.user, a.raw)
				switch {
				case a.State == "admitted":
					if p.user == idle {
						admittedAt.LoadOrStore(p.user, time.Now())
						return // he lets the window pass
					}
					if _, seen := admittedAt.LoadOrStore(p.user, time.Now()); !seen {
						b := purchase(t, gw[p.gw], gw[1-p.gw], id, p.user)
						if b.Status != http.StatusAccepted {
							t.Errorf("%s offered, buys: %s", p.user, b.raw)
							return
						}
						accept(p.user, b)
						// The shop's payment, once the order is written.
						for end := time.Now().Add(30 * time.Second); s.orderStatus(b.OrderID) != contract.StatusCreated && time.Now().Before(end); {
							time.Sleep(20 * time.Millisecond)
						}
						if _, err := s.svc.Shop.MarkPaid(ctx, b.OrderID); err != nil {
							t.Errorf("%s pays: %v", p.user, err)
						}
						mu.Lock()
						bought = append(bought, p.user)
						mu.Unlock()
						return
					}
				case a.State == "sold_out":
					return // every unit bought and paid: the waitlist is over
				case a.State != "waiting":
					t.Errorf("%s polls: %s, want waiting until his offer", p.user, a.raw)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	// Those admitted too late for the rush click on, on both gateways, the whole time.
	for _, p := range rush[units:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; pollCtx.Err() == nil; i++ {
				a := purchase(t, gw[i%2], gw[(i+1)%2], id, p.user)
				if a.Status == http.StatusAccepted {
					lateWins.Add(1)
					accept(p.user, a)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}

	// The rush's buyers do not pay: their time runs out (moved back by the test, one order
	// every 100 ms, so each release is a sweep of its own and the log times each unit; the
	// sweeper releases them on its own), and the waitlist has their units.
	var rushOrders []string
	rows, err := s.pool.Query(ctx, `SELECT order_id FROM orders WHERE sale_id = $1 ORDER BY accepted_at, order_id`, id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var o string
		_ = rows.Scan(&o)
		rushOrders = append(rushOrders, o)
	}
	rows.Close()
	for _, o := range rushOrders {
		if _, err := s.pool.Exec(ctx, `UPDATE orders SET created_at = created_at - interval '2 hours' WHERE order_id = $1`, o); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	testenv.WaitFor(t, 60*time.Second, "every released unit bought by a waiter", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bought) == units || t.Failed()
	})
	stopPolls()
	wg.Wait()
	if t.Failed() {
		return
	}
	if n := lateWins.Load(); n != 0 {
		t.Fatalf("%d of those admitted before the sell-out bought a released unit", n)
	}

	// In queue order, the absent one passed, the idle one's offer passed on to the next.
	var want []string
	for _, p := range queue {
		if p.user != absent {
			want = append(want, p.user)
		}
	}
	want = want[:units+1]
	lg, _ := s.rdb.LRange(ctx, contract.RoomOfferLogKey(id), 0, -1).Result()
	var offered []string
	var offerMS []int64
	for _, e := range lg {
		if p := strings.SplitN(e, ":", 4); p[0] == "o" {
			offered = append(offered, p[3])
			ms, _ := strconv.ParseInt(p[1], 10, 64)
			offerMS = append(offerMS, ms)
		}
	}
	if !slices.Equal(offered, want) {
		t.Fatalf("offers went to %v, want %v (queue order, %s absent)", offered, want, absent)
	}
	sort.Strings(bought)
	wantBought := slices.DeleteFunc(slices.Clone(want), func(u string) bool { return u == idle })
	sort.Strings(wantBought)
	if !slices.Equal(bought, wantBought) {
		t.Fatalf("bought by %v, want %v", bought, wantBought)
	}

	// The shop heard of every offer and of the one that passed, once each.
	var events []string
	rows, err = s.pool.Query(ctx, `SELECT type || ':' || user_id FROM webhook_deliveries WHERE sale_id = $1 AND type LIKE 'unit.%' ORDER BY seq`, id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e string
		_ = rows.Scan(&e)
		events = append(events, e)
	}
	rows.Close()
	if n := len(events); n != units+2 || !slices.Contains(events, contract.EventUnitPassed+":"+idle) {
		t.Fatalf("unit events %v, want %d offers and %s's pass", events, units+1, idle)
	}

	// Every unit sold once, nothing lost: the invariants, the waitlist's among them.
	vhost := s.amqp[strings.LastIndex(s.amqp, "/")+1:]
	rep, err := invariants.Verify(ctx, invariants.Sources{Redis: s.rdb, PG: s.pool,
		Dead: invariants.RabbitMgmt{URL: testenv.AMQPMgmtURL(), Vhost: vhost}},
		invariants.Run{Sale: id, Accepted: accepted, Demand: len(rush) + len(queue), CheckRedis: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || !strings.Contains(rep.String(), "waitlist") {
		t.Fatalf("verifier:\n%s", rep)
	}

	// From each release (the cancellation's commit, the database's clock) to the next waiter's
	// admission (the offer, Redis's clock: one host), and to his poll answering admitted.
	var cancelled []time.Time
	rows, err = s.pool.Query(ctx, `SELECT updated_at FROM orders WHERE sale_id = $1 AND status = 'cancelled' ORDER BY updated_at`, id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var at time.Time
		_ = rows.Scan(&at)
		cancelled = append(cancelled, at)
	}
	rows.Close()
	// The waitlist's log pairs them: each unit held (v, one per release, in the releases'
	// order) goes to the next offer (o); a unit whose offer passed (x) is held again and goes
	// to a later offer, which is no release's.
	var toOffer, toPoll []time.Duration
	var held []int // pending units: the release's index, or -1 for a passed offer's unit
	releases := 0
	for _, e := range lg {
		p := strings.SplitN(e, ":", 4)
		switch p[0] {
		case "v":
			held = append(held, releases)
			releases++
		case "x":
			held = append(held, -1)
		case "o":
			if len(held) == 0 {
				t.Fatalf("the waitlist's log offers a unit nobody held: %v", lg)
			}
			i := held[0]
			held = held[1:]
			if i < 0 || i >= len(cancelled) {
				continue
			}
			ms, _ := strconv.ParseInt(p[1], 10, 64)
			toOffer = append(toOffer, time.UnixMilli(ms).Sub(cancelled[i]))
			if at, ok := admittedAt.Load(p[3]); ok {
				toPoll = append(toPoll, at.(time.Time).Sub(cancelled[i]))
			}
		}
	}
	slices.Sort(toOffer)
	slices.Sort(toPoll)
	pct := func(d []time.Duration, q float64) time.Duration {
		return d[min(len(d)-1, int(q*float64(len(d))))].Round(time.Millisecond)
	}
	t.Logf("release to the next waiter's admission, %d units: median %v, p99 %v; to his poll answering admitted (every 50 ms): median %v, p99 %v",
		len(toOffer), pct(toOffer, 0.5), pct(toOffer, 0.99), pct(toPoll, 0.5), pct(toPoll, 0.99))
	t.Logf("verifier:\n%s", rep)
}
