package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/bench/verify"
	"github.com/seckilledge/seckill/contract"
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
	Sabotage func(ctx context.Context, d *Driver, sale string) error
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
func InflateRedisStock(extra int) func(ctx context.Context, d *Driver, sale string) error {
	return func(ctx context.Context, d *Driver, sale string) error {
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
	Winners []verify.Accepted `json:"-"`
	Drain   *verify.Drain     `json:"drain,omitempty"`
	Verify  *verify.Report    `json:"verify,omitempty"`
	Checks  []verify.Check    `json:"scenario_checks,omitempty"`
	Latency load.Percentiles  `json:"latency"`
	Service load.Percentiles  `json:"service_latency"`
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
	RedisCommands []CommandCost `json:"redis_commands,omitempty"`
	// Breakdown is the rush's allocations, garbage collections and Redis persistence work.
	Breakdown *Breakdown `json:"breakdown,omitempty"`
	// DrainAfterRush is set when the drain watcher did not poll Postgres during the rush
	// (Options.DrainAfterRush): the rush's figures are then free of that side traffic, and the
	// drain's "seen by polling" times are not (they include the rush).
	DrainAfterRush bool `json:"drain_poll_after_rush,omitempty"`
}

type cpuSnap map[string]time.Duration

// servers are the processes whose CPU a run counts, by name: each is the root of a process
// tree (a Postgres backend is the postmaster's child, beam.smp the rabbitmq-server script's).
func (d *Driver) servers() map[string]int {
	s := map[string]int{"gateway": d.Stack.GatewayPID, "backend": d.Stack.BackendPID, "redis": d.Stack.RedisPID,
		"rabbitmq": d.Stack.RabbitPID, "postgres": d.Stack.PostgresPID}
	for name, pid := range d.Stack.Others {
		s[name] = pid
	}
	return s
}

func (d *Driver) cpuSnap() cpuSnap {
	s := cpuSnap{}
	t := scanProcs()
	for name, pid := range d.servers() {
		if pid > 0 {
			s[name] = t.treeCPU(pid)
		}
	}
	return s
}

// perRequest turns the CPU used since before into microseconds per completed request.
func (d *Driver) perRequest(before cpuSnap, res *load.Result) map[string]float64 {
	if res == nil {
		return nil
	}
	return d.perUnit(before, res.Completed)
}

// perUnit is the CPU used since before, in microseconds per one of n.
func (d *Driver) perUnit(before cpuSnap, n int) map[string]float64 {
	if n == 0 {
		return nil
	}
	out := map[string]float64{}
	for name, t := range d.cpuSnap() {
		if b, ok := before[name]; ok {
			out[name] = float64((t - b).Microseconds()) / float64(n)
		}
	}
	return out
}

// OK reports whether every invariant and scenario check passed.
func (o *Outcome) OK() bool {
	if o.Verify != nil && !o.Verify.OK() {
		return false
	}
	for _, c := range o.Checks {
		if c.Verdict != verify.Pass {
			return false
		}
	}
	return true
}

// Driver runs contestants against one stack.
type Driver struct {
	Stack *Stack
	Redis redis.UniversalClient
	PG    *pgxpool.Pool
	admin *http.Client
}

// NewDriver connects to the stack's Redis and Postgres.
func NewDriver(ctx context.Context, s *Stack) (*Driver, error) {
	pg, err := pgxpool.New(ctx, s.PGURL)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.RedisAddr})
	if err := rdb.Ping(ctx).Err(); err != nil {
		pg.Close()
		return nil, fmt.Errorf("redis %s: %w", s.RedisAddr, err)
	}
	return &Driver{Stack: s, Redis: rdb, PG: pg, admin: &http.Client{Timeout: 10 * time.Minute}}, nil
}

// Close releases the connections.
func (d *Driver) Close() {
	d.PG.Close()
	_ = d.Redis.Close()
}

func (d *Driver) adminCall(ctx context.Context, method, path string, body any) error {
	return d.AdminJSON(ctx, method, path, body, nil)
}

// CreateSale creates a sale open from a minute ago for an hour (unpaid orders are kept an hour,
// so no release runs during a benchmark), and preheats it into Redis when preheat is set.
func (d *Driver) CreateSale(ctx context.Context, sale string, stock int, preheat bool) error {
	return d.createSale(ctx, sale, stock, preheat, 0)
}

// createSale is CreateSale with a shard count (0 or 1: unsharded).
func (d *Driver) createSale(ctx context.Context, sale string, stock int, preheat bool, shards int) error {
	now := time.Now().UTC()
	spec := map[string]any{
		"id": sale, "stock": stock, "starts_at": now.Add(-time.Minute).Format(time.RFC3339),
		"ends_at": now.Add(time.Hour).Format(time.RFC3339), "pay_within": "1h",
	}
	if shards > 1 {
		spec["shards"] = shards
	}
	err := d.adminCall(ctx, http.MethodPost, "/admin/sales", spec)
	if err != nil {
		return fmt.Errorf("create sale: %w", err)
	}
	if preheat {
		if err := d.adminCall(ctx, http.MethodPost, "/admin/sales/"+sale+"/preheat", nil); err != nil {
			return fmt.Errorf("preheat: %w", err)
		}
	}
	return nil
}

func saleID(kind string) string {
	return fmt.Sprintf("bench-%s-%s", kind, strings.ReplaceAll(time.Now().UTC().Format("150405.000000"), ".", ""))
}

type acceptedSet struct {
	mu        sync.Mutex
	list      []verify.Accepted
	uncertain map[string]bool
	drain     *verify.DrainWatcher // follows the winners into Postgres, when set
}

func (a *acceptedSet) collect(req load.Request, resp load.Response) {
	switch resp.Outcome {
	case "accepted":
		w := verify.Accepted{OrderID: resp.OrderID, UserID: req.User, At: resp.At}
		a.mu.Lock()
		a.list = append(a.list, w)
		a.mu.Unlock()
		if a.drain != nil {
			a.drain.Add(w)
		}
	case "unavailable", "error":
		a.mu.Lock()
		if a.uncertain == nil {
			a.uncertain = map[string]bool{}
		}
		a.uncertain[req.User] = true
		a.mu.Unlock()
	}
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
func (d *Driver) RunEdge(ctx context.Context, o Options) (*Outcome, error) {
	sale := saleID("edge")
	if err := d.createSale(ctx, sale, o.Stock, true, o.Shards); err != nil {
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
	saleCPU := d.cpuSnap()
	tokens := d.fetchTokens(ctx, o, name, sale, append(append([]string{}, people.Users...), people.Bots...), people)
	out.Tokens = tokens.res

	// 2. The rush.
	clicks := o.Crowd.Rush(people)
	reqs := make([]load.Request, len(clicks))
	for i, c := range clicks {
		h := header(c.User, c.IP)
		switch {
		case c.Kind == KindForged:
			h.Set("X-Seckill-Token", forgedToken(i))
		case tokens.of[c.TokenOf] != "":
			h.Set("X-Seckill-Token", tokens.of[c.TokenOf])
		}
		reqs[i] = load.Request{Method: http.MethodPost, URL: gw + "/seckill/" + sale + "/buy", Header: h, Kind: c.Kind, User: c.User}
	}
	acc := &acceptedSet{}
	if out.DrainAfterRush = o.DrainAfterRush; !o.DrainAfterRush {
		acc.drain = verify.NewDrainWatcher(ctx, d.PG)
	}
	var win window // opened once the connections are warm
	done := o.around(Edge)
	out.Rush = load.Execute(ctx, load.Run{Name: name + " rush", Model: o.Model, Requests: reqs, Duration: o.Duration,
		Client: load.NewClient(o.Client, o.Model.Connections), OnResponse: acc.collect, Progress: o.Progress, WarmURL: gw + "/healthz", Warmed: func() { win = openWindow(ctx, d) }})
	done()
	win.close(ctx, d, out)

	rushEnd := time.Now()
	timeout := o.DrainTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}

	// 3. Late arrivals: after the rush, they get a token and click once.
	if len(people.Late) > 0 {
		late := d.fetchTokens(ctx, o, name+" late", sale, people.Late, people)
		lreqs := make([]load.Request, len(people.Late))
		for i, u := range people.Late {
			h := header(u, people.IPs[u])
			if t := late.of[u]; t != "" {
				h.Set("X-Seckill-Token", t)
			}
			lreqs[i] = load.Request{Method: http.MethodPost, URL: gw + "/seckill/" + sale + "/buy", Header: h, Kind: KindLate, User: u}
		}
		out.Late = load.Execute(ctx, load.Run{Name: name + " late", Model: load.Model{Connections: o.tokenConns()}, Requests: lreqs,
			Client: load.NewClient(o.Client, o.tokenConns()), OnResponse: acc.collect})
	}
	out.Accepted, out.Winners = len(acc.list), acc.list
	out.Latency, out.Service = load.PercentilesOf(out.Rush.Latency), load.PercentilesOf(out.Rush.Service)
	if acc.drain == nil { // DrainAfterRush: no click is in flight any more
		acc.drain = verify.NewDrainWatcher(ctx, d.PG)
		for _, w := range acc.list {
			acc.drain.Add(w)
		}
	}

	// 4. Drain (the watcher has followed the winners since the first 202) and verify.
	dr, err := acc.drain.Wait(ctx, timeout)
	if err != nil {
		return out, fmt.Errorf("drain: %w", err)
	}
	out.Drain = &dr
	out.CPUPerPurchase = d.perUnit(saleCPU, out.Accepted)
	settled, err := verify.WaitSettled(ctx, d.PG, d.Redis, sale, timeout)
	if err != nil {
		return out, fmt.Errorf("settle: %w", err)
	}
	out.Drain.StockSettled, out.Drain.SettleMs = settled, float64(time.Since(rushEnd).Microseconds())/1000
	demand := demandOf(out.Rush)
	rep, err := verify.Verify(ctx, verify.Sources{Redis: d.Redis, PG: d.PG,
		Dead:   verify.RabbitMgmt{URL: d.Stack.MgmtURL, Vhost: d.Stack.Vhost},
		Orders: verify.HTTPOrders(gw, nil)},
		verify.Run{Sale: sale, Accepted: acc.list, Demand: demand, CheckRedis: true, Uncertain: acc.uncertain})
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

func (d *Driver) fetchTokens(ctx context.Context, o Options, name, sale string, users []string, p People) tokenSet {
	return d.fetchTokensAt(ctx, o, d.Stack.Gateway, name, sale, users, p)
}

// fetchTokensAt is fetchTokens from the gateway at gw.
func (d *Driver) fetchTokensAt(ctx context.Context, o Options, gw, name, sale string, users []string, p People) tokenSet {
	reqs := make([]load.Request, len(users))
	for i, u := range users {
		reqs[i] = load.Request{Method: http.MethodPost, URL: gw + "/seckill/" + sale + "/token",
			Header: header(u, p.IPs[u]), Kind: "token", User: u}
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
func scenarioChecks(o *Outcome, stock, demand int, tokensIssued bool) []verify.Check {
	var cs []verify.Check
	bad := func(kind string) int {
		return o.Rush.ByKind[kind]["accepted"]
	}
	if tokensIssued {
		c := verify.Check{N: 6, Name: "forged and replayed tokens never buy", Verdict: verify.Pass,
			Detail: fmt.Sprintf("%d forged, %d replayed clicks accepted", bad(KindForged), bad(KindReplay))}
		if bad(KindForged)+bad(KindReplay) > 0 {
			c.Verdict = verify.Fail
		}
		cs = append(cs, c)
	} else {
		cs = append(cs, verify.Check{N: 6, Name: "purchase tokens are issued", Verdict: verify.Fail,
			Detail: fmt.Sprintf("no token was issued (%s): the gateway is not the full edge", outcomeList(o.Tokens.Outcomes))})
	}
	if o.Late != nil && demand > stock {
		lateWon := o.Late.Outcomes["accepted"]
		c := verify.Check{N: 7, Name: "late arrivals find the sale sold out", Verdict: verify.Pass,
			Detail: fmt.Sprintf("%d of %d late clicks sold_out, %d accepted", o.Late.Outcomes["sold_out"], o.Late.Completed, lateWon)}
		if lateWon > 0 || o.Late.Outcomes["sold_out"] == 0 {
			c.Verdict = verify.Fail
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
	c := verify.Check{N: 8, Name: "no 5xx but 503 unavailable", Verdict: verify.Pass, Detail: fmt.Sprintf("%d other 5xx answers", fivexx)}
	if fivexx > 0 {
		c.Verdict = verify.Fail
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
func (d *Driver) RunBaseline(ctx context.Context, kind string, o Options) (*Outcome, error) {
	sale := saleID(kind)
	if err := d.CreateSale(ctx, sale, o.Stock, false); err != nil {
		return nil, err
	}
	people := o.Crowd.Cast(sale + "-")
	clicks := o.Crowd.Rush(people)
	reqs := make([]load.Request, len(clicks))
	for i, c := range clicks {
		h := header(c.User, c.IP)
		h.Set("Authorization", "Bearer "+d.Stack.AdminToken) // the baselines are admin-only
		reqs[i] = load.Request{Method: http.MethodPost, URL: d.Stack.Backend + "/baseline/" + kind + "/" + sale,
			Header: h, Kind: c.Kind, User: c.User}
	}
	out := &Outcome{Name: kind + " lock (DB)", Kind: kind, Sale: sale, Stock: o.Stock}
	acc := &acceptedSet{}
	cpu := d.cpuSnap()
	out.Rush = load.Execute(ctx, load.Run{Name: kind + " rush", Model: o.Model, Requests: reqs, Duration: o.Duration,
		Client: load.NewClient(o.Client, o.Model.Connections), OnResponse: acc.collect, Progress: o.Progress, WarmURL: d.Stack.Backend + "/healthz"})
	out.CPU = d.perRequest(cpu, out.Rush)
	out.Accepted, out.Winners = len(acc.list), acc.list
	out.CPUPerPurchase = d.perUnit(cpu, out.Accepted)
	out.Latency, out.Service = load.PercentilesOf(out.Rush.Latency), load.PercentilesOf(out.Rush.Service)
	// The baselines write synchronously: nothing to drain. Demand: only when the run was not cut
	// short can it be asked to sell out.
	demand := 0
	if out.Rush.Sent == out.Rush.Planned {
		demand = demandOf(out.Rush)
	}
	rep, err := verify.Verify(ctx, verify.Sources{Redis: d.Redis, PG: d.PG, Dead: verify.RabbitMgmt{URL: d.Stack.MgmtURL, Vhost: d.Stack.Vhost}},
		verify.Run{Sale: sale, Accepted: acc.list, Demand: demand, Uncertain: acc.uncertain})
	if err != nil {
		return out, err
	}
	out.Verify = &rep
	return out, nil
}

// RunCeiling sends the same number of requests to a Caddy site that only answers `respond`:
// the most this machine's Caddy and client can do, whatever the handler.
func (d *Driver) RunCeiling(ctx context.Context, o Options) (*Outcome, error) {
	if d.Stack.Ceiling == "" {
		return nil, fmt.Errorf("no ceiling site (give -ceiling)")
	}
	people := o.Crowd.Cast("ceil-")
	clicks := o.Crowd.Rush(people)
	reqs := make([]load.Request, len(clicks))
	for i, c := range clicks {
		reqs[i] = load.Request{Method: http.MethodPost, URL: d.Stack.Ceiling + "/", Header: header(c.User, c.IP), Kind: c.Kind, User: c.User}
	}
	name := "Caddy respond (ceiling)"
	if o.Label != "" {
		name += " (" + o.Label + ")"
	}
	out := &Outcome{Name: name, Kind: Ceiling}
	var win window // opened once the connections are warm
	done := o.around(Ceiling)
	out.Rush = load.Execute(ctx, load.Run{Name: "ceiling rush", Model: o.Model, Requests: reqs, Duration: o.Duration,
		Client: load.NewClient(o.Client, o.Model.Connections), Progress: o.Progress, WarmURL: d.Stack.Ceiling + "/", Warmed: func() { win = openWindow(ctx, d) }})
	done()
	win.close(ctx, d, out)
	out.Latency, out.Service = load.PercentilesOf(out.Rush.Latency), load.PercentilesOf(out.Rush.Service)
	return out, nil
}
