package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
)

// The waitlist row of the chaos table: a room sale with the waitlist on (docs/room.md, "The
// waitlist"). Its waiters enter through both gateways in turn and poll as the waiting page
// does; the first Units admitted buy and never pay, so the sweeper releases their units after
// pay_within and the backend offers each to the room's next present waiter, who buys it and
// pays. Meanwhile a gateway is killed (-9), a backend is killed (-9) and Redis is stopped and
// started again. The rows: no waiter is offered a unit twice, none of the rush is offered one,
// every released unit ends bought by a waiter and paid (none lost), and the room sale's
// invariants pass (1-9 and the waitlist's, 16: none offered twice, none oversold).

// WaitlistSettings is the backend environment the waitlist row needs (the offer window, and a
// shop token for the waiters' payments); Run adds it to the cluster when the row is on.
func WaitlistSettings(shopToken string) []string {
	return []string{"SECKILL_WAITLIST_WINDOW=10s", "SECKILL_ADMIN_TOKENS=chaos-shop:" + shopToken + ":shop"}
}

// waitlistRun is what the waiters did.
type waitlistRun struct {
	c      *Cluster
	sale   string
	client *http.Client
	units  int

	bought atomic.Int64 // 202s (and already_bought) so far
	mu     sync.Mutex
	// accepted: every order a waiter was told of; payers: the waiters offered a released unit
	// (admitted once the rush had bought every unit) and their orders; failures: requests
	// answered 5xx or not at all.
	accepted []invariants.Accepted
	payers   map[string]string
	paid     map[string]bool
	failures []time.Time
	unsure   []string // answers a waiter could not act on, for the row
}

type roomAnswer struct {
	status                     int
	State, Code, Ticket, Token string
	OrderID                    string `json:"order_id"`
}

func (r *waitlistRun) call(ctx context.Context, gw int, method, path, user, ip string, h map[string]string) roomAnswer {
	req, _ := http.NewRequestWithContext(ctx, method, r.c.GatewayURLs[gw%len(r.c.GatewayURLs)]+"/seckill/"+r.sale+path, nil)
	req.Header.Set("X-User-ID", user)
	req.Header.Set("X-Forwarded-For", ip)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	var a roomAnswer
	resp, err := r.client.Do(req)
	if err == nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		_ = json.Unmarshal(b, &a)
		a.status = resp.StatusCode
	}
	if a.status == 0 || a.status >= 500 {
		r.mu.Lock()
		r.failures = append(r.failures, time.Now())
		r.mu.Unlock()
	}
	return a
}

// waiter enters, polls every 300 ms (on its gateway, the other one when that fails), buys when
// admitted, and pays when its admission came after the rush had bought every unit (an offer).
// It stops once it bought, or when its context ends.
func (r *waitlistRun) waiter(ctx context.Context, i int, user string) {
	ip := fmt.Sprintf("10.77.%d.%d", i/256, i%256)
	gw := i % 2
	var ticket string
	for try := 0; ticket == "" && ctx.Err() == nil; try++ {
		a := r.call(ctx, gw+try, http.MethodPost, "/queue", user, ip, nil)
		ticket = a.Ticket
		if ticket == "" {
			time.Sleep(300 * time.Millisecond)
		}
	}
	for try := 0; ctx.Err() == nil; {
		a := r.call(ctx, gw+try, http.MethodGet, "/queue", user, ip, map[string]string{"X-Seckill-Ticket": ticket})
		switch {
		case a.status == 0 || a.status >= 500:
			try++
		case a.State == "admitted":
			offered := r.bought.Load() >= int64(r.units)
			if id := r.buy(ctx, gw, user, ip); id != "" {
				if offered {
					r.mu.Lock()
					r.payers[user] = id
					r.mu.Unlock()
				}
				return
			}
		case a.State == "sold_out" || a.State == "ended" || a.State == "lapsed" || a.State == "used":
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// buy takes a token and buys with it, trying the other gateway on a 5xx or no answer, for up
// to 20 s; it answers the order id (a 202, or already_bought after an answer that was lost),
// or "" when the purchase was refused (the waiter goes back to polling).
func (r *waitlistRun) buy(ctx context.Context, gw int, user, ip string) string {
	end := time.Now().Add(20 * time.Second)
	token := ""
	for try := 0; ctx.Err() == nil && time.Now().Before(end); try++ {
		if token == "" {
			t := r.call(ctx, gw+try, http.MethodPost, "/token", user, ip, nil)
			switch {
			case t.status == http.StatusOK && t.Token != "":
				token = t.Token
			case t.status == 0 || t.status >= 500:
				time.Sleep(300 * time.Millisecond)
				continue
			case t.Code == contract.CodeAlreadyBought && t.OrderID != "":
				return r.accept(user, t.OrderID)
			default:
				return ""
			}
		}
		a := r.call(ctx, gw+try+1, http.MethodPost, "/buy", user, ip, map[string]string{"X-Seckill-Token": token})
		switch {
		case a.status == http.StatusAccepted && a.OrderID != "":
			return r.accept(user, a.OrderID)
		case a.Code == contract.CodeAlreadyBought && a.OrderID != "":
			return r.accept(user, a.OrderID)
		case a.status == 0 || a.status >= 500 || a.status == http.StatusTooManyRequests:
			time.Sleep(300 * time.Millisecond)
		case a.Code == "sold_out" || a.Code == "not_admitted" || a.Code == "ended" || a.Code == "paused":
			r.mu.Lock()
			r.unsure = append(r.unsure, fmt.Sprintf("%s buy %d %s", user, a.status, a.Code))
			r.mu.Unlock()
			return ""
		default:
			// The token was spent by a purchase whose answer was lost, or refused: a new one
			// (whose issue says already_bought, with the order, when the purchase went through).
			token = ""
			time.Sleep(100 * time.Millisecond)
		}
	}
	return ""
}

func (r *waitlistRun) accept(user, order string) string {
	r.mu.Lock()
	r.accepted = append(r.accepted, invariants.Accepted{OrderID: order, UserID: user, At: time.Now()})
	r.mu.Unlock()
	r.bought.Add(1)
	return order
}

// pay confirms the payers' orders to the backends (the shop's word) once each is written,
// until each is paid or ctx ends.
func (r *waitlistRun) pay(ctx context.Context, pg *pgxpool.Pool, shopToken string) {
	for ctx.Err() == nil {
		r.mu.Lock()
		var due []string
		for _, id := range r.payers {
			if !r.paid[id] {
				due = append(due, id)
			}
		}
		r.mu.Unlock()
		for i, id := range due {
			var status string
			if err := pg.QueryRow(ctx, `SELECT status FROM orders WHERE order_id = $1`, id).Scan(&status); err != nil || status != contract.StatusCreated {
				if status == contract.StatusPaid {
					r.mu.Lock()
					r.paid[id] = true
					r.mu.Unlock()
				}
				continue
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.c.BackendURLs[i%len(r.c.BackendURLs)]+"/shop/orders/"+id+"/paid", nil)
			req.Header.Set("Authorization", "Bearer "+shopToken)
			if resp, err := r.client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					r.mu.Lock()
					r.paid[id] = true
					r.mu.Unlock()
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitlistScenario runs the waitlist row on the cluster and returns its rows.
func (c *Cluster) waitlistScenario(ctx context.Context, drv *driver.Driver, rdb *redis.Client, pg *pgxpool.Pool, waiters int, shopToken string, logf func(string, ...any)) ([]Row, error) {
	units := max(waiters/3, 1)
	sale := fmt.Sprintf("chaos-wl-%d", time.Now().UnixNano()%1e12)
	starts := time.Now().Add(2 * time.Second).Truncate(time.Second)
	if err := drv.Admin(ctx, http.MethodPost, "/admin/sales", map[string]any{"id": sale, "stock": units,
		"starts_at": starts.UTC().Format(time.RFC3339), "ends_at": starts.Add(time.Hour).UTC().Format(time.RFC3339), "pay_within": "6s",
		"room": map[string]any{"rate": 100, "oversubscribe": 1, "session": "5m", "difficulty": [2]int{0, 0}, "waitlist": true}}); err != nil {
		return nil, fmt.Errorf("create the waitlist sale: %w", err)
	}
	if err := drv.Admin(ctx, http.MethodPost, "/admin/sales/"+sale+"/preheat", nil); err != nil {
		return nil, fmt.Errorf("preheat the waitlist sale: %w", err)
	}
	time.Sleep(time.Until(starts) + 200*time.Millisecond)
	logf("waitlist sale %s: %d units, %d waiters through %d gateways, the first %d buy and never pay; kill -9 gateway-1 and backend-1, stop Redis",
		sale, units, waiters, len(c.GatewayURLs), units)
	r := &waitlistRun{c: c, sale: sale, units: units, client: &http.Client{Timeout: 5 * time.Second},
		payers: map[string]string{}, paid: map[string]bool{}}
	rctx, stop := context.WithTimeout(ctx, 150*time.Second)
	defer stop()
	start := time.Now()
	// The faults: the gateway during the rush, the backend when the sweeper releases the
	// rush's units (pay_within 6 s, swept every second), Redis while the offered waiters buy
	// and pay.
	// They overlap: Redis goes while backend-1 is down.
	faults := []Fault{{Kind: GatewayKill, Target: 0, At: 1500 * time.Millisecond, Down: 2 * time.Second},
		{Kind: ConsumerKill, Target: 0, At: 7 * time.Second, Down: 3 * time.Second},
		{Kind: RedisStop, At: 8 * time.Second, Down: 2 * time.Second}}
	faultsDone := make(chan []Happened, 1)
	go func() {
		hs := make([]Happened, len(faults))
		var fw sync.WaitGroup
		for i, f := range faults {
			fw.Add(1)
			go func() {
				defer fw.Done()
				select {
				case <-rctx.Done():
				case <-time.After(time.Until(start.Add(f.At))):
				}
				hs[i] = c.execute(rctx, rdb, sale, f, func() {})
			}()
		}
		fw.Wait()
		faultsDone <- hs
	}()
	go r.pay(rctx, pg, shopToken)
	var wg sync.WaitGroup
	// They enter one after the other (arrivals after the start keep their arrival order).
	for i := range waiters {
		wg.Add(1)
		go func() { defer wg.Done(); r.waiter(rctx, i, fmt.Sprintf("%s-w%03d", sale, i)) }()
		time.Sleep(20 * time.Millisecond)
	}
	// Done when every released unit is paid for by a waiter it was offered to.
	for rctx.Err() == nil {
		r.mu.Lock()
		n := len(r.paid)
		r.mu.Unlock()
		if n >= units {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(start)
	happened := <-faultsDone
	stop()
	wg.Wait()
	logf("waitlist: %d of %d released units paid for by waiters after %.1fs", len(r.paid), units, took.Seconds())

	var rows []Row
	for _, h := range happened {
		affected := 0
		for _, at := range r.failures {
			if !at.Before(h.Start) && at.Before(h.Recovered.Add(2*time.Second)) {
				affected++
			}
		}
		row := Row{Fault: h.Fault.String() + " (waitlist sale)", When: fmt.Sprintf("t=%.1fs, back at t=%.1fs", h.Start.Sub(start).Seconds(), h.Recovered.Sub(start).Seconds()),
			Affected: affected, Verdict: invariants.Pass, Outcome: fmt.Sprintf("%d requests refused or unanswered, each tried again", affected)}
		if h.Err != nil {
			row.Verdict, row.Outcome = invariants.Fail, h.Err.Error()
		}
		rows = append(rows, row)
	}
	if _, err := invariants.WaitSettled(ctx, pg, rdb, sale, 30*time.Second); err != nil {
		return nil, fmt.Errorf("settle the waitlist sale: %w", err)
	}
	// A bought offer is logged by the waitlist's next step (the backend's sweep, every second):
	// wait for the open offers to close before reading the log.
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if n, err := rdb.ZCard(ctx, contract.RoomOffersKey(sale)).Result(); err == nil && n == 0 {
			break
		}
	}

	// The waitlist's log: who was offered what, and how each offer ended.
	olog, err := rdb.LRange(ctx, contract.RoomOfferLogKey(sale), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("read the waitlist's log: %w", err)
	}
	steps := map[string]int{}
	offered := map[string]int{}
	for _, e := range olog {
		p := strings.SplitN(e, ":", 4)
		if len(p) != 4 {
			continue
		}
		steps[p[0]]++
		if p[0] == "o" {
			offered[p[3]]++
		}
	}
	var twice, rushOffered []string
	r.mu.Lock()
	rush := map[string]bool{}
	for _, a := range r.accepted {
		if _, payer := r.payers[a.UserID]; !payer {
			rush[a.UserID] = true
		}
	}
	for u, n := range offered {
		if n > 1 {
			twice = append(twice, u)
		}
		if rush[u] {
			rushOffered = append(rushOffered, u)
		}
	}
	sort.Strings(twice)
	sort.Strings(rushOffered)
	paid, payers, accepted, unsure := len(r.paid), len(r.payers), r.accepted, r.unsure
	r.mu.Unlock()
	var dbPaid, dbCancelled int
	if err := pg.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'paid'), count(*) FILTER (WHERE status = 'cancelled') FROM orders WHERE sale_id = $1`, sale).
		Scan(&dbPaid, &dbCancelled); err != nil {
		return nil, err
	}
	row := Row{Fault: "waitlist: every released unit offered once to one waiter, bought and paid", When: fmt.Sprintf("after %.1fs", took.Seconds()), Verdict: invariants.Pass,
		Outcome: fmt.Sprintf("%d units: %d held, %d offers (%d waiters), %d bought, %d passed, %d returned to the pool; %d cancelled unpaid, %d paid by waiters offered a unit",
			units, steps["v"], steps["o"], len(offered), steps["b"], steps["x"], steps["g"], dbCancelled, dbPaid)}
	fail := func(format string, args ...any) {
		row.Verdict = invariants.Fail
		row.Outcome += "; FAIL: " + fmt.Sprintf(format, args...)
	}
	if len(twice) > 0 {
		fail("offered twice: %v", first(twice))
	}
	if len(rushOffered) > 0 {
		fail("offered to a buyer of the rush: %v", first(rushOffered))
	}
	// Every unit ends paid by a waiter it was offered to (a waiter who could not pay in time
	// releases it again, to the next one); every cancelled order's unit was held for the
	// waitlist (the pool was empty all along), every purchase after an offer is a bought offer,
	// and nothing went back to the pool (waiters were left).
	if paid < units || dbPaid != units {
		fail("%d of %d units paid for by waiters offered one", dbPaid, units)
	}
	if steps["v"] != dbCancelled || steps["b"] != payers || steps["g"] != 0 {
		fail("the log holds %d units held for %d cancelled orders, %d offers bought for %d purchases after an offer, %d returned", steps["v"], dbCancelled, steps["b"], payers, steps["g"])
	}
	if len(unsure) > 0 {
		row.Outcome += fmt.Sprintf("; refusals a waiter could not act on: %v", first(unsure))
	}
	rows = append(rows, row)

	vr, err := invariants.Verify(ctx, invariants.Sources{Redis: rdb, PG: pg, Dead: amqpDeadLetters{url: c.AMQPURL}},
		invariants.Run{Sale: sale, Accepted: accepted, Demand: waiters, CheckRedis: true})
	if err != nil {
		return nil, fmt.Errorf("verify the waitlist sale: %w", err)
	}
	for _, ch := range vr.Checks {
		rows = append(rows, Row{Fault: fmt.Sprintf("waitlist sale: invariant %d: %s", ch.N, ch.Name), When: "after the drain", Outcome: ch.Detail, Verdict: ch.Verdict})
	}
	return rows, nil
}
