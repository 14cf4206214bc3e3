package backend

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// The arithmetic of reconciling a unit sale (a sale with variants or a per-user limit above
// 1), apart from any I/O so that it can be read, and tested, on its own. reconcile_units.go
// takes the snapshots and applies the plan.

type unitOrder struct {
	user, status, variant string
	quantity, seq         int
}

// unitPG is the Postgres snapshot (repeatable read, taken first).
type unitPG struct {
	limit    int
	stock    int
	variants map[string]int // variant -> stock; empty for a sale without variants
	orders   map[string]unitOrder
}

// unitShard is the atomic Redis snapshot of one shard (the sale itself when unsharded).
type unitShard struct {
	id          string
	stock       int64
	meta        map[string]string
	held        map[string]string // raw, "#<user>" counters included
	buyers      map[string]string
	compensated map[string]bool
}

// variant reads the shard's units left of v (0 when the field is missing or unreadable).
func (sh *unitShard) variant(v string) int64 {
	n, _ := strconv.ParseInt(sh.meta[contract.VariantField(v)], 10, 64)
	return n
}

// lostOrder is the latest order of a user Redis counts and Postgres never received, past the
// grace period: it is recorded failed with the user's units in flight.
type lostOrder struct {
	user, order string
	units, seq  int
}

// heldRaise is what a user's held hash lacks: units to add, and the purchase counter's floor.
type heldRaise struct {
	units, seq int
}

// unitPlan is the repair of a unit sale.
type unitPlan struct {
	pgStock    int64 // Postgres stock as of the Redis snapshot (see adjust in planUnits)
	redisStock int64
	inFlight   int64
	unreturned int64
	stockDelta int64
	// variantDelta is each variant's repair, summed over the shards.
	variantDelta map[string]int64
	// variantsHeld is true when positive variant repairs were held back (units in flight).
	variantsHeld bool
	// raisedShort counts the units Redis lacked for users' holdings.
	raisedShort int64
	lost        []lostOrder
	restore     map[string]string // user -> latest live order
	raise       map[string]heldRaise
	// exact: the shards' stocks are set to the sum of their variants (nothing in flight,
	// nothing owed to an unknown variant); otherwise the total is spread as ShardDeltas does.
	exact bool
}

// planUnits computes the repair from the two snapshots. k is the shard count (len(shards));
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
func planUnits(pg unitPG, shards []unitShard, cutoff time.Time) unitPlan {
	k := len(shards)
	p := unitPlan{variantDelta: map[string]int64{}, restore: map[string]string{}, raise: map[string]heldRaise{}}
	usesHeld := contract.UsesHeld(pg.limit)
	compensated := map[string]bool{}
	for _, sh := range shards {
		p.redisStock += sh.stock
		for id := range sh.compensated {
			compensated[id] = true
		}
	}
	pgStock := int64(pg.stock)
	pgVar := map[string]int64{}
	for v, n := range pg.variants {
		pgVar[v] = int64(n)
	}
	live, unret, maxSeq := map[string]int64{}, map[string]int64{}, map[string]int{}
	latest := map[string]string{} // user -> live order with the highest seq
	unretV := map[string]int64{}
	for id, o := range pg.orders {
		q := int64(max(o.quantity, 1))
		maxSeq[o.user] = max(maxSeq[o.user], o.seq)
		done := compensated[id]
		switch {
		case o.status == contract.StatusCreated || o.status == contract.StatusPaid:
			if done { // cancelled after the Postgres snapshot, and compensated already
				pgStock += q
				if o.variant != "" {
					pgVar[o.variant] += q
				}
				continue
			}
			live[o.user] += q
			if cur, ok := latest[o.user]; !ok || pg.orders[cur].seq < o.seq {
				latest[o.user] = id
			}
		case !done:
			unret[o.user] += q
			unretV[o.variant] += q
			p.unreturned += q
		}
	}
	p.pgStock = pgStock

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
		for u := range sh.buyers {
			users[u] = true
		}
		if usesHeld {
			for u := range sh.held {
				if !strings.HasPrefix(u, "#") {
					users[u] = true
				}
			}
		}
	}
	for _, u := range sortedIDs(users) {
		sh := &shards[contract.ShardOf(u, k)]
		latestID := sh.buyers[u]
		var redisUnits int64
		counter := 0
		if usesHeld {
			raw, ok := sh.held[u]
			redisUnits, _ = strconv.ParseInt(raw, 10, 64)
			if c, err := strconv.Atoi(sh.held[contract.HeldSeqField(u)]); err == nil {
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
			p.inFlight += d
			if _, known := pg.orders[latestID]; latestID != "" && !known {
				if at, ok := acceptedAt(latestID); !ok || !at.After(cutoff) {
					p.lost = append(p.lost, lostOrder{user: u, order: latestID, units: int(d), seq: max(counter, 1)})
				}
			}
		case d < 0 && usesHeld:
			p.raise[u] = heldRaise{units: int(-d)}
			p.raisedShort += -d
		}
		if usesHeld && maxSeq[u] > counter {
			r := p.raise[u]
			r.seq = maxSeq[u]
			p.raise[u] = r
		}
		if latestID == "" && latest[u] != "" {
			p.restore[u] = latest[u]
		}
	}

	target := pgStock - p.inFlight - p.unreturned
	p.stockDelta = target - p.redisStock
	if len(pg.variants) == 0 {
		return p
	}
	// Each variant to its Postgres stock less its units not returned yet. Units in flight
	// cannot be told apart by variant (the held hash counts units, not variants), so while
	// any are in flight only the repairs that lower are made: a variant above what Postgres
	// can back even with nothing in flight is wrong whatever is in flight. The total is held
	// to the same rule, so that it does not grow past the sum of its variants.
	for v := range pg.variants {
		var have int64
		for i := range shards {
			have += shards[i].variant(v)
		}
		d := pgVar[v] - unretV[v] - have
		if p.inFlight > 0 && d > 0 {
			p.variantsHeld = true
			d = 0
		}
		if d != 0 {
			p.variantDelta[v] = d
		}
	}
	if p.inFlight > 0 && p.stockDelta > 0 {
		p.variantsHeld = true
		p.stockDelta = 0
	}
	p.exact = p.inFlight == 0 && unretV[""] == 0
	return p
}

// shardArgs splits the plan over the shards: per shard its stock delta and reconcile.lua's
// pairs (buyers to restore, variant deltas, held raises).
func (p *unitPlan) shardArgs(shards []unitShard) (deltas []int64, pairs [][]any) {
	k := len(shards)
	stocks := make([]int64, k)
	for i := range shards {
		stocks[i] = shards[i].stock
	}
	pairs = make([][]any, k)
	after := make([]int64, k) // each shard's sum of variants after the repair
	vs := make([]string, 0, len(p.variantDelta))
	for v := range p.variantDelta {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	for i := range shards {
		for f, raw := range shards[i].meta {
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
		for i, d := range ShardDeltas(have, p.variantDelta[v]) {
			if d != 0 {
				pairs[i] = append(pairs[i], contract.VariantField(v), d)
				after[i] += d
			}
		}
	}
	deltas = ShardDeltas(stocks, p.stockDelta)
	if p.exact {
		// Every shard's stock to the sum of its variants: the sum of these deltas is the
		// total's (Postgres keeps its total the sum of its variants), checked anyway.
		exact, sum := make([]int64, k), int64(0)
		for i := range shards {
			exact[i] = after[i] - stocks[i]
			sum += exact[i]
		}
		if sum == p.stockDelta {
			deltas = exact
		}
	}
	for _, u := range sortedIDs(p.restore) {
		i := contract.ShardOf(u, k)
		pairs[i] = append(pairs[i], u, p.restore[u])
	}
	for _, u := range sortedIDs(p.raise) {
		i := contract.ShardOf(u, k)
		r := p.raise[u]
		if r.units > 0 {
			pairs[i] = append(pairs[i], "h:"+u, r.units)
		}
		if r.seq > 0 {
			pairs[i] = append(pairs[i], contract.HeldSeqField(u), r.seq)
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
