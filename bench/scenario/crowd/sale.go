package crowd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
)

// Contestant names.
const (
	Pessimistic = "pessimistic"
	Optimistic  = "optimistic"
	Edge        = "edge"
	Ceiling     = "ceiling"
)

// Options of one contestant's run.
type Options struct {
	Crowd Crowd
	Stock int
	Model load.Model
	// Duration caps the rush (0: the whole crowd).
	Duration time.Duration
	// TokenConns is the concurrency of the token phase and of the late arrivals (default 200).
	TokenConns int
	// TokenRate, when > 0, sends the token phase as an open model at this rate (requests/s)
	// instead of as fast as TokenConns connections go (the soak keeps the whole run at a
	// steady share of capacity this way).
	TokenRate float64
	// DrainTimeout bounds the wait for the winners to reach Postgres (default 30 s).
	DrainTimeout time.Duration
	// Progress receives a progress bar (nil: none).
	Progress io.Writer
	// Label is a suffix of the run's name (e.g. "open").
	Label string
	// Client is the load client: "raw" (default) or "nethttp" (see load.NewClient).
	Client string
	// Sabotage, for tests of the verifier only, runs after the sale is preheated and before the
	// crowd comes (see InflateRedisStock).
	Sabotage func(ctx context.Context, d *driver.Driver, sale string) error
	// AroundRush, when set, is called as a contestant's measured rush begins (with the
	// contestant's kind) and the function it returns as the rush ends: -gateway-pprof profiles
	// the gateway over the rush only this way.
	AroundRush func(kind string) func()
	// Shards splits the edge's sale over this many Redis shards (docs/scaling.md, "Hot-sale
	// stock sharding"); 0 or 1: unsharded.
	Shards int
	// DrainAfterRush keeps the benchmark's own side traffic out of the measured rush: the
	// drain watcher, which polls Postgres every 50 ms for every winner's row, starts only
	// after the rush (and the late arrivals), and the drain's "seen by polling" times are then
	// upper bounds from that point on. The invariants are checked after it as always.
	DrainAfterRush bool
}

// InflateRedisStock is a sabotage: it gives the gate extra units that Postgres does not have,
// which is what a gate whose Lua stock check is disabled does once the real stock is gone.
// A run with it must FAIL verification.
func InflateRedisStock(extra int) func(ctx context.Context, d *driver.Driver, sale string) error {
	return func(ctx context.Context, d *driver.Driver, sale string) error {
		return d.Redis.HIncrBy(ctx, contract.MetaKey(sale), contract.FieldStock, int64(extra)).Err()
	}
}

// Outcome of one contestant.
type Outcome struct {
	Name     string       `json:"name"`
	Kind     string       `json:"kind"`
	Sale     string       `json:"sale"`
	Stock    int          `json:"stock"`
	Tokens   *load.Result `json:"tokens,omitempty"`
	Rush     *load.Result `json:"rush"`
	Late     *load.Result `json:"late,omitempty"`
	Accepted int          `json:"accepted"`
	// Winners is every 202 the run collected (written to accepted-<sale>.json, not to the result).
	Winners []invariants.Accepted `json:"-"`
	Drain   *invariants.Drain     `json:"drain,omitempty"`
	Verify  *invariants.Report    `json:"verify,omitempty"`
	Checks  []invariants.Check    `json:"scenario_checks,omitempty"`
	Latency load.Percentiles      `json:"latency"`
	Service load.Percentiles      `json:"service_latency"`
	// CPU is the CPU time each server process spent per completed request of the rush, in
	// microseconds (gateway, backend, redis; absent when its pid is unknown). Background work
	// during the rush (the relay, the consumer) is included: it is what a request costs.
	CPU map[string]float64 `json:"cpu_us_per_request,omitempty"`
	// CPUPerPurchase is the CPU each server process spent per winner over the whole sale: for
	// the edge from the first token request to the last winner's row in Postgres (tokens, the
	// rush with its losing clicks, the late arrivals, the relay and the consumer), for the
	// baselines over the rush. It is what one sold unit costs.
	CPUPerPurchase map[string]float64 `json:"cpu_us_per_purchase,omitempty"`
	// RedisCommands is INFO commandstats over the rush, per completed request, costliest first.
	RedisCommands []driver.CommandCost `json:"redis_commands,omitempty"`
	// Breakdown is the rush's allocations, garbage collections and Redis persistence work.
	Breakdown *driver.Breakdown `json:"breakdown,omitempty"`
	// DrainAfterRush is set when the drain watcher did not poll Postgres during the rush
	// (Options.DrainAfterRush): the rush's figures are then free of that side traffic, and the
	// drain's "seen by polling" times are not (they include the rush).
	DrainAfterRush bool `json:"drain_poll_after_rush,omitempty"`
}

// OK reports whether every invariant and scenario check passed.
func (o *Outcome) OK() bool {
	if o.Verify != nil && !o.Verify.OK() {
		return false
	}
	for _, c := range o.Checks {
		if c.Verdict != invariants.Pass {
			return false
		}
	}
	return true
}

func (o Options) around(kind string) func() {
	if o.AroundRush == nil {
		return func() {}
	}
	return o.AroundRush(kind)
}

func (o Options) tokenConns() int {
	if o.TokenConns > 0 {
		return o.TokenConns
	}
	return 200
}

// RunEdge drives the crowd through the full edge: every user fetches a purchase token, then the
// rush of clicks (measured under the options' model), then the late arrivals; it waits for the
// winners to drain into Postgres and checks every invariant.
func RunEdge(ctx context.Context, d *driver.Driver, o Options) (*Outcome, error) {
	sale := driver.SaleID("edge")
	if err := d.CreateShardedSale(ctx, sale, o.Stock, true, o.Shards); err != nil {
		return nil, err
	}
	if o.Sabotage != nil {
		if err := o.Sabotage(ctx, d, sale); err != nil {
			return nil, fmt.Errorf("sabotage: %w", err)
		}
	}
	people := o.Crowd.Cast(sale + "-")
	name := "full edge"
	if o.Shards > 1 {
		name += fmt.Sprintf(", %d shards", o.Shards)
	}
	if o.Label != "" {
		name += " (" + o.Label + ")"
	}
	out := &Outcome{Name: name, Kind: Edge, Sale: sale, Stock: o.Stock}
	gw := d.Stack.Gateway

	// 1. Tokens: the page load before the click. Not part of the measured rush.
	saleCPU := d.ReadCPU()
	tokens := fetchTokens(ctx, d, o, name, sale, append(append([]string{}, people.Users...), people.Bots...), people)
	out.Tokens = tokens.res

	// 2. The rush.
	clicks := o.Crowd.Rush(people)
	reqs := make([]load.Request, len(clicks))
	for i, c := range clicks {
		h := driver.Header(c.User, c.IP)
		switch {
		case c.Kind == KindForged:
			h.Set("X-Seckill-Token", forgedToken(i))
		case tokens.of[c.TokenOf] != "":
			h.Set("X-Seckill-Token", tokens.of[c.TokenOf])
		}
		reqs[i] = load.Request{Method: http.MethodPost, URL: gw + "/seckill/" + sale + "/buy", Header: h, Kind: c.Kind, User: c.User}
	}
	acc := &driver.Winners{}
	if out.DrainAfterRush = o.DrainAfterRush; !o.DrainAfterRush {
		acc.Drain = invariants.NewDrainWatcher(ctx, d.PG)
	}
	var win driver.Window // opened once the connections are warm
	done := o.around(Edge)
	out.Rush = load.Execute(ctx, load.Run{Name: name + " rush", Model: o.Model, Requests: reqs, Duration: o.Duration,
		Client: load.NewClient(o.Client, o.Model.Connections), OnResponse: acc.Collect, Progress: o.Progress, WarmURL: gw + "/healthz", Warmed: func() { win = driver.OpenWindow(ctx, d) }})
	done()
	out.CPU, out.RedisCommands, out.Breakdown = win.Close(ctx, d, out.Rush)

	rushEnd := time.Now()
	timeout := o.DrainTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}

	// 3. Late arrivals: after the rush, they get a token and click once.
	if len(people.Late) > 0 {
		late := fetchTokens(ctx, d, o, name+" late", sale, people.Late, people)
		lreqs := make([]load.Request, len(people.Late))
		for i, u := range people.Late {
			h := driver.Header(u, people.IPs[u])
			if t := late.of[u]; t != "" {
				h.Set("X-Seckill-Token", t)
			}
			lreqs[i] = load.Request{Method: http.MethodPost, URL: gw + "/seckill/" + sale + "/buy", Header: h, Kind: KindLate, User: u}
		}
		out.Late = load.Execute(ctx, load.Run{Name: name + " late", Model: load.Model{Connections: o.tokenConns()}, Requests: lreqs,
			Client: load.NewClient(o.Client, o.tokenConns()), OnResponse: acc.Collect})
	}
	out.Accepted, out.Winners = len(acc.Accepted), acc.Accepted
	out.Latency, out.Service = load.PercentilesOf(out.Rush.Latency), load.PercentilesOf(out.Rush.Service)
	if acc.Drain == nil { // DrainAfterRush: no click is in flight any more
		acc.Drain = invariants.NewDrainWatcher(ctx, d.PG)
		for _, w := range acc.Accepted {
			acc.Drain.Add(w)
		}
	}

	// 4. Drain (the watcher has followed the winners since the first 202) and verify.
	dr, err := acc.Drain.Wait(ctx, timeout)
	if err != nil {
		return out, fmt.Errorf("drain: %w", err)
	}
	out.Drain = &dr
	out.CPUPerPurchase = d.PerUnit(saleCPU, out.Accepted)
	settled, err := invariants.WaitSettled(ctx, d.PG, d.Redis, sale, timeout)
	if err != nil {
		return out, fmt.Errorf("settle: %w", err)
	}
	out.Drain.StockSettled, out.Drain.SettleMs = settled, float64(time.Since(rushEnd).Microseconds())/1000
	demand := demandOf(out.Rush)
	rep, err := invariants.Verify(ctx, invariants.Sources{Redis: d.Redis, PG: d.PG,
		Dead:   invariants.RabbitMgmt{URL: d.Stack.MgmtURL, Vhost: d.Stack.Vhost},
		Orders: invariants.HTTPOrders(gw, nil)},
		invariants.Run{Sale: sale, Accepted: acc.Accepted, Demand: demand, CheckRedis: true, Uncertain: acc.Uncertain})
	if err != nil {
		return out, err
	}
	out.Verify = &rep
	out.Checks = scenarioChecks(out, o.Stock, demand, len(tokens.of) > 0)
	return out, nil
}

type tokenSet struct {
	res *load.Result
	of  map[string]string
}

func fetchTokens(ctx context.Context, d *driver.Driver, o Options, name, sale string, users []string, p People) tokenSet {
	return fetchTokensAt(ctx, d, o, d.Stack.Gateway, name, sale, users, p)
}

// fetchTokensAt is fetchTokens from the gateway at gw.
func fetchTokensAt(ctx context.Context, d *driver.Driver, o Options, gw, name, sale string, users []string, p People) tokenSet {
	reqs := make([]load.Request, len(users))
	for i, u := range users {
		reqs[i] = load.Request{Method: http.MethodPost, URL: gw + "/seckill/" + sale + "/token",
			Header: driver.Header(u, p.IPs[u]), Kind: "token", User: u}
	}
	ts := tokenSet{of: make(map[string]string, len(users))}
	var mu sync.Mutex
	model := load.Model{Connections: o.tokenConns()}
	if o.TokenRate > 0 {
		model.Rate = o.TokenRate
	}
	ts.res = load.Execute(ctx, load.Run{Name: name + " tokens", Model: model, Requests: reqs,
		Client: load.NewClient(o.Client, o.tokenConns()), Progress: o.Progress,
		OnResponse: func(req load.Request, resp load.Response) {
			var b struct {
				Token string `json:"token"`
			}
			if resp.Status == http.StatusOK && json.Unmarshal(resp.Body, &b) == nil && b.Token != "" {
				mu.Lock()
				ts.of[req.User] = b.Token
				mu.Unlock()
			}
		}})
	return ts
}

// demandOf counts the distinct users whose own click reached the sale's decision (won, sold
// out, or already bought by a faster click of theirs): when they outnumber the stock, the sale
// must sell out. Every user has exactly one KindCrowd click, so its outcomes count users.
func demandOf(res *load.Result) int {
	m := res.ByKind[KindCrowd]
	return m["accepted"] + m["sold_out"] + m["already_bought"]
}

// scenarioChecks are the expectations of the crowd beyond the five invariants: forged and
// replayed tokens never buy, late arrivals find the sale sold out, nobody gets a 5xx other
// than 503.
func scenarioChecks(o *Outcome, stock, demand int, tokensIssued bool) []invariants.Check {
	var cs []invariants.Check
	bad := func(kind string) int {
		return o.Rush.ByKind[kind]["accepted"]
	}
	if tokensIssued {
		c := invariants.Check{N: 6, Name: "forged and replayed tokens never buy", Verdict: invariants.Pass,
			Detail: fmt.Sprintf("%d forged, %d replayed clicks accepted", bad(KindForged), bad(KindReplay))}
		if bad(KindForged)+bad(KindReplay) > 0 {
			c.Verdict = invariants.Fail
		}
		cs = append(cs, c)
	} else {
		cs = append(cs, invariants.Check{N: 6, Name: "purchase tokens are issued", Verdict: invariants.Fail,
			Detail: fmt.Sprintf("no token was issued (%s): the gateway is not the full edge", outcomeList(o.Tokens.Outcomes))})
	}
	if o.Late != nil && demand > stock {
		lateWon := o.Late.Outcomes["accepted"]
		c := invariants.Check{N: 7, Name: "late arrivals find the sale sold out", Verdict: invariants.Pass,
			Detail: fmt.Sprintf("%d of %d late clicks sold_out, %d accepted", o.Late.Outcomes["sold_out"], o.Late.Completed, lateWon)}
		if lateWon > 0 || o.Late.Outcomes["sold_out"] == 0 {
			c.Verdict = invariants.Fail
		}
		cs = append(cs, c)
	}
	fivexx := 0
	for _, r := range []*load.Result{o.Tokens, o.Rush, o.Late} {
		if r == nil {
			continue
		}
		for k, n := range r.Outcomes {
			if strings.HasPrefix(k, "http_5") {
				fivexx += n
			}
		}
	}
	c := invariants.Check{N: 8, Name: "no 5xx but 503 unavailable", Verdict: invariants.Pass, Detail: fmt.Sprintf("%d other 5xx answers", fivexx)}
	if fivexx > 0 {
		c.Verdict = invariants.Fail
	}
	cs = append(cs, c)
	return cs
}

func outcomeList(m map[string]int) string {
	var parts []string
	for _, k := range load.SortedOutcomes(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// RunBaseline sends the same crowd to one of the backend's database baselines (pessimistic or
// optimistic lock, one order per request straight into Postgres) and checks the invariants that
// apply to it (no Redis, no queue).
func RunBaseline(ctx context.Context, d *driver.Driver, kind string, o Options) (*Outcome, error) {
	sale := driver.SaleID(kind)
	if err := d.CreateSale(ctx, sale, o.Stock, false); err != nil {
		return nil, err
	}
	people := o.Crowd.Cast(sale + "-")
	clicks := o.Crowd.Rush(people)
	reqs := make([]load.Request, len(clicks))
	for i, c := range clicks {
		h := driver.Header(c.User, c.IP)
		h.Set("Authorization", "Bearer "+d.Stack.AdminToken) // the baselines are admin-only
		reqs[i] = load.Request{Method: http.MethodPost, URL: d.Stack.Backend + "/baseline/" + kind + "/" + sale,
			Header: h, Kind: c.Kind, User: c.User}
	}
	out := &Outcome{Name: kind + " lock (DB)", Kind: kind, Sale: sale, Stock: o.Stock}
	acc := &driver.Winners{}
	cpu := d.ReadCPU()
	out.Rush = load.Execute(ctx, load.Run{Name: kind + " rush", Model: o.Model, Requests: reqs, Duration: o.Duration,
		Client: load.NewClient(o.Client, o.Model.Connections), OnResponse: acc.Collect, Progress: o.Progress, WarmURL: d.Stack.Backend + "/healthz"})
	out.CPU = d.PerRequest(cpu, out.Rush)
	out.Accepted, out.Winners = len(acc.Accepted), acc.Accepted
	out.CPUPerPurchase = d.PerUnit(cpu, out.Accepted)
	out.Latency, out.Service = load.PercentilesOf(out.Rush.Latency), load.PercentilesOf(out.Rush.Service)
	// The baselines write synchronously: nothing to drain. Demand: only when the run was not cut
	// short can it be asked to sell out.
	demand := 0
	if out.Rush.Sent == out.Rush.Planned {
		demand = demandOf(out.Rush)
	}
	rep, err := invariants.Verify(ctx, invariants.Sources{Redis: d.Redis, PG: d.PG, Dead: invariants.RabbitMgmt{URL: d.Stack.MgmtURL, Vhost: d.Stack.Vhost}},
		invariants.Run{Sale: sale, Accepted: acc.Accepted, Demand: demand, Uncertain: acc.Uncertain})
	if err != nil {
		return out, err
	}
	out.Verify = &rep
	return out, nil
}

// RunCeiling sends the same number of requests to a Caddy site that only answers `respond`:
// the most this machine's Caddy and client can do, whatever the handler.
func RunCeiling(ctx context.Context, d *driver.Driver, o Options) (*Outcome, error) {
	if d.Stack.Ceiling == "" {
		return nil, fmt.Errorf("no ceiling site (give -ceiling)")
	}
	people := o.Crowd.Cast("ceil-")
	clicks := o.Crowd.Rush(people)
	reqs := make([]load.Request, len(clicks))
	for i, c := range clicks {
		reqs[i] = load.Request{Method: http.MethodPost, URL: d.Stack.Ceiling + "/", Header: driver.Header(c.User, c.IP), Kind: c.Kind, User: c.User}
	}
	name := "Caddy respond (ceiling)"
	if o.Label != "" {
		name += " (" + o.Label + ")"
	}
	out := &Outcome{Name: name, Kind: Ceiling}
	var win driver.Window // opened once the connections are warm
	done := o.around(Ceiling)
	out.Rush = load.Execute(ctx, load.Run{Name: "ceiling rush", Model: o.Model, Requests: reqs, Duration: o.Duration,
		Client: load.NewClient(o.Client, o.Model.Connections), Progress: o.Progress, WarmURL: d.Stack.Ceiling + "/", Warmed: func() { win = driver.OpenWindow(ctx, d) }})
	done()
	out.CPU, out.RedisCommands, out.Breakdown = win.Close(ctx, d, out.Rush)
	out.Latency, out.Service = load.PercentilesOf(out.Rush.Latency), load.PercentilesOf(out.Rush.Service)
	return out, nil
}
