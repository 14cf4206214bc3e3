// Package chaos runs a flash sale through two gateways and two consumers while a schedule
// kills and restarts every part of the deployment (a gateway, RabbitMQ, Postgres, a consumer,
// Redis), then drains and checks the five invariants of DESIGN.md (internal/invariants) and what
// buyers must see during each fault. `make chaos` runs it with the seckill-chaos command;
// `make test` runs a short form. See docs/chaos.md.
package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
)

// Options of a chaos run.
type Options struct {
	Cluster ClusterOptions
	// Buyers arrive at Rate per second; Stock is smaller than Buyers, so the sale sells out
	// partway and the last buyers are refused sold_out.
	Buyers int
	Rate   float64
	Stock  int
	// Variants, when not empty, makes the sale one with variants v0, v1, … of these stocks
	// (Stock is then their sum): buyer i asks for v(i mod len(Variants)).
	Variants []int
	// Limit is the per-user limit of a sale with variants (0: 1). Above 1, buyer i asks for
	// 1 + (i / len(Variants)) mod Limit units (still one purchase per buyer), so the held hash,
	// quantities and their compensation live through every fault; undersell is then not judged.
	Limit int
	// Schedule of faults (offsets from the first arrival).
	Schedule Schedule
	// CatchUp is how long after a part recovers every order accepted around its fault may
	// take to reach Postgres (default 60 s).
	CatchUp time.Duration
	// DrawEntrants, when above 0, adds the draw row (draw.go): that many entrants enter a draw
	// sale while a gateway is killed and Redis restarted, after the purchase sale has drained.
	DrawEntrants int
	// WaitlistWaiters, when above 0, adds the waitlist row (waitlist.go): that many waiters of a
	// room sale with the waitlist on (a third of them as many units), whose first buyers never
	// pay, while a gateway and a backend are killed and Redis restarted.
	WaitlistWaiters int
	// OnlyWaitlist runs the waitlist row alone: no purchase sale, no draw row.
	OnlyWaitlist bool
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Row is one line of the chaos table.
type Row struct {
	Fault    string             `json:"fault"`
	When     string             `json:"when"`
	Affected int                `json:"requests_affected"`
	Outcome  string             `json:"outcome"`
	Verdict  invariants.Verdict `json:"verdict"`
}

// Report is a run's answer.
type Report struct {
	Sale      string            `json:"sale"`
	Buyers    int               `json:"buyers"`
	Rate      float64           `json:"rate"`
	Stock     int               `json:"stock"`
	Accepted  int               `json:"accepted"`
	Requests  int               `json:"requests"`
	Outcomes  map[string]int    `json:"outcomes"`
	SoldOutAt float64           `json:"sold_out_at_s"` // first sold_out answer, seconds after the first arrival (0: never)
	Rows      []Row             `json:"rows"`
	Verify    invariants.Report `json:"verify"`
	LogDir    string            `json:"log_dir"`
	Elapsed   time.Duration     `json:"elapsed_ns"`
}

// OK reports whether every row passed.
func (r *Report) OK() bool {
	if len(r.Rows) == 0 {
		return false
	}
	for _, row := range r.Rows {
		if row.Verdict != invariants.Pass {
			return false
		}
	}
	return true
}

// Run starts a private cluster, runs the sale under the schedule, drains, verifies, and stops
// the cluster. An error means the run could not be carried out; a broken expectation is a
// FAIL row of the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	began := time.Now()
	ctx, cancel := context.WithCancel(ctx) // ends the run's watchers when it returns
	defer cancel()
	if o.CatchUp <= 0 {
		o.CatchUp = 60 * time.Second
	}
	var logMu sync.Mutex // faults log from their own goroutines
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		if o.Log != nil {
			fmt.Fprintf(o.Log, "chaos: "+format+"\n", args...)
		}
	}
	if o.Cluster.Dir == "" {
		d, err := os.MkdirTemp("", "seckill-chaos-")
		if err != nil {
			return nil, err
		}
		o.Cluster.Dir = d
	}
	var shopToken string
	if o.WaitlistWaiters > 0 {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		shopToken = hex.EncodeToString(b)
		o.Cluster.Env = append(o.Cluster.Env, WaitlistSettings(shopToken)...)
	}
	logf("starting Redis, RabbitMQ, Postgres, %d backends and %d gateways (logs in %s)", max(o.Cluster.Backends, 2), max(o.Cluster.Gateways, 2), o.Cluster.Dir)
	c, err := StartCluster(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	stack := &driver.Stack{Gateway: c.GatewayURLs[0], Backend: c.BackendURLs[0], AdminToken: c.AdminToken, RedisAddr: c.Redis.Addr, PGURL: c.PGURL}
	drv, err := driver.NewDriver(ctx, stack)
	if err != nil {
		return nil, err
	}
	defer drv.Close()
	pg := drv.PG
	rdb := redis.NewClient(&redis.Options{Addr: c.Redis.Addr})
	defer rdb.Close()
	if o.OnlyWaitlist && o.WaitlistWaiters > 0 {
		rows, err := c.waitlistScenario(ctx, drv, rdb, pg, o.WaitlistWaiters, shopToken, logf)
		if err != nil {
			return nil, fmt.Errorf("waitlist row: %w", err)
		}
		return &Report{Sale: "-", Outcomes: map[string]int{}, Rows: rows, LogDir: c.Dir, Elapsed: time.Since(began)}, nil
	}
	sale := fmt.Sprintf("chaos-%d", time.Now().UnixNano()%1e12)
	if len(o.Variants) > 0 {
		o.Stock = 0
		for _, n := range o.Variants {
			o.Stock += n
		}
		if err := crowd.CreateVariantSale(ctx, drv, sale, o.Variants, max(o.Limit, 1)); err != nil {
			return nil, err
		}
	} else if err := drv.CreateSale(ctx, sale, o.Stock, true); err != nil {
		return nil, err
	}

	watch := newOrderWatch(pg)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go watch.Run(wctx)
	buyers := &Buyers{Gateways: c.GatewayURLs, Sale: sale, Rate: o.Rate, Count: o.Buyers, GiveUp: 30 * time.Second,
		Prefix: sale + "-", Variants: len(o.Variants), Limit: o.Limit, watch: watch}
	logf("sale %s: %d units, %d buyers at %.0f/s through %d gateways", sale, o.Stock, o.Buyers, o.Rate, len(c.Gateways))
	start := time.Now()
	happenedC := make(chan []Happened, 1)
	go func() { happenedC <- c.runSchedule(ctx, rdb, sale, start, o.Schedule, logf) }()
	buyers.Run(ctx)
	logf("t=%5.1fs  the last buyer finished", time.Since(start).Seconds())
	happened := <-happenedC
	for _, h := range happened {
		for _, id := range h.Orphans {
			watch.Add(id)
		}
	}

	// Drain: every order id anyone was told, and every orphan, reaches Postgres; wait at most
	// CatchUp after the last recovery.
	last := time.Now()
	for _, h := range happened {
		if h.Recovered.After(last) {
			last = h.Recovered
		}
	}
	deadline := last.Add(o.CatchUp)
	claimsPending := func() bool {
		for _, h := range happened {
			if h.claimed != nil && h.claimed.When().IsZero() {
				return true
			}
		}
		return false
	}
	for (watch.Pending() > 0 || claimsPending()) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	logf("drained: %d orders not in Postgres", watch.Pending())
	if _, err := invariants.WaitSettled(ctx, pg, rdb, sale, 30*time.Second); err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	stopWatch()

	attempts := buyers.Attempts()
	rep := &Report{Sale: sale, Buyers: o.Buyers, Rate: o.Rate, Stock: o.Stock, Accepted: len(buyers.accepted),
		Requests: len(attempts), Outcomes: map[string]int{}, LogDir: c.Dir}
	soldOut := time.Time{}
	demandUsers := map[string]bool{}
	var variantDemand map[string]int
	if len(o.Variants) > 0 && o.Limit <= 1 {
		variantDemand = map[string]int{}
	}
	for _, a := range attempts {
		rep.Outcomes[a.Step+" "+a.Outcome]++
		// The first sold_out answer, to a token request or a purchase: buyers who arrive after
		// the last unit went are refused at the token, and then no purchase is answered sold_out.
		if a.Outcome == "sold_out" && (soldOut.IsZero() || a.Done.Before(soldOut)) {
			soldOut = a.Done
		}
		if a.Step == "buy" && (a.Outcome == "accepted" || a.Outcome == "sold_out" || a.Outcome == "already_bought") {
			if variantDemand != nil && !demandUsers[a.User] {
				variantDemand[buyers.VariantOf(a.User)]++
			}
			demandUsers[a.User] = true
		}
	}
	if !soldOut.IsZero() {
		rep.SoldOutAt = soldOut.Sub(start).Seconds()
	}
	ev := evaluator{start: start, attempts: attempts, accepted: buyers.accepted, watch: watch, catchUp: o.CatchUp, soldOut: soldOut}
	for _, h := range happened {
		rep.Rows = append(rep.Rows, ev.row(h))
	}

	vr, err := invariants.Verify(ctx, invariants.Sources{Redis: rdb, PG: pg, Dead: amqpDeadLetters{url: c.AMQPURL},
		Orders: invariants.HTTPOrders(c.GatewayURLs[len(c.GatewayURLs)-1], nil)},
		invariants.Run{Sale: sale, Accepted: buyers.accepted, Demand: len(demandUsers), VariantDemand: variantDemand, CheckRedis: true, Uncertain: buyers.uncertain})
	if err != nil {
		return nil, err
	}
	rep.Verify = vr
	for _, ch := range vr.Checks {
		rep.Rows = append(rep.Rows, Row{Fault: fmt.Sprintf("invariant %d: %s", ch.N, ch.Name), When: "after drain", Outcome: ch.Detail, Verdict: ch.Verdict})
	}
	if o.DrawEntrants > 0 {
		rows, err := c.drawScenario(ctx, drv, rdb, pg, o.DrawEntrants, logf)
		if err != nil {
			return nil, fmt.Errorf("draw row: %w", err)
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	if o.WaitlistWaiters > 0 {
		rows, err := c.waitlistScenario(ctx, drv, rdb, pg, o.WaitlistWaiters, shopToken, logf)
		if err != nil {
			return nil, fmt.Errorf("waitlist row: %w", err)
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	rep.Elapsed = time.Since(began)
	return rep, nil
}

// evaluator turns what happened during a fault into a row: the requests it affected and the
// expectation buyers rely on.
type evaluator struct {
	start    time.Time
	attempts []Attempt
	accepted []invariants.Accepted
	watch    *orderWatch
	catchUp  time.Duration
	soldOut  time.Time
}

func (e evaluator) secs(t time.Time) float64 { return t.Sub(e.start).Seconds() }

// affected counts the requests answered between the fault's start and 2 s after recovery
// that did not get a decision: transport errors, 503s and other 5xx.
func (e evaluator) affected(h Happened) (n int, byOutcome map[string]int) {
	byOutcome = map[string]int{}
	end := h.Recovered.Add(2 * time.Second)
	for _, a := range e.attempts {
		if a.Done.Before(h.Start) || a.Done.After(end) {
			continue
		}
		if a.Outcome == "error" || a.Status >= 500 {
			n++
			byOutcome[a.Outcome]++
		}
	}
	return n, byOutcome
}

// catchUpOf checks that every order in ids reached Postgres no later than CatchUp after the
// fault's recovery; it returns the latest arrival relative to the recovery, the missing and
// late ones, and the ones that ended failed.
func (e evaluator) catchUpOf(h Happened, ids []string) (latest time.Duration, missing, late, failed int) {
	for _, id := range ids {
		t, status, ok := e.watch.Seen(id)
		switch {
		case !ok:
			missing++
			continue
		case t.Sub(h.Recovered) > e.catchUp:
			late++
		}
		if status == contract.StatusFailed {
			failed++
		}
		latest = max(latest, t.Sub(h.Recovered))
	}
	return latest, missing, late, failed
}

// acceptedBetween lists the order ids answered 202 in [from, to].
func (e evaluator) acceptedBetween(from, to time.Time) []string {
	var ids []string
	for _, a := range e.accepted {
		if !a.At.Before(from) && !a.At.After(to) {
			ids = append(ids, a.OrderID)
		}
	}
	return ids
}

func (e evaluator) row(h Happened) Row {
	r := Row{Fault: h.Fault.String(), Verdict: invariants.Pass}
	if h.Start.IsZero() {
		r.When, r.Outcome, r.Verdict = "-", fmt.Sprintf("not run: %v", h.Err), invariants.Fail
		return r
	}
	r.When = fmt.Sprintf("t=%.1fs, back at t=%.1fs", e.secs(h.Start), e.secs(h.Recovered))
	var by map[string]int
	r.Affected, by = e.affected(h)
	var notes []string
	failf := func(format string, args ...any) {
		r.Verdict = invariants.Fail
		notes = append(notes, "FAIL: "+fmt.Sprintf(format, args...))
	}
	if h.Err != nil {
		failf("the schedule could not carry it out: %v", h.Err)
	}
	// Every order accepted from 1 s before the fault until its recovery reaches Postgres within
	// the catch-up budget.
	window := e.acceptedBetween(h.Start.Add(-time.Second), h.Recovered)
	catch := func(what string, ids []string) {
		latest, missing, late, failed := e.catchUpOf(h, ids)
		if len(ids) == 0 {
			notes = append(notes, fmt.Sprintf("no %s", what))
			return
		}
		notes = append(notes, fmt.Sprintf("%d %s, all in Postgres %.1fs after recovery", len(ids), what, max(latest, 0).Seconds()))
		if missing+late > 0 {
			failf("%d of them not in Postgres within %s of recovery (%d never)", missing+late, e.catchUp, missing)
		}
		if failed > 0 {
			failf("%d of them ended failed", failed)
		}
	}
	switch h.Kind {
	case GatewayKill:
		notes = append(notes, fmt.Sprintf("%d outbox entries pending on the dead relay", len(h.Orphans)))
		if len(h.Orphans) > 0 {
			var claimed time.Time
			if h.claimed != nil {
				claimed = h.claimed.When()
			}
			switch {
			case claimed.IsZero():
				failf("no live relay claimed the dead relay's entries")
			case claimed.Sub(h.Recovered) > e.catchUp:
				failf("a live relay claimed the dead relay's entries only %.1fs after recovery", claimed.Sub(h.Recovered).Seconds())
			default:
				notes = append(notes, fmt.Sprintf("claimed by a live relay %.1fs after the kill", claimed.Sub(h.Down).Seconds()))
			}
			catch("orphaned orders", h.Orphans)
		}
		catch("orders accepted around the kill", window)
	case RabbitRestart, RabbitBlock:
		during := e.acceptedBetween(h.Down, h.Recovered)
		notes = append(notes, fmt.Sprintf("the gate accepted %d purchases into the outbox while the broker was down", len(during)))
		if len(during) == 0 && (e.soldOut.IsZero() || e.soldOut.After(h.Recovered)) {
			failf("the gate stopped accepting while RabbitMQ was down")
		}
		catch("orders accepted around the outage", window)
	case PostgresRestart:
		during := e.acceptedBetween(h.Down, h.Recovered)
		notes = append(notes, fmt.Sprintf("%d accepted while Postgres was down (held in the queue)", len(during)))
		catch("orders accepted around the outage", window)
	case ConsumerKill:
		if h.HeldBatch {
			notes = append(notes, "it died holding a batch it could not write (its log: batch write failed; retrying)")
		}
		catch("orders accepted around the kill", window)
	case RedisStop, RedisKill:
		var accepted, unavailable, noRetryAfter, other5xx int
		for _, a := range e.attempts {
			// Requests sent after Redis was gone and answered before it was started again.
			if a.Sent.Before(h.Down) || a.Done.After(h.Up) {
				continue
			}
			switch {
			case a.Outcome == "accepted":
				accepted++
			case a.Status == http.StatusServiceUnavailable && a.Outcome == contract.CodeUnavailable:
				unavailable++
				if !a.RetryAfter {
					noRetryAfter++
				}
			case a.Status >= 500:
				other5xx++
			}
		}
		notes = append(notes, fmt.Sprintf("while down: %d answered 503 unavailable (with Retry-After), %d accepted", unavailable, accepted))
		if accepted > 0 {
			failf("%d purchases accepted without Redis", accepted)
		}
		if noRetryAfter > 0 {
			failf("%d 503s without Retry-After", noRetryAfter)
		}
		if other5xx > 0 {
			failf("%d other 5xx answers", other5xx)
		}
		if unavailable == 0 {
			failf("no request was answered 503 unavailable while Redis was down")
		}
		// What the restarted Redis remembers of the decisions it acknowledged before it went.
		before, forgotten := 0, 0
		for _, a := range e.accepted {
			if a.At.Before(h.Down) {
				before++
				if h.BuyersAfter[a.UserID] != a.OrderID {
					forgotten++
				}
			}
		}
		if h.BuyersAfter != nil {
			notes = append(notes, fmt.Sprintf("after the restart Redis remembered %d of the %d decisions acknowledged before", before-forgotten, before))
			if forgotten > 0 {
				failf("%d acknowledged decisions lost with Redis", forgotten)
			}
		}
		catch("orders accepted around the outage", window)
	}
	if len(by) > 0 {
		var parts []string
		for _, k := range sortedKeys(by) {
			parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
		}
		notes = append(notes, "affected: "+strings.Join(parts, ", "))
	}
	r.Outcome = strings.Join(notes, "; ")
	return r
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Table renders the report as a Markdown table (what BENCHMARKS.md records).
func (r *Report) Table(w io.Writer) {
	fmt.Fprintf(w, "sale %s: %d units, %d buyers at %.0f/s, %d requests, %d accepted, sold out at t=%.1fs\n\n",
		r.Sale, r.Stock, r.Buyers, r.Rate, r.Requests, r.Accepted, r.SoldOutAt)
	fmt.Fprintln(w, "| fault | when | requests affected | outcome | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, row := range r.Rows {
		aff := fmt.Sprint(row.Affected)
		if strings.HasPrefix(row.Fault, "invariant") {
			aff = "-"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", row.Fault, row.When, aff, strings.ReplaceAll(row.Outcome, "|", "/"), row.Verdict)
	}
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\nchaos: %s (%d rows, %.0fs; logs in %s)\n", verdict, len(r.Rows), r.Elapsed.Seconds(), filepath.Clean(r.LogDir))
}
