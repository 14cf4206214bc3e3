package reconcile

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// The arithmetic of reconciling a unit sale (a sale with variants or a per-user limit above
// 1), apart from any I/O so that it can be read, and tested, on its own. units.go takes the
// snapshots and applies the plan.

type Order struct {
	User, Status, Variant string
	Quantity, Seq         int
}

// Postgres is the Postgres snapshot (repeatable read, taken first).
type Postgres struct {
	Limit    int
	Stock    int
	Variants map[string]int // variant -> stock; empty for a sale without variants
	Orders   map[string]Order
}

// Shard is the atomic Redis snapshot of one shard (the sale itself when unsharded).
type Shard struct {
	ID          string
	Stock       int64
	Meta        map[string]string
	Held        map[string]string // raw, "#<user>" counters included
	Buyers      map[string]string
	Compensated map[string]bool
}

// variant reads the shard's units left of v (0 when the field is missing or unreadable).
func (sh *Shard) variant(v string) int64 {
	n, _ := strconv.ParseInt(sh.Meta[contract.VariantField(v)], 10, 64)
	return n
}

// Lost is the latest order of a user Redis counts and Postgres never received, past the
// grace period: it is recorded failed with the user's units in flight.
type Lost struct {
	User, Order string
	Units, Seq  int
}

// Raise is what a user's held hash lacks: units to add, and the purchase counter's floor.
type Raise struct {
	Units, Seq int
}

// Plan is the repair of a unit sale.
type Plan struct {
	PGStock    int64 // Postgres stock as of the Redis snapshot (see adjust in PlanUnits)
	RedisStock int64
	InFlight   int64
	Unreturned int64
	StockDelta int64
	// VariantDelta is each variant's repair, summed over the shards.
	VariantDelta map[string]int64
	// VariantsHeld is true when positive variant repairs were held back (units in flight).
	VariantsHeld bool
	// RaisedShort counts the units Redis lacked for users' holdings.
	RaisedShort int64
	Lost        []Lost
	Restore     map[string]string // user -> latest live order
	Raise       map[string]Raise
	// Exact: the shards' stocks are set to the sum of their variants (nothing in flight,
	// nothing owed to an unknown variant); otherwise the total is spread as ShardDeltas does.
	Exact bool
}

// PlanUnits computes the repair from the two snapshots. k is the shard count (len(shards));
// cutoff is the acceptance time before which an order missing from Postgres is lost.
//
// Per user u (on their shard): Redis units R(u) (the held hash when the limit is above 1, else
// 1 when the buyers hash has u), live units L(u) (created/paid orders), unreturned units U(u)
// (failed/cancelled not compensated yet). d(u) = R(u) - L(u) - U(u):
//   - d > 0: units in flight; when u's latest order (buyers) is not in Postgres and older than
//     the grace period, it is lost (recorded failed with d units by the caller);
//   - d < 0: Redis lost units of u's: raised (limit above 1) or the buyer restored (limit 1).
//
// An order Postgres had live whose compensation Redis already recorded was cancelled between
// the two snapshots: its units are back in both stores, so it counts as returned, and the
// Postgres stock of the snapshot is short of them (adjusted).
func PlanUnits(pg Postgres, shards []Shard, cutoff time.Time) Plan {
	k := len(shards)
	p := Plan{VariantDelta: map[string]int64{}, Restore: map[string]string{}, Raise: map[string]Raise{}}
	usesHeld := contract.UsesHeld(pg.Limit)
	compensated := map[string]bool{}
	for _, sh := range shards {
		p.RedisStock += sh.Stock
		for id := range sh.Compensated {
			compensated[id] = true
		}
	}
	pgStock := int64(pg.Stock)
	pgVar := map[string]int64{}
	for v, n := range pg.Variants {
		pgVar[v] = int64(n)
	}
	live, unret, maxSeq := map[string]int64{}, map[string]int64{}, map[string]int{}
	latest := map[string]string{} // user -> live order with the highest seq
	unretV := map[string]int64{}
	for id, o := range pg.Orders {
		q := int64(max(o.Quantity, 1))
		maxSeq[o.User] = max(maxSeq[o.User], o.Seq)
		done := compensated[id]
		switch {
		case o.Status == contract.StatusCreated || o.Status == contract.StatusPaid:
			if done { // cancelled after the Postgres snapshot, and compensated already
				pgStock += q
				if o.Variant != "" {
					pgVar[o.Variant] += q
				}
				continue
			}
			live[o.User] += q
			if cur, ok := latest[o.User]; !ok || pg.Orders[cur].Seq < o.Seq {
				latest[o.User] = id
			}
		case !done:
			unret[o.User] += q
			unretV[o.Variant] += q
			p.Unreturned += q
		}
	}
	p.PGStock = pgStock

	users := map[string]bool{}
	for u := range live {
		users[u] = true
	}
	for u := range unret {
		users[u] = true
	}
	for u := range maxSeq {
		users[u] = true
	}
	for _, sh := range shards {
		for u := range sh.Buyers {
			users[u] = true
		}
		if usesHeld {
			for u := range sh.Held {
				if !strings.HasPrefix(u, "#") {
					users[u] = true
				}
			}
		}
	}
	for _, u := range sortedIDs(users) {
		sh := &shards[contract.ShardOf(u, k)]
		latestID := sh.Buyers[u]
		var redisUnits int64
		counter := 0
		if usesHeld {
			raw, ok := sh.Held[u]
			redisUnits, _ = strconv.ParseInt(raw, 10, 64)
			if c, err := strconv.Atoi(sh.Held[contract.HeldSeqField(u)]); err == nil {
				counter = c
			} else if ok {
				counter = 1
			}
		} else if latestID != "" {
			redisUnits = 1
		}
		d := redisUnits - live[u] - unret[u]
		switch {
		case d > 0:
			p.InFlight += d
			if _, known := pg.Orders[latestID]; latestID != "" && !known {
				if at, ok := AcceptedAt(latestID); !ok || !at.After(cutoff) {
					p.Lost = append(p.Lost, Lost{User: u, Order: latestID, Units: int(d), Seq: max(counter, 1)})
				}
			}
		case d < 0 && usesHeld:
			p.Raise[u] = Raise{Units: int(-d)}
			p.RaisedShort += -d
		}
		if usesHeld && maxSeq[u] > counter {
			r := p.Raise[u]
			r.Seq = maxSeq[u]
			p.Raise[u] = r
		}
		if latestID == "" && latest[u] != "" {
			p.Restore[u] = latest[u]
		}
	}

	target := pgStock - p.InFlight - p.Unreturned
	p.StockDelta = target - p.RedisStock
	if len(pg.Variants) == 0 {
		return p
	}
	// Each variant to its Postgres stock less its units not returned yet. Units in flight
	// cannot be told apart by variant (the held hash counts units, not variants), so while
	// any are in flight only the repairs that lower are made: a variant above what Postgres
	// can back even with nothing in flight is wrong whatever is in flight. The total is held
	// to the same rule, so that it does not grow past the sum of its variants.
	for v := range pg.Variants {
		var have int64
		for i := range shards {
			have += shards[i].variant(v)
		}
		d := pgVar[v] - unretV[v] - have
		if p.InFlight > 0 && d > 0 {
			p.VariantsHeld = true
			d = 0
		}
		if d != 0 {
			p.VariantDelta[v] = d
		}
	}
	if p.InFlight > 0 && p.StockDelta > 0 {
		p.VariantsHeld = true
		p.StockDelta = 0
	}
	p.Exact = p.InFlight == 0 && unretV[""] == 0
	return p
}

// ShardArgs splits the plan over the shards: per shard its stock delta and reconcile.lua's
// pairs (buyers to restore, variant deltas, held raises).
func (p *Plan) ShardArgs(shards []Shard) (deltas []int64, pairs [][]any) {
	k := len(shards)
	stocks := make([]int64, k)
	for i := range shards {
		stocks[i] = shards[i].Stock
	}
	pairs = make([][]any, k)
	after := make([]int64, k) // each shard's sum of variants after the repair
	vs := make([]string, 0, len(p.VariantDelta))
	for v := range p.VariantDelta {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	for i := range shards {
		for f, raw := range shards[i].Meta {
			if len(f) > len(contract.VariantFieldPrefix) && strings.HasPrefix(f, contract.VariantFieldPrefix) {
				n, _ := strconv.ParseInt(raw, 10, 64)
				after[i] += n
			}
		}
	}
	for _, v := range vs {
		have := make([]int64, k)
		for i := range shards {
			have[i] = shards[i].variant(v)
		}
		for i, d := range ShardDeltas(have, p.VariantDelta[v]) {
			if d != 0 {
				pairs[i] = append(pairs[i], contract.VariantField(v), d)
				after[i] += d
			}
		}
	}
	deltas = ShardDeltas(stocks, p.StockDelta)
	if p.Exact {
		// Every shard's stock to the sum of its variants: the sum of these deltas is the
		// total's (Postgres keeps its total the sum of its variants), checked anyway.
		exact, sum := make([]int64, k), int64(0)
		for i := range shards {
			exact[i] = after[i] - stocks[i]
			sum += exact[i]
		}
		if sum == p.StockDelta {
			deltas = exact
		}
	}
	for _, u := range sortedIDs(p.Restore) {
		i := contract.ShardOf(u, k)
		pairs[i] = append(pairs[i], u, p.Restore[u])
	}
	for _, u := range sortedIDs(p.Raise) {
		i := contract.ShardOf(u, k)
		r := p.Raise[u]
		if r.Units > 0 {
			pairs[i] = append(pairs[i], "h:"+u, r.Units)
		}
		if r.Seq > 0 {
			pairs[i] = append(pairs[i], contract.HeldSeqField(u), r.Seq)
		}
	}
	return deltas, pairs
}

func sortedIDs[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for u := range m {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}
