// Package invariants checks, after a flash sale has drained, the five invariants of DESIGN.md
// ("Invariants every test of the whole system checks") against Redis, RabbitMQ and Postgres.
//
// It reads; it never repairs. Each invariant yields a Check with PASS or FAIL and the numbers
// behind the verdict, so a failed run says what went wrong, not only that something did.
// The verifier is used by the seckill-bench command after every run, by the end-to-end test of
// `make test`, and can be used by any test that drives a whole sale.
package invariants

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
)

// Accepted is one 202 the client received: the order id and who was told it.
type Accepted struct {
	OrderID string    `json:"order_id"`
	UserID  string    `json:"user_id"`
	At      time.Time `json:"at"` // when the 202 arrived (for the drain time)
}

// OrderStatus is what `GET /orders/{id}` says about an order, as seen by its user.
type OrderStatus struct {
	Status string
	Reason string
}

// OrderLookup asks the order API about one order on behalf of its user. Invariant 3 uses it to
// show that a failed order's reason is visible to the buyer, not only in the database.
type OrderLookup func(ctx context.Context, orderID, userID string) (OrderStatus, error)

// DeadLetters lists the bodies of the messages in the dead-letter queue (without consuming
// them). RabbitMgmt implements it with the management API.
type DeadLetters interface {
	DeadLetters(ctx context.Context) (bodies [][]byte, err error)
}

// Sources are the systems the verifier reads. Redis and Postgres are required; Dead is required
// for invariant 5; Orders is optional (without it, a failed order's reason is checked in
// Postgres only and the check says so).
type Sources struct {
	Redis  redis.UniversalClient
	PG     *pgxpool.Pool
	Dead   DeadLetters
	Orders OrderLookup
}

// Run describes the sale that was driven.
type Run struct {
	Sale string
	// Accepted is every 202 of the run (one entry per response: a user told twice is listed
	// twice, which is how invariant 2 sees a double sale from the client side).
	Accepted []Accepted
	// Demand is the number of distinct users who asked to buy. When it exceeds the stock, the
	// sale must sell out (no undersell).
	Demand int
	// VariantDemand is, on a sale with variants and a limit of 1, the number of distinct users
	// who asked for each variant (nil: not known). A variant whose demand exceeds its stock must
	// sell out: a unit left behind on a shard, or forgotten by a repair, is an UNDERSELL.
	VariantDemand map[string]int
	// CheckRedis compares Redis with Postgres (invariant 4, second half). Off for the database
	// baselines, which never touch Redis.
	CheckRedis bool
	// Uncertain are the users who got an answer that does not say whether they bought: a 503
	// unavailable (the gate gave up waiting; its script may still have run) or a transport
	// error. An order in Postgres that no 202 announced is accounted for only when its user is
	// one of them (they learn of it at their next click: already_bought with the order id).
	Uncertain map[string]bool
}

// Verdict of one check.
type Verdict string

// Verdicts.
const (
	Pass Verdict = "PASS"
	Fail Verdict = "FAIL"
)

// Check is the outcome of one invariant.
type Check struct {
	N       int            `json:"n"`
	Name    string         `json:"name"`
	Verdict Verdict        `json:"verdict"`
	Detail  string         `json:"detail"`
	Numbers map[string]int `json:"numbers,omitempty"`
	// Problems lists the first offending ids (at most 10), for debugging a FAIL.
	Problems []string `json:"problems,omitempty"`
}

// Report is the verifier's whole answer.
type Report struct {
	Sale   string  `json:"sale"`
	Checks []Check `json:"checks"`
}

// OK reports whether every check passed.
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if c.Verdict != Pass {
			return false
		}
	}
	return len(r.Checks) > 0
}

// String renders the report as PASS/FAIL lines.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invariants of sale %s\n", r.Sale)
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "  %s  %d. %s: %s\n", c.Verdict, c.N, c.Name, c.Detail)
		for _, p := range c.Problems {
			fmt.Fprintf(&b, "          %s\n", p)
		}
	}
	return b.String()
}

// Holding statuses keep a unit of stock; cancelled and failed ones gave it back (or never had it).
func holding(status string) bool {
	return status == contract.StatusCreated || status == contract.StatusPaid
}

// holdingOrders counts the sale's orders that hold a unit of stock (created or paid).
func (st *state) holdingOrders() int {
	n := 0
	for _, o := range st.orders {
		if holding(o.status) {
			n++
		}
	}
	return n
}

type orderRow struct {
	id, user, status, reason string
}

// state is what the verifier read, in one place, so every check works on the same snapshot.
type state struct {
	found         bool // the sale exists in Postgres
	initial, pgSt int
	orders        map[string]orderRow // by order id, this sale only
	dupUsers      map[string]int      // user -> live orders, for users with more than one
	redisMeta     map[string]string
	buyers        map[string]string
	redisErr      error
	units         *units // limit, variants, quantities (units.go)
}

func load(ctx context.Context, src Sources, run Run) (*state, error) {
	st := &state{orders: map[string]orderRow{}, dupUsers: map[string]int{}}
	err := src.PG.QueryRow(ctx, `SELECT initial_stock, stock FROM sales WHERE id = $1`, run.Sale).Scan(&st.initial, &st.pgSt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("verify: read sale: %w", err)
	default:
		st.found = true
	}
	rows, err := src.PG.Query(ctx, `SELECT order_id, user_id, status, coalesce(reason, '') FROM orders WHERE sale_id = $1`, run.Sale)
	if err != nil {
		return nil, fmt.Errorf("verify: read orders: %w", err)
	}
	perUser := map[string]int{}
	for rows.Next() {
		var o orderRow
		if err := rows.Scan(&o.id, &o.user, &o.status, &o.reason); err != nil {
			rows.Close()
			return nil, err
		}
		st.orders[o.id] = o
		if holding(o.status) {
			perUser[o.user]++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("verify: read orders: %w", err)
	}
	for u, n := range perUser {
		if n > 1 {
			st.dupUsers[u] = n
		}
	}
	if run.CheckRedis {
		st.redisMeta, st.buyers, st.redisErr = RedisSale(ctx, src.Redis, run.Sale)
	}
	if err := loadUnits(ctx, src, run, st); err != nil {
		return nil, err
	}
	return st, nil
}

// Verify reads every source once and checks the five invariants, plus the room's (6-9) on a
// sale with a waiting room (with 16, the waitlist's, once it held a unit) and the draw's (10-15, draw.go) on a sale in draw mode. An error means a source could
// not be read at all; a broken invariant is a FAIL in the report, not an error.
func Verify(ctx context.Context, src Sources, run Run) (Report, error) {
	st, err := load(ctx, src, run)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Sale: run.Sale}
	if st.units.unitSale() {
		rep.Checks = append(rep.Checks,
			checkStockUnits(st, run),
			checkLimit(st),
			checkAccepted(ctx, st, run, src.Orders),
			checkConservationUnits(st, run),
			checkDeadLetters(ctx, st, run, src.Dead),
		)
		rep.Checks = append(rep.Checks, drawChecks(ctx, src, run)...)
		return rep, nil
	}
	rep.Checks = append(rep.Checks,
		checkStock(st, run),
		checkOnePerUser(st, run),
		checkAccepted(ctx, st, run, src.Orders),
		checkConservation(st, run),
		checkDeadLetters(ctx, st, run, src.Dead),
	)
	if run.CheckRedis {
		rep.Checks = append(rep.Checks, roomChecks(ctx, src, st, run)...)
	}
	rep.Checks = append(rep.Checks, drawChecks(ctx, src, run)...)
	return rep, nil
}

func fail(c *Check, format string, args ...any) {
	c.Verdict = Fail
	msg := fmt.Sprintf(format, args...)
	if c.Detail == "" {
		c.Detail = msg
	} else {
		c.Detail += "; " + msg
	}
}

func note(c *Check, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.Detail == "" {
		c.Detail = msg
	} else {
		c.Detail += "; " + msg
	}
}

func addProblem(c *Check, p string) {
	if len(c.Problems) < 10 {
		c.Problems = append(c.Problems, p)
	}
}

// 1. orders in Postgres <= stock; == stock when demand exceeded supply.
func checkStock(st *state, run Run) Check {
	c := Check{N: 1, Name: "no oversell, no undersell", Verdict: Pass}
	if !st.found {
		fail(&c, "sale %s is not in Postgres", run.Sale)
		return c
	}
	held := st.holdingOrders()
	c.Numbers = map[string]int{"orders_holding_stock": held, "initial_stock": st.initial, "demand": run.Demand}
	note(&c, "%d orders hold stock, initial stock %d, %d distinct buyers asked", held, st.initial, run.Demand)
	if held > st.initial {
		fail(&c, "OVERSELL by %d", held-st.initial)
	}
	if run.Demand > st.initial && held < st.initial {
		fail(&c, "UNDERSELL: demand exceeded supply but %d units are unsold", st.initial-held)
	}
	return c
}

// 2. no (sale, user) pair has two orders: no user holds two live orders in Postgres, and no
// user was told two order ids unless all but one of them ended (failed or cancelled: after
// compensation the gate may rightly accept the same user again).
func checkOnePerUser(st *state, run Run) Check {
	c := Check{N: 2, Name: "one order per user", Verdict: Pass}
	told := map[string]map[string]bool{}
	for _, a := range run.Accepted {
		if told[a.UserID] == nil {
			told[a.UserID] = map[string]bool{}
		}
		told[a.UserID][a.OrderID] = true
	}
	twice := 0
	for _, u := range sortedKeys(told) {
		if len(told[u]) < 2 {
			continue
		}
		open := 0
		for id := range told[u] {
			o, ok := st.orders[id]
			if !ok || (o.status != contract.StatusFailed && o.status != contract.StatusCancelled) {
				open++
			}
		}
		if open > 1 {
			twice++
			addProblem(&c, fmt.Sprintf("user %s was accepted with %d order ids, %d of them not ended", u, len(told[u]), open))
		}
	}
	for _, u := range sortedKeys(st.dupUsers) {
		addProblem(&c, fmt.Sprintf("user %s holds %d live orders in Postgres", u, st.dupUsers[u]))
	}
	c.Numbers = map[string]int{"users_with_two_orders": len(st.dupUsers), "users_accepted_twice": twice, "buyers": len(told)}
	note(&c, "%d users with two or more live orders in Postgres, %d users told two live order ids (of %d accepted users)", len(st.dupUsers), twice, len(told))
	if len(st.dupUsers) > 0 || twice > 0 {
		c.Verdict = Fail
	}
	return c
}

// 3. every 202 is exactly one row (created/paid/cancelled) or failed with a visible reason;
// none stays queued.
func checkAccepted(ctx context.Context, st *state, run Run, lookup OrderLookup) Check {
	c := Check{N: 3, Name: "every 202 became an order", Verdict: Pass}
	ids := map[string]Accepted{}
	for _, a := range run.Accepted {
		ids[a.OrderID] = a
	}
	var missing, failedOK, failedHidden, wrongOwner, orders int
	for _, id := range sortedKeys(ids) {
		a := ids[id]
		o, ok := st.orders[id]
		switch {
		case !ok:
			missing++
			addProblem(&c, "order "+id+" (user "+a.UserID+") was accepted but is not in Postgres (still queued, or lost)")
			continue
		case o.user != a.UserID:
			wrongOwner++
			addProblem(&c, fmt.Sprintf("order %s was accepted for user %s but belongs to %s", id, a.UserID, o.user))
			continue
		}
		if o.status != contract.StatusFailed {
			orders++
			continue
		}
		visible := o.reason
		if lookup != nil {
			s, err := lookup(ctx, id, a.UserID)
			if err != nil || s.Status != contract.StatusFailed {
				visible = ""
			} else {
				visible = s.Reason
			}
		}
		if visible == "" {
			failedHidden++
			addProblem(&c, "order "+id+" failed without a reason visible to its buyer")
		} else {
			failedOK++
		}
	}
	phantoms, explained := 0, 0
	for _, id := range sortedKeys(st.orders) {
		if _, ok := ids[id]; !ok {
			if run.Uncertain[st.orders[id].user] {
				explained++
				continue
			}
			phantoms++
			addProblem(&c, "order "+id+" of user "+st.orders[id].user+" is in Postgres but its user was never told (no 202, no 503)")
		}
	}
	c.Numbers = map[string]int{"accepted": len(ids), "orders": orders, "failed_with_reason": failedOK,
		"missing": missing, "failed_hidden": failedHidden, "wrong_owner": wrongOwner, "unannounced": phantoms,
		"after_uncertain_answer": explained}
	note(&c, "%d accepted: %d orders, %d failed with a visible reason, %d missing, %d failed without reason, %d with the wrong owner; %d rows nobody was told of",
		len(ids), orders, failedOK, missing, failedHidden, wrongOwner, phantoms)
	if explained > 0 {
		note(&c, "%d rows belong to users answered 503/error (the purchase went through; their next click says already_bought)", explained)
	}
	if lookup == nil && failedOK > 0 {
		note(&c, "reasons checked in Postgres only (no order API given)")
	}
	if missing+failedHidden+wrongOwner+phantoms > 0 {
		c.Verdict = Fail
	}
	return c
}

// 4. Postgres stock + orders holding stock == initial stock; Redis agrees with Postgres.
func checkConservation(st *state, run Run) Check {
	c := Check{N: 4, Name: "stock is conserved, Redis agrees with Postgres", Verdict: Pass}
	if !st.found {
		fail(&c, "sale %s is not in Postgres", run.Sale)
		return c
	}
	held := st.holdingOrders()
	c.Numbers = map[string]int{"pg_stock": st.pgSt, "orders_holding_stock": held, "initial_stock": st.initial}
	note(&c, "Postgres stock %d + %d holding orders = %d (initial %d)", st.pgSt, held, st.pgSt+held, st.initial)
	if st.pgSt+held != st.initial {
		fail(&c, "Postgres is off by %d", st.pgSt+held-st.initial)
	}
	if !run.CheckRedis {
		return c
	}
	if st.redisErr != nil {
		fail(&c, "Redis unreadable: %v", st.redisErr)
		return c
	}
	raw, ok := st.redisMeta[contract.FieldStock]
	redisStock, err := strconv.Atoi(raw)
	if !ok || err != nil {
		fail(&c, "Redis has no stock for the sale (meta %v)", st.redisMeta)
		return c
	}
	c.Numbers["redis_stock"] = redisStock
	c.Numbers["redis_buyers"] = len(st.buyers)
	note(&c, "Redis stock %d", redisStock)
	if redisStock != st.pgSt {
		fail(&c, "Redis stock %d != Postgres stock %d", redisStock, st.pgSt)
	}
	// Every unit held in Postgres is held by the same buyer and order in Redis: otherwise the
	// gate would let that user buy again, or refuse someone who holds nothing.
	disagree := 0
	for _, id := range sortedKeys(st.orders) {
		o := st.orders[id]
		if holding(o.status) && st.buyers[o.user] != o.id {
			disagree++
			addProblem(&c, fmt.Sprintf("order %s of user %s: Redis buyers says %q", o.id, o.user, st.buyers[o.user]))
		}
	}
	c.Numbers["buyers_disagreeing"] = disagree
	if disagree > 0 {
		fail(&c, "%d holding orders are not the user's order in Redis", disagree)
	}
	return c
}

// 5. the dead-letter queue is empty, or every message in it is accounted for: its order is in
// Postgres, failed with a reason (the consumer gave up on it visibly) or an order after all
// (a redelivery that finally succeeded).
func checkDeadLetters(ctx context.Context, st *state, run Run, dead DeadLetters) Check {
	c := Check{N: 5, Name: "dead letters accounted for", Verdict: Pass}
	if dead == nil {
		fail(&c, "no dead-letter source given")
		return c
	}
	bodies, err := dead.DeadLetters(ctx)
	if err != nil {
		fail(&c, "dead-letter queue unreadable: %v", err)
		return c
	}
	mine, other, unaccounted := 0, 0, 0
	for _, b := range bodies {
		var m contract.OrderMessage
		if json.Unmarshal(b, &m) != nil || m.SaleID == "" {
			// A body we cannot parse might be ours: it cannot be accounted for.
			unaccounted++
			addProblem(&c, fmt.Sprintf("unparseable dead letter: %.80q", b))
			continue
		}
		if m.SaleID != run.Sale {
			other++
			continue
		}
		mine++
		o, ok := st.orders[m.OrderID]
		if !ok || (o.status == contract.StatusFailed && o.reason == "") {
			unaccounted++
			addProblem(&c, "dead letter for order "+m.OrderID+" has no order or reason in Postgres")
		}
	}
	c.Numbers = map[string]int{"dead_letters": len(bodies), "this_sale": mine, "other_sales": other, "unaccounted": unaccounted}
	note(&c, "%d dead letters (%d of this sale, %d of other sales), %d unaccounted", len(bodies), mine, other, unaccounted)
	if unaccounted > 0 {
		c.Verdict = Fail
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
