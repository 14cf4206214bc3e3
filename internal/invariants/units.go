package invariants

import (
	"context"
	"fmt"
	"strconv"

	"github.com/seckilledge/seckill/contract"
)

// A sale with variants or a per-user limit above 1 (a "unit sale") counts units, not orders
// (DESIGN.md, "Variants and quantities"): invariants 1, 2 and 4 are checked per variant and in
// units. Invariants 3 and 5 are about messages and orders and read the same. A sale without
// variants and with a limit of 1 is checked exactly as before.

type variantRow struct {
	initial, stock int
}

// units is what load reads in addition for a unit sale.
type units struct {
	limit    int
	variants map[string]variantRow    // by variant id; empty for a limit-only sale
	orderQty map[string]unitOrderInfo // by order id
	held     map[string]int           // Redis: user -> units held (nil when not read)
}

type unitOrderInfo struct {
	variant  string
	quantity int
}

func (u *units) unitSale() bool { return u != nil && (u.limit > 1 || len(u.variants) > 0) }

// loadUnits reads the limit, the variants and each order's variant and quantity, and the
// held hash when Redis is checked.
func loadUnits(ctx context.Context, src Sources, run Run, st *state) error {
	u := &units{limit: 1, variants: map[string]variantRow{}, orderQty: map[string]unitOrderInfo{}}
	st.units = u
	if !st.found {
		return nil
	}
	if err := src.PG.QueryRow(ctx, `SELECT per_user_limit FROM sales WHERE id = $1`, run.Sale).Scan(&u.limit); err != nil {
		return fmt.Errorf("verify: read limit: %w", err)
	}
	rows, err := src.PG.Query(ctx, `SELECT variant_id, initial_stock, stock FROM sale_variants WHERE sale_id = $1`, run.Sale)
	if err != nil {
		return fmt.Errorf("verify: read variants: %w", err)
	}
	for rows.Next() {
		var id string
		var v variantRow
		if err := rows.Scan(&id, &v.initial, &v.stock); err != nil {
			rows.Close()
			return err
		}
		u.variants[id] = v
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if !u.unitSale() {
		return nil
	}
	rows, err = src.PG.Query(ctx, `SELECT order_id, variant_id, quantity FROM orders WHERE sale_id = $1`, run.Sale)
	if err != nil {
		return fmt.Errorf("verify: read quantities: %w", err)
	}
	for rows.Next() {
		var id string
		var o unitOrderInfo
		if err := rows.Scan(&id, &o.variant, &o.quantity); err != nil {
			rows.Close()
			return err
		}
		u.orderQty[id] = o
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if run.CheckRedis && st.redisErr == nil {
		k, _ := strconv.Atoi(st.redisMeta[contract.FieldShards])
		if u.held, err = heldOf(ctx, src.Redis, contract.ShardIDs(run.Sale, k), u.limit); err != nil {
			st.redisErr = err
		}
	}
	return nil
}

// heldUnits sums the units of holding orders: in total, per variant and per user.
func (st *state) heldUnits() (total int, perVariant, perUser map[string]int) {
	perVariant, perUser = map[string]int{}, map[string]int{}
	for id, o := range st.orders {
		if !holding(o.status) {
			continue
		}
		q := st.units.orderQty[id]
		n := max(q.quantity, 1)
		total += n
		perVariant[q.variant] += n
		perUser[o.user] += n
	}
	return total, perVariant, perUser
}

// 1, in units: no variant (and not the sale) gives more units than it had.
func checkStockUnits(st *state, run Run) Check {
	c := Check{N: 1, Name: "no oversell, per variant, in units", Verdict: Pass}
	if !st.found {
		fail(&c, "sale %s is not in Postgres", run.Sale)
		return c
	}
	total, perVariant, _ := st.heldUnits()
	c.Numbers = map[string]int{"units_held": total, "initial_stock": st.initial, "variants": len(st.units.variants)}
	note(&c, "%d units held of %d over %d variants", total, st.initial, len(st.units.variants))
	if total > st.initial {
		fail(&c, "OVERSELL by %d units", total-st.initial)
	}
	for _, v := range sortedKeys(st.units.variants) {
		if n := perVariant[v]; n > st.units.variants[v].initial {
			fail(&c, "variant %s OVERSOLD: %d units held of %d", v, n, st.units.variants[v].initial)
		}
	}
	for _, v := range sortedKeys(perVariant) {
		if _, ok := st.units.variants[v]; !ok && (len(st.units.variants) > 0 || v != "") {
			fail(&c, "%d units held of variant %q, which the sale does not have", perVariant[v], v)
		}
	}
	if run.VariantDemand == nil || st.units.limit != 1 {
		note(&c, "undersell is not judged for this unit sale (buyers choose variants and quantities)")
		return c
	}
	// With a limit of 1 every buyer takes one unit of the variant he asked for: a variant asked
	// for by more users than it had units must have sold every unit.
	for _, v := range sortedKeys(st.units.variants) {
		if d, n, in := run.VariantDemand[v], perVariant[v], st.units.variants[v].initial; d > in && n < in {
			fail(&c, "variant %s UNDERSOLD: %d users asked for it, %d of its %d units sold", v, d, n, in)
		}
	}
	return c
}

// 2, in units: no user holds more units than the limit.
func checkLimit(st *state) Check {
	c := Check{N: 2, Name: "no user above the per-user limit", Verdict: Pass}
	_, _, perUser := st.heldUnits()
	over := 0
	for _, u := range sortedKeys(perUser) {
		if perUser[u] > st.units.limit {
			over++
			addProblem(&c, fmt.Sprintf("user %s holds %d units, limit %d", u, perUser[u], st.units.limit))
		}
	}
	c.Numbers = map[string]int{"limit": st.units.limit, "users_above_limit": over, "holders": len(perUser)}
	note(&c, "%d of %d holders above the limit of %d units", over, len(perUser), st.units.limit)
	if over > 0 {
		c.Verdict = Fail
	}
	return c
}

// 4, per variant and in units: Postgres stock + units held == initial stock, the sale's total
// is the sum of its variants, and Redis agrees (stock, each variant, each user's held units).
func checkConservationUnits(st *state, run Run) Check {
	c := Check{N: 4, Name: "stock is conserved per variant, Redis agrees with Postgres", Verdict: Pass}
	if !st.found {
		fail(&c, "sale %s is not in Postgres", run.Sale)
		return c
	}
	total, perVariant, perUser := st.heldUnits()
	c.Numbers = map[string]int{"pg_stock": st.pgSt, "units_held": total, "initial_stock": st.initial}
	note(&c, "Postgres stock %d + %d units held = %d (initial %d)", st.pgSt, total, st.pgSt+total, st.initial)
	if st.pgSt+total != st.initial {
		fail(&c, "Postgres is off by %d units", st.pgSt+total-st.initial)
	}
	sumStock, sumInitial := 0, 0
	for _, v := range sortedKeys(st.units.variants) {
		row := st.units.variants[v]
		sumStock += row.stock
		sumInitial += row.initial
		if row.stock+perVariant[v] != row.initial {
			fail(&c, "variant %s: Postgres stock %d + %d units held != initial %d", v, row.stock, perVariant[v], row.initial)
		}
	}
	if len(st.units.variants) > 0 && (sumStock != st.pgSt || sumInitial != st.initial) {
		fail(&c, "the sale's stock %d (initial %d) is not the sum of its variants' %d (%d)", st.pgSt, st.initial, sumStock, sumInitial)
	}
	if !run.CheckRedis {
		return c
	}
	if st.redisErr != nil {
		fail(&c, "Redis unreadable: %v", st.redisErr)
		return c
	}
	redisStock, err := strconv.Atoi(st.redisMeta[contract.FieldStock])
	if err != nil {
		fail(&c, "Redis has no stock for the sale (meta %v)", st.redisMeta)
		return c
	}
	c.Numbers["redis_stock"] = redisStock
	note(&c, "Redis stock %d", redisStock)
	if redisStock != st.pgSt {
		fail(&c, "Redis stock %d != Postgres stock %d", redisStock, st.pgSt)
	}
	for _, v := range sortedKeys(st.units.variants) {
		raw, ok := st.redisMeta[contract.VariantField(v)]
		n, err := strconv.Atoi(raw)
		if !ok || err != nil || n != st.units.variants[v].stock {
			fail(&c, "variant %s: Redis has %q, Postgres %d", v, raw, st.units.variants[v].stock)
		}
	}
	// Every user's units in Redis are the units of their holding orders: otherwise the gate
	// would let them go above the limit, or refuse units they are owed.
	disagree := 0
	users := map[string]bool{}
	for u := range perUser {
		users[u] = true
	}
	for u, n := range st.units.held {
		if n != 0 {
			users[u] = true
		}
	}
	for _, u := range sortedKeys(users) {
		if st.units.held[u] != perUser[u] {
			disagree++
			addProblem(&c, fmt.Sprintf("user %s: Redis holds %d units, Postgres %d", u, st.units.held[u], perUser[u]))
		}
	}
	c.Numbers["users_disagreeing"] = disagree
	if disagree > 0 {
		fail(&c, "%d users' held units differ between Redis and Postgres", disagree)
	}
	return c
}
