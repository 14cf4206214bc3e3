//go:build integration

package draw

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/backend/report"
	rep "github.com/seckilledge/seckill/contract/report"
	"github.com/seckilledge/seckill/internal/drandtest"
)

// slowest records the longest Redis command (and pipeline) as the client saw it: an upper
// bound of the server's time on it.
type slowest struct {
	mu   sync.Mutex
	max  time.Duration
	name string
}

func (s *slowest) note(d time.Duration, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d > s.max {
		s.max, s.name = d, name
	}
}

func (s *slowest) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *slowest) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t := time.Now()
		err := next(ctx, cmd)
		s.note(time.Since(t), cmd.Name())
		return err
	}
}
func (s *slowest) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t := time.Now()
		err := next(ctx, cmds)
		s.note(time.Since(t), "pipeline of "+strconv.Itoa(len(cmds)))
		return err
	}
}

// TestDrawTimeAtScale measures the draw job (close to wave 1) at SECKILL_DRAW_PERF entries over
// 8 variants (docs/draw.md, "The draw job", gives the number measured). Not a timed test: it
// runs only when asked, and reports. With SECKILL_DRAW_PERF_BEACON=1 the draw names a
// stand-in drand beacon (internal/drandtest, over HTTP on loopback) whose round is out: the
// difference with a run without is the beacon's cost (fetch, two BLS checks, its row). With
// SECKILL_DRAW_PERF_REPORT=1 it then publishes the sale's fairness report and reports its time.
func TestDrawTimeAtScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SECKILL_DRAW_PERF"))
	if n <= 0 {
		t.Skip("set SECKILL_DRAW_PERF=<entries> to measure the draw")
	}
	now := time.Now()
	variants := []string{"s36", "s37", "s38", "s39", "s40", "s41", "s42", "s43"}
	stocks := map[string]int{}
	for _, v := range variants {
		stocks[v] = 500
	}
	var f *fixture
	withBeacon := os.Getenv("SECKILL_DRAW_PERF_BEACON") == "1"
	if withBeacon {
		b := drandtest.New("perf", 3*time.Second, now.Add(-time.Hour))
		defer b.Close()
		// The clock stands just past the round after the close: the round is out at once.
		c := newClock(now.Add(time.Hour + 4*time.Second))
		b.Now = c.Now
		f = beaconFixture(t, stocks, now.Add(time.Hour), b, c)
	} else {
		f = newFixture(t, stocks, now.Add(time.Hour), now.Add(time.Hour), "10m")
	}
	f.enter(n, variants, 50)
	slow := &slowest{}
	f.rdb.AddHook(slow)
	var steps []string
	last := time.Now()
	f.runner.Stop = func(step string) error {
		steps = append(steps, fmt.Sprintf("%s %v", step, time.Since(last).Round(time.Millisecond)))
		last = time.Now()
		return nil
	}
	start := time.Now()
	if err := f.runner.Run(f.ctx, f.sale, time.Second); err != nil {
		t.Fatal(err)
	}
	total := time.Since(start)
	steps = append(steps, fmt.Sprintf("waves+reveal %v", time.Since(last).Round(time.Millisecond)))
	// The server's own account: SLOWLOG holds every call over slowlog-log-slower-than (10 ms
	// by default); the draw's calls name the sale's keys.
	var serverMax time.Duration
	logs, err := f.rdb.SlowLogGet(f.ctx, 1000).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if l.Time.Before(start.Add(-time.Second)) || !strings.Contains(strings.Join(l.Args, " "), f.sale) {
			continue
		}
		serverMax = max(serverMax, l.Duration)
	}
	t.Logf("slowest call of the draw in Redis's SLOWLOG: %v (0: none over the log's threshold)", serverMax)
	if serverMax > 50*time.Millisecond {
		t.Errorf("a Redis call of the draw took %v", serverMax)
	}
	t.Logf("draw of %d entries (%d live) over 8 variants, beacon %v: %v (%v); slowest Redis call %v (%s)",
		n, len(f.live), withBeacon, total.Round(time.Millisecond), steps, slow.max.Round(time.Microsecond), slow.name)
	if withBeacon {
		var sig *string
		if err := f.pool.QueryRow(f.ctx, `SELECT beacon_signature FROM draws WHERE sale_id = $1`, f.sale).Scan(&sig); err != nil || sig == nil {
			t.Fatalf("the draw did not use its beacon: %v", err)
		}
	}
	f.checkDrawn(stocks)
	if os.Getenv("SECKILL_DRAW_PERF_REPORT") == "1" {
		publishReport(t, f, int64(len(f.live)))
	}
}

// publishReport builds, signs and stores the drawn sale's fairness report (its end moved
// past by the publisher's clock) and reports how long it took; the report must hold every
// entry fixed at the close and pass the draw's check.
func publishReport(t *testing.T, f *fixture, entries int64) {
	t.Helper()
	key, err := report.ParseKey("demo")
	if err != nil {
		t.Fatal(err)
	}
	p := &report.Publisher{Pool: f.pool, Redis: f.rdb, Key: key, Now: func() time.Time { return time.Now().Add(3 * time.Hour) }}
	start := time.Now()
	if ok, err := p.Publish(f.ctx, f.sale); err != nil || !ok {
		t.Fatalf("publish the draw's report: %v %v", ok, err)
	}
	took := time.Since(start)
	var raw []byte
	var evidence int
	if err := f.pool.QueryRow(f.ctx, `SELECT report, length(evidence) FROM sale_reports WHERE sale_id = $1`, f.sale).Scan(&raw, &evidence); err != nil {
		t.Fatal(err)
	}
	var r rep.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Mode != "draw" || r.Draw == nil || r.Draw.Entries != entries || r.Checks.Draw == nil || r.Checks.Draw.Result != rep.Pass {
		t.Fatalf("the draw's report: mode %s, draw %+v, checks %+v", r.Mode, r.Draw, r.Checks)
	}
	t.Logf("the draw's fairness report of %d entries: built, checked, signed and stored in %v; evidence %d bytes, report %d bytes",
		entries, took.Round(time.Millisecond), evidence, len(raw))
}
