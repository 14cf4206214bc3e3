package draw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/bench/scenario/room"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/draw"
)

// The draw benchmark: what an entry costs against a room entry, side by
// side in one run; a draw of a million entries over eight sizes (its time, the longest Redis
// call, Redis memory per entry); the proofs and entry pages served at that size; and the
// fairness of a draw between fast and slow entrants through two gateways.

// DrawOptions shape the draw benchmark.
type DrawOptions struct {
	Entries  int           // entries of the big draw (default 1 000 000)
	Variants int           // sizes (default 8)
	Stock    int           // units per size (default 500)
	Conns    int           // connections of the entry-cost rounds (default 100)
	Duration time.Duration // each side of each entry-cost round (default 5 s)
	Rounds   int           // entry-cost rounds (default 3)
	Logf     func(format string, a ...any)
}

func (o *DrawOptions) defaults() {
	if o.Entries <= 0 {
		o.Entries = 1_000_000
	}
	if o.Variants <= 0 {
		o.Variants = 8
	}
	if o.Stock <= 0 {
		o.Stock = 500
	}
	if o.Conns <= 0 {
		o.Conns = 100
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// EntryRound is one alternation of the entry-cost comparison.
type EntryRound struct {
	Draw  room.PollSide `json:"draw"`
	Room  room.PollSide `json:"room"`
	Ratio float64       `json:"cpu_ratio"` // (gateway + Redis µs per draw entry) / (same per room entry)
}

// SlowCall is a Redis command the slow log kept during the draw.
type SlowCall struct {
	Command string  `json:"command"`
	Ms      float64 `json:"ms"`
}

// DrawResult is the benchmark's answer.
type DrawResult struct {
	Date    time.Time      `json:"date"`
	Machine driver.Machine `json:"machine"`
	Rounds  []EntryRound   `json:"entry_rounds"`
	// EntryRatio is the median of the rounds' ratios; DrawUs and RoomUs the medians of the
	// gateway + Redis CPU per entry on each side.
	EntryRatio, DrawUs, RoomUs float64
	Sale                       string         `json:"sale"`
	Entries                    int            `json:"entries"`
	FillSeconds                float64        `json:"fill_s"`
	BytesPerEntry              float64        `json:"redis_bytes_per_entry"`
	DrawSeconds                float64        `json:"draw_s"`
	SlowCalls                  []SlowCall     `json:"slow_calls"` // over 10 ms, longest first
	MaxCallMs                  float64        `json:"max_call_ms"`
	Winners                    map[string]int `json:"winners_by_variant"`
	Proof, Page                Percentiles    `json:"-"`
	ProofP50, ProofP99         float64
	PageP50, PageP99           float64
}

// Percentiles is a short alias for load's.
type Percentiles = load.Percentiles

func drawSpec(sale string, variants, stock int, opens, closes time.Time, claim string) map[string]any {
	vs := make([]map[string]any, variants)
	for i := range vs {
		vs[i] = map[string]any{"id": SizeName(i), "stock": stock}
	}
	return map[string]any{"id": sale, "variants": vs, "pay_within": "1h",
		"starts_at": closes.Format(time.RFC3339), "ends_at": closes.Add(2 * time.Hour).Format(time.RFC3339),
		"draw": map[string]any{"opens_at": opens.Format(time.RFC3339), "closes_at": closes.Format(time.RFC3339),
			"claim_within": claim, "difficulty": [2]int{0, 0}}}
}

// SizeName is the id of size i (s36, s37, ...: shoe sizes).
func SizeName(i int) string { return "s" + strconv.Itoa(36+i) }

// CreateDrawSale creates and preheats a draw sale open for entries from a minute ago for an
// hour (the benchmark closes it early with the admin API).
func CreateDrawSale(ctx context.Context, d *driver.Driver, sale string, variants, stock int, claim string) error {
	now := time.Now().UTC()
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales", drawSpec(sale, variants, stock, now.Add(-time.Minute), now.Add(time.Hour), claim)); err != nil {
		return fmt.Errorf("create draw sale: %w", err)
	}
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales/"+sale+"/preheat", nil); err != nil {
		return fmt.Errorf("preheat: %w", err)
	}
	return nil
}

// DrawStatus is the part of GET /admin/sales/{id}/draw the benchmark reads.
type DrawStatus struct {
	State            string         `json:"state"`
	Entries          int            `json:"entries"`
	EntriesByVariant map[string]int `json:"entries_by_variant"`
	Root             string         `json:"root"`
	Waves            []struct {
		Variant string `json:"variant"`
		Wave    int    `json:"wave"`
		Lo      int    `json:"lo"`
		Hi      int    `json:"hi"`
	} `json:"waves"`
}

// RunDraw runs the draw now and waits until it is drawn; it returns how long that took.
func RunDraw(ctx context.Context, d *driver.Driver, sale string) (time.Duration, *DrawStatus, error) {
	began := time.Now()
	if err := d.AdminJSON(ctx, http.MethodPost, "/admin/sales/"+sale+"/draw", nil, nil); err != nil {
		return 0, nil, err
	}
	for {
		var st DrawStatus
		if err := d.AdminJSON(ctx, http.MethodGet, "/admin/sales/"+sale+"/draw", nil, &st); err != nil {
			return 0, nil, err
		}
		if st.State == "drawn" || st.State == "done" {
			return time.Since(began), &st, nil
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Draw runs the benchmark.
func Draw(ctx context.Context, d *driver.Driver, o DrawOptions) (*DrawResult, error) {
	o.defaults()
	res := &DrawResult{Date: time.Now().UTC(), Machine: driver.ThisMachine()}
	if err := EntryCost(ctx, d, o, res); err != nil {
		return res, fmt.Errorf("entry cost: %w", err)
	}
	if err := BigDraw(ctx, d, o, res); err != nil {
		return res, fmt.Errorf("big draw: %w", err)
	}
	return res, nil
}

// EntryCost sends fresh entrants, as fast as answers come, to a draw sale's entry and a room
// sale's entry in turn, and compares the gateway's and Redis's CPU per entry.
func EntryCost(ctx context.Context, d *driver.Driver, o DrawOptions, res *DrawResult) error {
	o.defaults()
	dsale, rsale := driver.SaleID("draw-cost"), driver.SaleID("room-cost")
	if err := CreateDrawSale(ctx, d, dsale, o.Variants, o.Stock, "10m"); err != nil {
		return err
	}
	now := time.Now().UTC()
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales", map[string]any{"id": rsale, "stock": 1000,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
		"pay_within": "1h", "room": map[string]any{"rate": 0.001, "difficulty": [2]int{0, 0}, "max_waiters": 10_000_000}}); err != nil {
		return fmt.Errorf("create room sale: %w", err)
	}
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales/"+rsale+"/preheat", nil); err != nil {
		return fmt.Errorf("preheat room sale: %w", err)
	}
	n := int(o.Duration.Seconds()*20000) + 1
	var ratios, dus, rus []float64
	for round := range o.Rounds {
		dreqs, rreqs := make([]load.Request, n), make([]load.Request, n)
		for i := range n {
			du := fmt.Sprintf("dc%d-%07d", round, i)
			ru := fmt.Sprintf("rc%d-%07d", round, i)
			body := []byte(`{"variant":"` + SizeName(i%o.Variants) + `"}`)
			dreqs[i] = load.Request{Method: http.MethodPost, URL: d.Stack.Gateway + "/seckill/" + dsale + "/draw", Body: body,
				Header: http.Header{"X-User-Id": {du}, "Content-Type": {"application/json"}}, Kind: "enter", User: du}
			rreqs[i] = load.Request{Method: http.MethodPost, URL: d.Stack.Gateway + "/seckill/" + rsale + "/queue",
				Header: http.Header{"X-User-Id": {ru}}, Kind: "enter", User: ru}
		}
		side := func(name string, reqs []load.Request) room.PollSide {
			cpu := d.ReadCPU()
			r := load.Execute(ctx, load.Run{Name: name, Model: load.Model{Connections: o.Conns}, Requests: reqs, Duration: o.Duration,
				Client: load.NewClient("raw", o.Conns), WarmURL: d.Stack.Gateway + "/healthz"})
			p := load.PercentilesOf(r.Latency)
			return room.PollSide{Completed: r.Completed, Throughput: r.Throughput, P50ms: p.P50, P99ms: p.P99, CPU: d.PerRequest(cpu, r), Outcomes: r.Outcomes}
		}
		var er EntryRound
		er.Draw = side("draw-entry", dreqs)
		er.Room = side("room-entry", rreqs)
		dc, rc := er.Draw.CPU["gateway"]+er.Draw.CPU["redis"], er.Room.CPU["gateway"]+er.Room.CPU["redis"]
		if rc > 0 {
			er.Ratio = dc / rc
		}
		o.Logf("entry round %d: draw %.0f/s (%.0f µs gateway+redis, %v), room %.0f/s (%.0f µs, %v): %.2fx",
			round+1, er.Draw.Throughput, dc, er.Draw.Outcomes, er.Room.Throughput, rc, er.Room.Outcomes, er.Ratio)
		res.Rounds = append(res.Rounds, er)
		ratios, dus, rus = append(ratios, er.Ratio), append(dus, dc), append(rus, rc)
	}
	res.EntryRatio, res.DrawUs, res.RoomUs = driver.Median(ratios), driver.Median(dus), driver.Median(rus)
	return nil
}

// BigDraw fills a draw sale with o.Entries entries written as the entry script writes them
// (pipelined: a million HTTP entries would measure the client), runs the draw with Redis's
// slow log catching every call over 10 ms, and times proofs and entry pages at that size.
func BigDraw(ctx context.Context, d *driver.Driver, o DrawOptions, res *DrawResult) error {
	o.defaults()
	sale := driver.SaleID("draw-big")
	res.Sale, res.Entries = sale, o.Entries
	if err := CreateDrawSale(ctx, d, sale, o.Variants, o.Stock, "10m"); err != nil {
		return err
	}
	rdb := d.Redis
	// Settle the allocator's view before the first reading.
	before, err := usedMemory(ctx, rdb)
	if err != nil {
		return err
	}
	began := time.Now()
	if err := fillEntries(ctx, rdb, sale, o.Entries, o.Variants); err != nil {
		return err
	}
	res.FillSeconds = time.Since(began).Seconds()
	after, err := usedMemory(ctx, rdb)
	if err != nil {
		return err
	}
	res.BytesPerEntry = float64(after-before) / float64(o.Entries)
	o.Logf("big draw: %d entries in %.1fs, %.0f B per entry in Redis", o.Entries, res.FillSeconds, res.BytesPerEntry)

	old, _ := rdb.ConfigGet(ctx, "slowlog-log-slower-than").Result()
	_ = rdb.ConfigSet(ctx, "slowlog-log-slower-than", "10000").Err()
	_ = rdb.ConfigSet(ctx, "slowlog-max-len", "1024").Err()
	_ = rdb.SlowLogReset(ctx).Err()
	took, st, err := RunDraw(ctx, d, sale)
	if err != nil {
		return err
	}
	res.DrawSeconds = took.Seconds()
	if logs, err := rdb.SlowLogGet(ctx, -1).Result(); err == nil {
		for _, l := range logs {
			cmd := strings.Join(l.Args[:min(len(l.Args), 2)], " ")
			res.SlowCalls = append(res.SlowCalls, SlowCall{Command: cmd, Ms: float64(l.Duration.Microseconds()) / 1000})
		}
	}
	sort.Slice(res.SlowCalls, func(i, j int) bool { return res.SlowCalls[i].Ms > res.SlowCalls[j].Ms })
	if len(res.SlowCalls) > 0 {
		res.MaxCallMs = res.SlowCalls[0].Ms
	}
	if v, ok := old["slowlog-log-slower-than"]; ok {
		_ = rdb.ConfigSet(ctx, "slowlog-log-slower-than", v).Err()
	}
	res.Winners = map[string]int{}
	for _, w := range st.Waves {
		res.Winners[w.Variant] += w.Hi - w.Lo
	}
	o.Logf("big draw: drawn in %.1fs; %d Redis calls over 10 ms (longest %.1f ms); winners %v", res.DrawSeconds, len(res.SlowCalls), res.MaxCallMs, res.Winners)

	// Proofs and pages at a million: each must cost an indexed read, whatever the size.
	rng := rand.New(rand.NewPCG(1, 2))
	var proofMs, pageMs []float64
	cl := &http.Client{Timeout: 30 * time.Second}
	for i := 0; i < 200; i++ {
		u := fillUser(sale, rng.IntN(o.Entries))
		t0 := time.Now()
		if err := getJSON(ctx, cl, d.Stack.Gateway+"/seckill/"+sale+"/draw/proof", u, nil); err != nil {
			return fmt.Errorf("proof: %w", err)
		}
		proofMs = append(proofMs, float64(time.Since(t0).Microseconds())/1000)
	}
	for i := 0; i < 50; i++ {
		after := fmt.Sprintf(draw.EntryIDFormat, 1+rng.IntN(o.Entries))
		t0 := time.Now()
		if err := getJSON(ctx, cl, d.Stack.Gateway+"/seckill/"+sale+"/draw/entries?limit=1000&after="+after, "", nil); err != nil {
			return fmt.Errorf("entries: %w", err)
		}
		pageMs = append(pageMs, float64(time.Since(t0).Microseconds())/1000)
	}
	res.ProofP50, res.ProofP99 = quantile(proofMs, 0.5), quantile(proofMs, 0.99)
	res.PageP50, res.PageP99 = quantile(pageMs, 0.5), quantile(pageMs, 0.99)
	o.Logf("big draw: proof p50 %.1f ms p99 %.1f ms; page of 1000 p50 %.1f ms p99 %.1f ms", res.ProofP50, res.ProofP99, res.PageP50, res.PageP99)
	return nil
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// getJSON GETs url (with X-User-ID when user is set) and decodes a 200 answer into out.
func getJSON(ctx context.Context, cl *http.Client, url, user string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func fillUser(sale string, i int) string { return fmt.Sprintf("u%07d", i) }

// usedMemory is INFO memory's used_memory after a moment for lazy frees to settle.
func usedMemory(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	time.Sleep(200 * time.Millisecond)
	s, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO memory has no used_memory")
}

// fillEntries writes n entries as the entry script does (the entries hash, the counter per
// variant and the sequence), 5 000 per pipeline.
func fillEntries(ctx context.Context, rdb redis.UniversalClient, sale string, n, variants int) error {
	ek, dk := contract.DrawEntriesKey(sale), contract.DrawKey(sale)
	const batch = 5000
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	next := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for from := range next {
				pipe := rdb.Pipeline()
				counts := map[string]int64{}
				to := min(n, from+batch)
				args := make([]any, 0, 2*(to-from))
				for i := from; i < to; i++ {
					v := SizeName(i % variants)
					args = append(args, fillUser(sale, i), fmt.Sprintf(draw.EntryIDFormat, i+1)+":"+v)
					counts[v]++
				}
				pipe.HSet(ctx, ek, args...)
				for v, c := range counts {
					pipe.HIncrBy(ctx, dk, "n:"+v, c)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	go func() {
		defer close(next)
		for from := 0; from < n; from += batch {
			select {
			case next <- from:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return rdb.HSet(ctx, dk, "seq", n).Err()
}
