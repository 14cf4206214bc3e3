package draw

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
// runs only when asked, and reports.
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
	f := newFixture(t, stocks, now.Add(time.Hour), now.Add(time.Hour), "10m")
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
	t.Logf("draw of %d entries (%d live) over 8 variants: %v (%v); slowest Redis call %v (%s)",
		n, len(f.live), total.Round(time.Millisecond), steps, slow.max.Round(time.Microsecond), slow.name)
	f.checkDrawn(stocks)
}
