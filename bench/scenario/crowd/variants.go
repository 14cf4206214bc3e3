package crowd

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/internal/invariants"
)

// VariantCrowd is the crowd of a sale with variants and a per-user limit (DESIGN.md, "Variants
// and quantities"): every user comes for a random variant in a random quantity (1..Limit),
// some click again with the same token and body, and some come back for a further purchase
// (a new token) while their limit allows it.
type VariantCrowd struct {
	Users int
	// Stocks are the variants' stocks; the variants are named v0, v1, ...
	Stocks []int
	// Limit is the sale's per_user_limit (default 2).
	Limit int
	// Repeaters is the share of clicks (0..1) that are clicked again 1 to 3 times.
	Repeaters float64
	// Returners is the share of users (0..1) who come back for another purchase.
	Returners float64
	Seed      uint64
	// Shards splits the sale (each variant) over this many Redis shards; 0 or 1: unsharded.
	Shards int
}

// DefaultVariantCrowd is the crowd: 5 000 buyers, 8 variants of different sizes (the
// small ones sell out first, the others must keep selling), a limit of 2.
func DefaultVariantCrowd() VariantCrowd {
	return VariantCrowd{Users: 5000, Stocks: []int{40, 80, 160, 320, 480, 640, 800, 960}, Limit: 2,
		Repeaters: 0.3, Returners: 0.5, Seed: 18}
}

func (vc VariantCrowd) limit() int { return max(vc.Limit, 1) }

// VariantPurchase is what a variant click asks for (the buy request's JSON body).
type VariantPurchase struct {
	Variant  string `json:"variant"`
	Quantity int    `json:"quantity"`
}

// VariantOutcome is an Outcome with what the variant scenario adds: when each variant was
// first refused sold_out, and how many units of other variants were accepted after that.
type VariantOutcome struct {
	*Outcome
	// FirstSoldOut is when a click for each variant was first answered sold_out.
	FirstSoldOut map[string]time.Time
	// AcceptedAfter counts, per variant, the 202s for OTHER variants after its first sold_out.
	AcceptedAfter map[string]int
}

// CreateVariantSale creates and preheats a sale whose variants v0, v1, ... (Variant) have the
// given stocks, with a per-user limit (0: 1).
func CreateVariantSale(ctx context.Context, d *driver.Driver, sale string, stocks []int, limit int) error {
	return createVariantSale(ctx, d, sale, VariantCrowd{Stocks: stocks, Limit: limit})
}

// createVariantSale creates and preheats a sale with vc's variants and limit.
func createVariantSale(ctx context.Context, d *driver.Driver, sale string, vc VariantCrowd) error {
	now := time.Now().UTC()
	vs := make([]map[string]any, len(vc.Stocks))
	for i, n := range vc.Stocks {
		vs[i] = map[string]any{"id": driver.Variant(i), "stock": n}
	}
	spec := map[string]any{"id": sale, "variants": vs, "per_user_limit": vc.limit(),
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339), "pay_within": "1h"}
	if vc.Shards > 1 {
		spec["shards"] = vc.Shards
	}
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales", spec); err != nil {
		return fmt.Errorf("create sale: %w", err)
	}
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales/"+sale+"/preheat", nil); err != nil {
		return fmt.Errorf("preheat: %w", err)
	}
	return nil
}

// RunVariants drives a variant crowd through the edge, spread over the stack's gateways
// (users alternate), in rounds: every user of a round fetches a token and clicks (with repeats);
// the next round is the returners, up to the limit. Then it waits for the winners to drain and
// checks every invariant, per variant and in units. o gives the load model and the drain timeout.
func RunVariants(ctx context.Context, d *driver.Driver, vc VariantCrowd, o Options) (*VariantOutcome, error) {
	sale := driver.SaleID("variants")
	if err := createVariantSale(ctx, d, sale, vc); err != nil {
		return nil, err
	}
	total := 0
	for _, n := range vc.Stocks {
		total += n
	}
	name := fmt.Sprintf("variants (%d variants, limit %d, %d gateways)", len(vc.Stocks), vc.limit(), len(d.Stack.AllGateways()))
	if vc.Shards > 1 {
		name = fmt.Sprintf("variants (%d variants, limit %d, %d gateways, %d shards)", len(vc.Stocks), vc.limit(), len(d.Stack.AllGateways()), vc.Shards)
	}
	out := &VariantOutcome{Outcome: &Outcome{Name: name, Kind: Edge, Sale: sale, Stock: total},
		FirstSoldOut: map[string]time.Time{}, AcceptedAfter: map[string]int{}}
	people := Crowd{Users: vc.Users}.Cast(sale + "-")
	gws := d.Stack.AllGateways()
	gwOf := func(i int) string { return gws[i%len(gws)] }
	index := make(map[string]int, len(people.Users))
	for i, u := range people.Users {
		index[u] = i
	}
	r := rand.New(rand.NewPCG(vc.Seed, 0x18))
	acc := &driver.Winners{Drain: invariants.NewDrainWatcher(ctx, d.PG)}
	type answer struct {
		at       time.Time
		variant  string
		accepted bool
	}
	var mu sync.Mutex
	var answers []answer
	collect := func(req load.Request, resp load.Response) {
		acc.Collect(req, resp)
		var p VariantPurchase
		_ = json.Unmarshal(req.Body, &p)
		if resp.Outcome == "accepted" || resp.Outcome == "sold_out" {
			mu.Lock()
			answers = append(answers, answer{resp.At, p.Variant, resp.Outcome == "accepted"})
			mu.Unlock()
		}
	}
	round := people.Users
	var rush *load.Result
	cpu := d.ReadCPU()
	for k := 0; k < vc.limit() && len(round) > 0; k++ {
		// Tokens for this round's users, from the gateway each one uses.
		tokens := map[string]string{}
		for g := range gws {
			var mine []string
			for _, u := range round {
				if index[u]%len(gws) == g {
					mine = append(mine, u)
				}
			}
			ts := fetchTokensAt(ctx, d, o, gws[g], name, sale, mine, people)
			for u, t := range ts.of {
				tokens[u] = t
			}
		}
		var reqs []load.Request
		kind := KindCrowd
		if k > 0 {
			kind = "return"
		}
		for _, u := range round {
			body, _ := json.Marshal(VariantPurchase{Variant: driver.Variant(r.IntN(len(vc.Stocks))), Quantity: 1 + r.IntN(vc.limit())})
			h := driver.Header(u, people.IPs[u])
			h.Set("Content-Type", "application/json")
			if t := tokens[u]; t != "" {
				h.Set("X-Seckill-Token", t)
			}
			req := load.Request{Method: http.MethodPost, URL: gwOf(index[u]) + "/seckill/" + sale + "/buy", Header: h, Body: body, Kind: kind, User: u}
			reqs = append(reqs, req)
			if r.Float64() < vc.Repeaters {
				for n := 1 + r.IntN(3); n > 0; n-- {
					rep := req
					rep.Kind = KindRepeat
					reqs = append(reqs, rep)
				}
			}
		}
		r.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
		res := load.Execute(ctx, load.Run{Name: fmt.Sprintf("%s round %d", name, k+1), Model: o.Model, Requests: reqs,
			Client: load.NewClient(o.Client, o.Model.Connections), OnResponse: collect, Progress: o.Progress, WarmURL: gws[0] + "/healthz"})
		rush = mergeResult(rush, res)
		var next []string
		for _, u := range round {
			if r.Float64() < vc.Returners {
				next = append(next, u)
			}
		}
		round = next
	}
	out.Rush = rush
	out.CPU = d.PerRequest(cpu, rush)
	out.Accepted, out.Winners = len(acc.Accepted), acc.Accepted
	out.Latency, out.Service = load.PercentilesOf(out.Rush.Latency), load.PercentilesOf(out.Rush.Service)

	// A variant's sell-out must not stop the others.
	sort.Slice(answers, func(i, j int) bool { return answers[i].at.Before(answers[j].at) })
	for _, a := range answers {
		if !a.accepted {
			if _, seen := out.FirstSoldOut[a.variant]; !seen {
				out.FirstSoldOut[a.variant] = a.at
			}
			continue
		}
		for v := range out.FirstSoldOut {
			if v != a.variant {
				out.AcceptedAfter[v]++
			}
		}
	}

	timeout := o.DrainTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	dr, err := acc.Drain.Wait(ctx, timeout)
	if err != nil {
		return out, fmt.Errorf("drain: %w", err)
	}
	out.Drain = &dr
	settled, err := invariants.WaitSettled(ctx, d.PG, d.Redis, sale, timeout)
	if err != nil {
		return out, fmt.Errorf("settle: %w", err)
	}
	out.Drain.StockSettled = settled
	rep, err := invariants.Verify(ctx, invariants.Sources{Redis: d.Redis, PG: d.PG,
		Dead:   invariants.RabbitMgmt{URL: d.Stack.MgmtURL, Vhost: d.Stack.Vhost},
		Orders: invariants.HTTPOrders(gws[0], nil)},
		invariants.Run{Sale: sale, Accepted: acc.Accepted, Demand: vc.Users, CheckRedis: true, Uncertain: acc.Uncertain})
	if err != nil {
		return out, err
	}
	out.Verify = &rep
	out.Checks = variantChecks(out)
	return out, nil
}

// variantChecks are the scenario's expectations beyond the invariants: no 5xx but 503, and a
// variant's sell-out does not stop the others: after the first variant was refused sold_out,
// other variants still sold; of all the variants that sold out, only the last may have had
// nothing sold after it.
func variantChecks(o *VariantOutcome) []invariants.Check {
	fivexx := 0
	for k, n := range o.Rush.Outcomes {
		if strings.HasPrefix(k, "http_5") {
			fivexx += n
		}
	}
	cs := []invariants.Check{{N: 8, Name: "no 5xx but 503 unavailable", Verdict: invariants.Pass, Detail: fmt.Sprintf("%d other 5xx answers", fivexx)}}
	if fivexx > 0 {
		cs[0].Verdict = invariants.Fail
	}
	c := invariants.Check{N: 9, Name: "a variant's sell-out does not stop the others", Verdict: invariants.Pass}
	first, stopped := "", 0
	for v, at := range o.FirstSoldOut {
		if first == "" || at.Before(o.FirstSoldOut[first]) {
			first = v
		}
		if o.AcceptedAfter[v] == 0 {
			stopped++
		}
	}
	c.Detail = fmt.Sprintf("%d variants were refused sold_out; the first was %s, after which %d purchases of other variants were accepted",
		len(o.FirstSoldOut), first, o.AcceptedAfter[first])
	switch {
	case first == "":
		c.Verdict = invariants.Fail
		c.Detail = "no variant sold out: the crowd did not test it"
	case o.AcceptedAfter[first] == 0 || stopped > 1:
		c.Verdict = invariants.Fail
	}
	return append(cs, c)
}

// mergeResult adds a round's counts into the rush's (nil: the first round).
func mergeResult(into, r *load.Result) *load.Result {
	if into == nil {
		return r
	}
	if r == nil {
		return into
	}
	into.Planned += r.Planned
	into.Sent += r.Sent
	into.Completed += r.Completed
	into.Elapsed += r.Elapsed
	if into.Elapsed > 0 {
		into.Throughput = float64(into.Completed) / into.Elapsed.Seconds()
	}
	if into.Latency != nil && r.Latency != nil {
		into.Latency.Merge(r.Latency)
	}
	if into.Service != nil && r.Service != nil {
		into.Service.Merge(r.Service)
	}
	for k, n := range r.Outcomes {
		into.Outcomes[k] += n
	}
	for kind, m := range r.ByKind {
		if into.ByKind[kind] == nil {
			into.ByKind[kind] = map[string]int{}
		}
		for k, n := range m {
			into.ByKind[kind][k] += n
		}
	}
	into.Errors = append(into.Errors, r.Errors...)
	return into
}
