package soak

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/proc"
)

// SoakOptions say how long to keep the stack busy and how: sale after sale, each one a full
// edge run (tokens, rush, late arrivals, drain, verification) of Round.
type SoakOptions struct {
	Duration time.Duration // how long to keep starting rounds
	Interval time.Duration // how often to sample the processes (default 10 s)
	Round    crowd.Options // one sale; use open models (Round.Model.Rate, Round.TokenRate) for a steady load
	// Logf reports progress (nil: quiet).
	Logf func(format string, a ...any)
}

// SoakSample is one look at the processes during a soak.
type SoakSample struct {
	At                time.Duration `json:"at"`
	GatewayRSS        int64         `json:"gateway_rss_bytes"`
	GatewayGoroutines int           `json:"gateway_goroutines"`
	BackendRSS        int64         `json:"backend_rss_bytes"`
	BackendGoroutines int           `json:"backend_goroutines"`
	RedisMemory       int64         `json:"redis_used_memory_bytes"`
	Rounds            int           `json:"rounds"`
}

// SoakRound is what one sale of the soak did.
type SoakRound struct {
	Sale       string  `json:"sale"`
	Requests   int     `json:"requests"`
	Throughput float64 `json:"throughput"`
	Accepted   int     `json:"accepted"`
	P99ms      float64 `json:"p99_ms"`
	OK         bool    `json:"invariants_ok"`
	Failed     string  `json:"failed,omitempty"`
}

// SoakResult is the whole soak: the samples, the rounds, and the verdict on flatness.
type SoakResult struct {
	Duration time.Duration `json:"duration"`
	Samples  []SoakSample  `json:"samples"`
	Rounds   []SoakRound   `json:"rounds"`
	Growth   []SoakGrowth  `json:"growth"`
}

// SoakGrowth compares one series between the early part of the run (after warm-up) and its
// end: a leak shows as growth that the early part did not have.
type SoakGrowth struct {
	Series string  `json:"series"`
	Early  float64 `json:"early"` // median of the samples in [20 %, 40 %] of the run
	Late   float64 `json:"late"`  // median of the samples in the last 20 %
	Ratio  float64 `json:"ratio"`
	Limit  float64 `json:"limit"`
	Flat   bool    `json:"flat"`
}

// OK reports whether every round verified and every series stayed flat.
func (r *SoakResult) OK() bool {
	for _, x := range r.Rounds {
		if !x.OK {
			return false
		}
	}
	for _, g := range r.Growth {
		if !g.Flat {
			return false
		}
	}
	return len(r.Rounds) > 0 && len(r.Growth) > 0
}

// Soak runs sale after sale for o.Duration while sampling the gateway's and the backend's
// memory and goroutines, then judges whether they stayed flat.
func Soak(ctx context.Context, d *driver.Driver, o SoakOptions) (*SoakResult, error) {
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := &SoakResult{}
	start := time.Now()
	var mu sync.Mutex
	rounds := 0
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(o.Interval)
		defer t.Stop()
		for {
			mu.Lock()
			n := rounds
			mu.Unlock()
			s := sample(sampleCtx, d)
			s.At, s.Rounds = time.Since(start), n
			mu.Lock()
			res.Samples = append(res.Samples, s)
			mu.Unlock()
			logf("t=%-5s gateway %s, %d goroutines; backend %s, %d goroutines; redis %s; %d rounds",
				s.At.Round(time.Second), mib(s.GatewayRSS), s.GatewayGoroutines, mib(s.BackendRSS), s.BackendGoroutines, mib(s.RedisMemory), n)
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
		}
	}()

	var runErr error
	for time.Since(start) < o.Duration && ctx.Err() == nil {
		out, err := crowd.RunEdge(ctx, d, o.Round)
		if err != nil {
			runErr = err
			break
		}
		r := SoakRound{Sale: out.Sale, Requests: out.Rush.Completed, Throughput: out.Rush.Throughput,
			Accepted: out.Accepted, P99ms: out.Latency.P99, OK: out.OK()}
		if !r.OK {
			var failed []string
			if out.Verify != nil {
				for _, c := range out.Verify.Checks {
					if c.Verdict != invariants.Pass {
						failed = append(failed, c.Name)
					}
				}
			}
			for _, c := range out.Checks {
				if c.Verdict != invariants.Pass {
					failed = append(failed, c.Name)
				}
			}
			r.Failed = strings.Join(failed, "; ")
		}
		mu.Lock()
		rounds++
		res.Rounds = append(res.Rounds, r)
		mu.Unlock()
		logf("round %d: %s %d requests at %.0f/s, %d accepted, p99 %.1f ms, invariants %v",
			len(res.Rounds), r.Sale, r.Requests, r.Throughput, r.Accepted, r.P99ms, map[bool]string{true: "PASS", false: "FAIL " + r.Failed}[r.OK])
	}
	stopSampling()
	wg.Wait()
	// One last look once the stack is idle again.
	final := sample(ctx, d)
	final.At, final.Rounds = time.Since(start), rounds
	res.Samples = append(res.Samples, final)
	res.Duration = time.Since(start)
	res.Growth = soakGrowth(res.Samples)
	return res, runErr
}

// Growth limits: RSS may move with the Go heap's cycle and the allocator keeping pages, so
// a quarter more late than early is still flat; goroutines track connections and in-flight
// requests, so a fixed margin is added to the ratio.
const (
	soakRSSLimit       = 1.25
	soakGoroutineLimit = 1.25
	soakGoroutineSlack = 50
)

func soakGrowth(samples []SoakSample) []SoakGrowth {
	n := len(samples)
	if n < 5 {
		return nil
	}
	early := samples[n*2/10 : max(n*4/10, n*2/10+1)]
	late := samples[n*8/10:]
	series := []struct {
		name  string
		get   func(SoakSample) float64
		limit float64
		slack float64
	}{
		{"gateway RSS (MiB)", func(s SoakSample) float64 { return float64(s.GatewayRSS) / (1 << 20) }, soakRSSLimit, 0},
		{"gateway goroutines", func(s SoakSample) float64 { return float64(s.GatewayGoroutines) }, soakGoroutineLimit, soakGoroutineSlack},
		{"backend RSS (MiB)", func(s SoakSample) float64 { return float64(s.BackendRSS) / (1 << 20) }, soakRSSLimit, 0},
		{"backend goroutines", func(s SoakSample) float64 { return float64(s.BackendGoroutines) }, soakGoroutineLimit, soakGoroutineSlack},
	}
	var out []SoakGrowth
	for _, x := range series {
		e, l := medianOf(early, x.get), medianOf(late, x.get)
		if e == 0 && l == 0 {
			continue // not measured (no pid, no metrics endpoint)
		}
		g := SoakGrowth{Series: x.name, Early: e, Late: l, Limit: x.limit}
		if e > 0 {
			g.Ratio = l / e
		}
		g.Flat = l <= e*x.limit+x.slack
		out = append(out, g)
	}
	return out
}

func medianOf(s []SoakSample, get func(SoakSample) float64) float64 {
	v := make([]float64, len(s))
	for i, x := range s {
		v[i] = get(x)
	}
	sort.Float64s(v)
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}

func sample(ctx context.Context, d *driver.Driver) SoakSample {
	s := SoakSample{GatewayRSS: rssBytes(d.Stack.GatewayPID), BackendRSS: rssBytes(d.Stack.BackendPID)}
	if d.Stack.Admin != "" {
		s.GatewayGoroutines = int(promGauge(ctx, d.Stack.Admin+"/metrics", "go_goroutines"))
	}
	if d.Stack.Backend != "" {
		s.BackendGoroutines = int(promGauge(ctx, d.Stack.Backend+"/metrics", "go_goroutines"))
	}
	if info, err := d.Redis.Info(ctx, "memory").Result(); err == nil {
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
				s.RedisMemory, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return s
}

// rssBytes is a process's resident memory now (0 when unknown).
func rssBytes(pid int) int64 { return proc.RSS(pid) }

// promGauge reads one unlabelled sample from a Prometheus text endpoint (0 when absent).
func promGauge(ctx context.Context, url, name string) float64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	return parseGauge(resp.Body, name)
}

// parseGauge is the value of the unlabelled sample called name (gauge, counter or untyped) in
// a Prometheus text exposition, 0 when absent or unreadable.
func parseGauge(r io.Reader, name string) float64 {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return 0
	}
	f, ok := families[name]
	if !ok {
		return 0
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) > 0 {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Untyped != nil:
			return m.GetUntyped().GetValue()
		}
	}
	return 0
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// SoakMarkdown writes the soak's samples, rounds and verdict as Markdown tables.
func SoakMarkdown(w io.Writer, r *SoakResult) {
	fmt.Fprintf(w, "| t | gateway RSS | gateway goroutines | backend RSS | backend goroutines | Redis used_memory | sales done |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Samples {
		fmt.Fprintf(w, "| %s | %s | %d | %s | %d | %s | %d |\n", s.At.Round(time.Second), mib(s.GatewayRSS), s.GatewayGoroutines,
			mib(s.BackendRSS), s.BackendGoroutines, mib(s.RedisMemory), s.Rounds)
	}
	fmt.Fprintf(w, "\n| series | early (20-40 %%) | late (last 20 %%) | late/early | flat if | verdict |\n|---|---:|---:|---:|---|---|\n")
	for _, g := range r.Growth {
		limit := fmt.Sprintf("<= %.2fx", g.Limit)
		if strings.Contains(g.Series, "goroutines") {
			limit += fmt.Sprintf(" + %d", soakGoroutineSlack)
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.2fx | %s | %s |\n", g.Series, g.Early, g.Late, g.Ratio, limit, map[bool]string{true: "PASS", false: "FAIL"}[g.Flat])
	}
	total, ok := 0, 0
	acc := 0
	for _, x := range r.Rounds {
		total++
		acc += x.Accepted
		if x.OK {
			ok++
		}
	}
	fmt.Fprintf(w, "\n%d sales in %s, %d accepted orders; every invariant PASSed in %d of %d sales.\n", total, r.Duration.Round(time.Second), acc, ok, total)
}
