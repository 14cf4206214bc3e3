package draw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/internal/invariants"
)

// Fairness of a draw: a crowd enters through two gateways, a fast half
// first (bots at the opening second, many connections) and a slow half after it (people
// arriving later, few connections); then the draw runs. Arrival must not matter: both halves
// win at the same rate. The run's whole-system invariants and the draw's are checked after.

// DrawFairOptions shape one run.
type DrawFairOptions struct {
	Entrants int // default 100 000
	Variants int // default 8
	Stock    int // units per size (default 1 000)
	Seed     uint64
	Logf     func(format string, a ...any)
}

// DrawFairResult is one run.
type DrawFairResult struct {
	Sale               string         `json:"sale"`
	Entrants           int            `json:"entrants"`
	Entered            [2]int         `json:"entered"` // fast, slow: answered 200
	Won                [2]int         `json:"won"`
	Outcomes           map[string]int `json:"outcomes"`
	EntrySeconds       float64        `json:"entry_s"`
	DrawSeconds        float64        `json:"draw_s"`
	FastRate, SlowRate float64
	Ratio              float64 `json:"slow_over_fast"`
}

// DrawFairness runs one fairness draw.
func DrawFairness(ctx context.Context, d *driver.Driver, o DrawFairOptions) (*DrawFairResult, error) {
	if o.Entrants <= 0 {
		o.Entrants = 100_000
	}
	if o.Variants <= 0 {
		o.Variants = 8
	}
	if o.Stock <= 0 {
		o.Stock = 1000
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	sale := driver.SaleID("draw-fair")
	res := &DrawFairResult{Sale: sale, Entrants: o.Entrants, Outcomes: map[string]int{}}
	if err := CreateDrawSale(ctx, d, sale, o.Variants, o.Stock, "10m"); err != nil {
		return nil, err
	}
	gws := d.Stack.AllGateways()
	half := o.Entrants / 2
	var mu sync.Mutex
	fast := map[string]bool{}
	entered := map[string]bool{}
	crowd := func(name string, from, to, conns int, isFast bool) {
		reqs := make([]load.Request, 0, to-from)
		for i := from; i < to; i++ {
			u := fmt.Sprintf("%s-%s%06d", sale, name, i)
			// The size depends on the user's number alone, the same way in both halves.
			body := []byte(`{"variant":"` + SizeName((i*7+int(o.Seed))%o.Variants) + `"}`)
			reqs = append(reqs, load.Request{Method: http.MethodPost, URL: gws[i%len(gws)] + "/seckill/" + sale + "/draw", Body: body,
				Header: http.Header{"X-User-Id": {u}, "Content-Type": {"application/json"}}, Kind: "enter", User: u})
			fast[u] = isFast
		}
		r := load.Execute(ctx, load.Run{Name: name, Model: load.Model{Connections: conns}, Requests: reqs, Client: load.NewClient("nethttp", conns),
			OnResponse: func(req load.Request, resp load.Response) {
				var b struct {
					State string `json:"state"`
				}
				if resp.Status == http.StatusOK && json.Unmarshal(resp.Body, &b) == nil && b.State == "entered" {
					mu.Lock()
					entered[req.User] = true
					mu.Unlock()
				}
			}})
		mu.Lock()
		for k, v := range r.Outcomes {
			res.Outcomes[name+":"+k] += v
		}
		mu.Unlock()
	}
	began := time.Now()
	crowd("fast", 0, half, 200, true)
	crowd("slow", half, o.Entrants, 20, false)
	res.EntrySeconds = time.Since(began).Seconds()
	for u := range entered {
		if fast[u] {
			res.Entered[0]++
		} else {
			res.Entered[1]++
		}
	}
	o.Logf("draw fairness: %d fast and %d slow entrants entered in %.1fs (%v)", res.Entered[0], res.Entered[1], res.EntrySeconds, res.Outcomes)
	took, _, err := RunDraw(ctx, d, sale)
	if err != nil {
		return nil, err
	}
	res.DrawSeconds = took.Seconds()
	rows, err := d.PG.Query(ctx, `SELECT e.user_id FROM draw_entries e JOIN draw_waves w
		ON w.sale_id = e.sale_id AND w.variant = e.variant AND w.wave = 1 AND e.pos >= w.lo AND e.pos < w.hi
		WHERE e.sale_id = $1`, sale)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			rows.Close()
			return nil, err
		}
		if fast[u] {
			res.Won[0]++
		} else {
			res.Won[1]++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if res.Entered[0] > 0 && res.Entered[1] > 0 {
		res.FastRate = float64(res.Won[0]) / float64(res.Entered[0])
		res.SlowRate = float64(res.Won[1]) / float64(res.Entered[1])
		if res.FastRate > 0 {
			res.Ratio = res.SlowRate / res.FastRate
		}
	}
	o.Logf("draw fairness: won fast %d (%.4f), slow %d (%.4f): slow/fast %.3f; draw %.1fs", res.Won[0], res.FastRate, res.Won[1], res.SlowRate, res.Ratio, res.DrawSeconds)
	return res, nil
}

// VerifySale checks every invariant of a sale once it has settled: the whole-system ones and,
// for a draw sale, the draw's. accepted are the 202s the run was answered (none for a run that
// only entered a draw).
func VerifySale(ctx context.Context, d *driver.Driver, sale string, accepted ...invariants.Accepted) invariants.Report {
	if _, err := invariants.WaitSettled(ctx, d.PG, d.Redis, sale, 60*time.Second); err != nil {
		return invariants.Report{Sale: sale, Checks: []invariants.Check{{Name: "settle", Verdict: invariants.Fail, Detail: err.Error()}}}
	}
	rep, err := invariants.Verify(ctx, invariants.Sources{Redis: d.Redis, PG: d.PG,
		Dead: invariants.RabbitMgmt{URL: d.Stack.MgmtURL, Vhost: d.Stack.Vhost}}, invariants.Run{Sale: sale, Accepted: accepted, CheckRedis: true})
	if err != nil {
		return invariants.Report{Sale: sale, Checks: []invariants.Check{{Name: "verify", Verdict: invariants.Fail, Detail: err.Error()}}}
	}
	return rep
}
