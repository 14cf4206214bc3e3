package room

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/internal/invariants"
)

// The last units of a sale with half its waiters absent (admissions go to people
// who are there): a room sale with a pre-queue of Waiters, Units units and a session of
// Session; half the waiters enter and never poll again (closed tabs), the other half poll at
// the refresh_s they are told and buy when admitted. The run records when each unit sold and
// compares the time the last 10 % of the units took with the time the first 10 % took (target:
// at most twice). Without the presence rule the room keeps admitting absent waiters, whose
// admissions hold the last units until they lapse; the gateway's presence_window setting
// switches the rule (the caller runs one stack per setting).

// LastUnitsOptions shape the run.
type LastUnitsOptions struct {
	Waiters     int           // pre-queued waiters (default 1 200)
	Units       int           // the sale's stock (default 120)
	Session     time.Duration // an admission's life unused (default 20 s)
	Rate        float64       // the room's admissions per second (default 10)
	AbsentShare float64       // waiters who never poll after entering (default 0.5)
	// FastShare of the present waiters are fast clients (default 0): they
	// poll, take tokens and click Buy as fast as answers come, so the gateway's throttle
	// refuses them and its user zone bans them; an admission given to one is passed on
	// (ban_zones, or as a no-show once it takes no token in time).
	FastShare float64
	Lead      time.Duration // the sale starts this long after its creation (default 10 s)
	// Cap is how long after the start the run stops at the latest (default 5 min: without the
	// presence rule the last units wait for one lapse after another, a session each).
	Cap time.Duration
	// ThinkMin and ThinkMax bound a present waiter's pause before buying (default 200-800 ms).
	ThinkMin, ThinkMax time.Duration
	DrainTimeout       time.Duration // default 30 s
	Seed               uint64
	Logf               func(format string, a ...any)
}

func (o *LastUnitsOptions) defaults() {
	if o.Waiters <= 0 {
		o.Waiters = 1200
	}
	if o.Units <= 0 {
		o.Units = 120
	}
	if o.Session <= 0 {
		o.Session = 20 * time.Second
	}
	if o.Rate <= 0 {
		o.Rate = 10
	}
	if o.AbsentShare < 0 || o.AbsentShare >= 1 {
		o.AbsentShare = 0.5
	}
	if o.FastShare < 0 || o.FastShare > 1 {
		o.FastShare = 0
	}
	if o.Lead <= 0 {
		o.Lead = 10 * time.Second
	}
	if o.Cap <= 0 {
		o.Cap = 5 * time.Minute
	}
	if o.ThinkMin <= 0 {
		o.ThinkMin = 200 * time.Millisecond
	}
	if o.ThinkMax < o.ThinkMin {
		o.ThinkMax = 800 * time.Millisecond
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// LastUnitsResult is one run, under one presence setting.
type LastUnitsResult struct {
	Date     time.Time      `json:"date"`
	Machine  driver.Machine `json:"machine"`
	LoadAvg  string         `json:"loadavg"`
	Variant  string         `json:"variant"` // the presence setting, as the caller names it
	Caddy    string         `json:"caddy"`   // the lines the gateway's seckill_room block got
	Sale     string         `json:"sale"`
	Waiters  int            `json:"waiters"`
	Absent   int            `json:"absent"`
	Fast     int            `json:"fast"` // present waiters who are fast clients
	Units    int            `json:"units"`
	Rate     float64        `json:"rate"`
	SessionS float64        `json:"session_s"`
	Sold     int            `json:"sold"`
	// SoldAtS is when each unit sold (the 202), in seconds from the start, in order.
	SoldAtS []float64 `json:"sold_at_s"`
	// FirstS is the time from the start to the sale of the first 10 % of the units; LastS the
	// time from the sale of the unit before the last 10 % to the last unit's (the run's cap
	// when they did not all sell: a lower bound then); Ratio LastS / FirstS.
	FirstS  float64 `json:"first_10pct_s"`
	LastS   float64 `json:"last_10pct_s"`
	Ratio   float64 `json:"ratio"`
	AllSold bool    `json:"all_sold"`
	// Room is the room hash's counters at the end (admitted, lapsed, skipped, ...).
	Room       map[string]int64   `json:"room"`
	Outcomes   map[string]int     `json:"outcomes"`
	Verify     *invariants.Report `json:"verify,omitempty"`
	RoomChecks string             `json:"room_checks"`
	AllChecks  string             `json:"all_checks"`
}

// RoomLastUnits runs the scenario once on the driver's stack.
func RoomLastUnits(ctx context.Context, d *driver.Driver, o LastUnitsOptions, variant, caddyLines string) (*LastUnitsResult, error) {
	o.defaults()
	sale := driver.SaleID("room-last")
	start := time.Now().Add(o.Lead).Truncate(time.Second).Add(time.Second)
	res := &LastUnitsResult{Date: time.Now().UTC(), Machine: driver.ThisMachine(), LoadAvg: driver.LoadAvg(), Variant: variant, Caddy: caddyLines,
		Sale: sale, Waiters: o.Waiters, Units: o.Units, Rate: o.Rate, SessionS: o.Session.Seconds()}
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales", map[string]any{"id": sale, "stock": o.Units,
		"starts_at": start.UTC().Format(time.RFC3339), "ends_at": start.Add(time.Hour).UTC().Format(time.RFC3339), "pay_within": "1h",
		"room": map[string]any{"rate": o.Rate, "session": o.Session.String(), "difficulty": [2]int{0, 0}}}); err != nil {
		return nil, fmt.Errorf("create sale: %w", err)
	}
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales/"+sale+"/preheat", nil); err != nil {
		return nil, fmt.Errorf("preheat: %w", err)
	}
	// Everyone enters the pre-queue at once, well before the start.
	tickets, err := enterAll(ctx, d, sale, o.Waiters, min(o.Waiters, 100))
	if err != nil {
		return res, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 10))
	rng.Shuffle(len(tickets), func(i, j int) { tickets[i], tickets[j] = tickets[j], tickets[i] })
	res.Absent = int(float64(len(tickets))*o.AbsentShare + 0.5)
	present := tickets[res.Absent:]
	res.Fast = int(float64(len(present))*o.FastShare + 0.5)
	o.Logf("last units (%s): sale %s, %d waiters (%d absent, %d fast), %d units, rate %g/s, session %s, start in %s",
		variant, sale, len(tickets), res.Absent, res.Fast, o.Units, o.Rate, o.Session, time.Until(start).Round(time.Millisecond))

	fo := FairnessOptions{ThinkMin: o.ThinkMin, ThinkMax: o.ThinkMax, Seed: o.Seed}
	fo.defaults()
	run := &fairRun{d: d, o: fo, sale: sale, start: start, outcomes: map[string]int{}, won: map[string]bool{}, admitted: map[string]bool{},
		acc: &driver.Winners{Drain: invariants.NewDrainWatcher(ctx, d.PG)}}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	defer hc.CloseIdleConnections()
	rctx, cancel := context.WithDeadline(ctx, start.Add(o.Cap))
	defer cancel()
	var wg sync.WaitGroup
	for i, tk := range present {
		c := &fairClient{user: tk[0], ticket: tk[1], http: hc, rng: rand.New(rand.NewPCG(o.Seed, uint64(i)+1000)), keepTicket: true,
			fast: i < res.Fast}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A present waiter's page polls from the start at the refresh_s it is told (before
			// the start the pre-queue's polls are answered from memory and keep him present).
			if !sleepCtx(rctx, time.Until(start)+time.Duration(c.rng.Int64N(int64(time.Second)))) {
				return
			}
			run.withRoom(rctx, c)
		}()
	}
	// The units sold are counted as the 202s come; the run ends when all have sold.
	go func() {
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-tk.C:
			}
			n := run.acc.Len()
			if n >= o.Units {
				cancel()
				return
			}
		}
	}()
	wg.Wait()
	cancel()
	var soldAt []time.Time
	for _, a := range run.acc.Snapshot() {
		soldAt = append(soldAt, a.At)
	}
	sort.Slice(soldAt, func(i, j int) bool { return soldAt[i].Before(soldAt[j]) })
	for _, t := range soldAt {
		res.SoldAtS = append(res.SoldAtS, t.Sub(start).Seconds())
	}
	res.Sold = len(soldAt)
	res.AllSold = res.Sold >= o.Units
	res.FirstS, res.LastS, res.Ratio = tenPercents(res.SoldAtS, o.Units, o.Cap.Seconds())
	res.Outcomes = run.outcomes
	res.Room = roomCounters(ctx, d, sale)
	o.Logf("last units (%s): %d of %d sold; first 10 %% in %.1f s, last 10 %% in %.1f s (%.2fx); room %v",
		variant, res.Sold, o.Units, res.FirstS, res.LastS, res.Ratio, res.Room)

	// The present waiters all want a unit, but a run the cap stopped before the last units
	// sold did not let them: its unsold units are this run's finding (the table's "last
	// 10 %"), not the undersell invariant 1 looks for, so the demand is then what sold.
	demand := len(present)
	if !res.AllSold {
		demand = res.Sold
	}
	if _, err := run.acc.Drain.Wait(ctx, o.DrainTimeout); err != nil {
		return res, fmt.Errorf("drain: %w", err)
	}
	if _, err := invariants.WaitSettled(ctx, d.PG, d.Redis, sale, o.DrainTimeout); err != nil {
		return res, fmt.Errorf("settle: %w", err)
	}
	rep, err := invariants.Verify(ctx, invariants.Sources{Redis: d.Redis, PG: d.PG,
		Dead:   invariants.RabbitMgmt{URL: d.Stack.MgmtURL, Vhost: d.Stack.Vhost},
		Orders: invariants.HTTPOrders(d.Stack.Gateway, nil)},
		invariants.Run{Sale: sale, Accepted: run.acc.Accepted, Demand: demand, CheckRedis: true, Uncertain: run.acc.Uncertain})
	if err != nil {
		return res, err
	}
	res.Verify = &rep
	res.RoomChecks, res.AllChecks = checksVerdict(rep, 6, 9), checksVerdict(rep, 0, 1<<30)
	res.LoadAvg += " / " + driver.LoadAvg()
	return res, nil
}

// tenPercents is, over sale times (seconds from the start, sorted) of a sale of units, the
// time the first 10 % of the units took from the start, the time the last 10 % took from the
// sale before them to the last one (up to capS when they did not all sell: a lower bound), and
// their ratio.
func tenPercents(at []float64, units int, capS float64) (first, last, ratio float64) {
	k := max(units/10, 1)
	if len(at) >= k {
		first = at[k-1]
	} else {
		first = capS
	}
	// The last 10 % are units units-k+1 .. units; they start after unit units-k.
	from := 0.0
	if i := units - k - 1; i >= 0 {
		if i < len(at) {
			from = at[i]
		} else {
			from = capS
		}
	}
	end := capS
	if len(at) >= units {
		end = at[units-1]
	}
	last = max(end-from, 0)
	if first > 0 {
		ratio = last / first
	}
	return first, last, ratio
}
