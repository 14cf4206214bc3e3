package crowd

import (
	"context"
	"fmt"
	"net/http"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/bench/nginxgate"
	"github.com/seckilledge/seckill/internal/invariants"
)

// The peer's contestants: the nginx + Lua gate a shop would write by hand (bench/nginxgate),
// and nginx's own `return 200` (its floor, as `respond` is Caddy's).
const (
	Peer       = "peer"
	PeerReturn = "nginx-return"
)

// PeerProcess is the name under which the peer's nginx is counted in Stack.Others.
const PeerProcess = "nginx"

// PeerTarget is where the peer answers: its base URL (the server started by nginxgate.Start; its
// master's pid must be in Stack.Others[PeerProcess] for its CPU to be counted and pinned).
type PeerTarget struct {
	URL string
}

// RunPeer sends the crowd's clicks (the edge's rush, the same mix) to the peer: a sale of
// o.Stock units in the peer's keys on the stack's Redis, one EVALSHA per click. No tokens are
// fetched (the peer has none): a replayed or forged click buys as the user who sends it. Its
// CPU per request names nginx "gateway" (what the peer's gateway spent) and the idle Caddy
// "caddy"; its checks are the peer's own (nothing oversold, one unit per user, Redis agrees
// with the 202s): it writes no Postgres and no RabbitMQ.
func RunPeer(ctx context.Context, d *driver.Driver, p PeerTarget, o Options) (*Outcome, error) {
	sale := driver.SaleID("peer")
	if err := nginxgate.Prepare(ctx, d.Redis, sale, o.Stock); err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	people := o.Crowd.Cast(sale + "-")
	clicks := o.Crowd.Rush(people)
	reqs := make([]load.Request, len(clicks))
	for i, c := range clicks {
		reqs[i] = load.Request{Method: http.MethodPost, URL: p.URL + nginxgate.BuyPath(sale), Header: driver.Header(c.User, c.IP), Kind: c.Kind, User: c.User}
	}
	name := "nginx + lua gate (peer)"
	if o.Label != "" {
		name += " (" + o.Label + ")"
	}
	out := &Outcome{Name: name, Kind: Peer, Sale: sale, Stock: o.Stock}
	acc := &driver.Winners{}
	var win driver.Window // opened once the connections are warm
	done := o.around(Peer)
	out.Rush = load.Execute(ctx, load.Run{Name: "peer rush", Model: o.Model, Requests: reqs, Duration: o.Duration,
		Client: load.NewClient(o.Client, o.Model.Connections), OnResponse: acc.Collect, Progress: o.Progress, WarmURL: p.URL + "/healthz", Warmed: func() { win = driver.OpenWindow(ctx, d) }})
	done()
	out.CPU, out.RedisCommands, out.Breakdown = win.Close(ctx, d, out.Rush)
	peerCPU(out.CPU)
	out.Accepted = len(acc.Accepted)
	out.Latency, out.Service = load.PercentilesOf(out.Rush.Latency), load.PercentilesOf(out.Rush.Service)
	out.Breakdown.GatewayMallocsPerRequest, out.Breakdown.GatewayGCs, out.Breakdown.GatewayGCPause = -1, -1, -1 // Caddy's, not the peer's
	checks, err := peerChecks(ctx, d, sale, o.Stock, acc.Accepted)
	if err != nil {
		return out, err
	}
	out.Checks = checks
	return out, nil
}

// peerCPU renames a peer run's CPU figures: nginx is its gateway, Caddy sat idle.
func peerCPU(m map[string]float64) {
	if m == nil {
		return
	}
	if c, ok := m["gateway"]; ok {
		m["caddy"] = c
	}
	if n, ok := m[PeerProcess]; ok {
		m["gateway"] = n
		delete(m, PeerProcess)
	} else {
		delete(m, "gateway") // never report Caddy's idle time as the peer's
	}
}

// peerChecks are the peer's invariants, read back from Redis: each unit sold once (the 202s
// number the units gone, and never more than the stock), each user at most once, and the
// buyers hash and outbox stream hold exactly the 202s.
func peerChecks(ctx context.Context, d *driver.Driver, sale string, stock int, won []invariants.Accepted) ([]invariants.Check, error) {
	kStock, kBuyers, kOutbox := nginxgate.Keys(sale)
	left, err := d.Redis.Get(ctx, kStock).Int()
	if err != nil {
		return nil, fmt.Errorf("peer stock: %w", err)
	}
	buyers, err := d.Redis.HGetAll(ctx, kBuyers).Result()
	if err != nil {
		return nil, fmt.Errorf("peer buyers: %w", err)
	}
	outbox, err := d.Redis.XLen(ctx, kOutbox).Result()
	if err != nil {
		return nil, fmt.Errorf("peer outbox: %w", err)
	}
	return judgePeer(stock, left, buyers, int(outbox), won), nil
}

// judgePeer is peerChecks without Redis.
func judgePeer(stock, left int, buyers map[string]string, outbox int, won []invariants.Accepted) []invariants.Check {
	users := map[string]string{}
	twice := 0
	for _, w := range won {
		if _, ok := users[w.UserID]; ok {
			twice++
		}
		users[w.UserID] = w.OrderID
	}
	sold := stock - left
	c1 := invariants.Check{N: 1, Name: "peer: nothing oversold", Verdict: invariants.Pass,
		Detail: fmt.Sprintf("%d units of %d gone, %d left, %d accepted answers", sold, stock, left, len(won))}
	if left < 0 || sold != len(won) || len(won) > stock {
		c1.Verdict = invariants.Fail
	}
	c2 := invariants.Check{N: 2, Name: "peer: one unit per user", Verdict: invariants.Pass, Detail: fmt.Sprintf("%d users won twice", twice)}
	if twice > 0 {
		c2.Verdict = invariants.Fail
	}
	mismatch := 0
	for u, o := range users {
		if buyers[u] != o {
			mismatch++
		}
	}
	c3 := invariants.Check{N: 3, Name: "peer: Redis holds what the buyers were told", Verdict: invariants.Pass,
		Detail: fmt.Sprintf("buyers hash %d, outbox %d, 202s %d, %d buyers with another order", len(buyers), outbox, len(users), mismatch)}
	if mismatch > 0 || len(buyers) != len(users) || outbox != len(users) {
		c3.Verdict = invariants.Fail
	}
	return []invariants.Check{c1, c2, c3}
}

// RunPeerReturn is the ceiling's crowd sent to nginx's `return 200` (no Lua, no Redis).
func RunPeerReturn(ctx context.Context, d *driver.Driver, p PeerTarget, o Options) (*Outcome, error) {
	people := o.Crowd.Cast("ngxret-")
	clicks := o.Crowd.Rush(people)
	reqs := make([]load.Request, len(clicks))
	for i, c := range clicks {
		reqs[i] = load.Request{Method: http.MethodPost, URL: p.URL + nginxgate.ReturnPath, Header: driver.Header(c.User, c.IP), Kind: c.Kind, User: c.User}
	}
	out := &Outcome{Name: "nginx return 200", Kind: PeerReturn}
	var win driver.Window // opened once the connections are warm
	done := o.around(PeerReturn)
	out.Rush = load.Execute(ctx, load.Run{Name: "nginx return rush", Model: o.Model, Requests: reqs, Duration: o.Duration,
		Client: load.NewClient(o.Client, o.Model.Connections), Progress: o.Progress, WarmURL: p.URL + "/healthz", Warmed: func() { win = driver.OpenWindow(ctx, d) }})
	done()
	out.CPU, out.RedisCommands, out.Breakdown = win.Close(ctx, d, out.Rush)
	peerCPU(out.CPU)
	out.Breakdown.GatewayMallocsPerRequest, out.Breakdown.GatewayGCs, out.Breakdown.GatewayGCPause = -1, -1, -1
	out.Latency, out.Service = load.PercentilesOf(out.Rush.Latency), load.PercentilesOf(out.Rush.Service)
	return out, nil
}
