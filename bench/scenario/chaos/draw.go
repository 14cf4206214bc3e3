package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/scenario/draw"
	"github.com/seckilledge/seckill/internal/invariants"
)

// The draw row of the chaos table: entrants enter a draw sale through both
// gateways, some change their size and some withdraw, while a gateway is killed with -9 and
// Redis is stopped and started again. An entry answered 200 is never lost: after the draw, the
// entries fixed at the close are exactly the last state each entrant was answered (entered with
// that size and entry id, or withdrawn); an entrant whose last request got no answer may be
// either. Then the draw's invariants (internal/invariants) run on the sale.

// drawEntrant is what one entrant was last told.
type drawEntrant struct {
	mu      sync.Mutex
	entryID string // the id every 200 named (they must agree)
	state   string // "entered" | "withdrawn" | "" (never answered 200)
	variant string
	unsure  bool // the last request got no answer: its effect is unknown
	clash   string
}

// drawScenario runs the draw row on the cluster and returns its rows.
func (c *Cluster) drawScenario(ctx context.Context, drv *driver.Driver, rdb *redis.Client, pg *pgxpool.Pool, entrants int, logf func(string, ...any)) ([]Row, error) {
	if entrants <= 0 {
		entrants = 600
	}
	sale := fmt.Sprintf("chaos-draw-%d", time.Now().UnixNano()%1e12)
	const sizes = 3
	if err := draw.CreateDrawSale(ctx, drv, sale, sizes, 20, "30s"); err != nil {
		return nil, err
	}
	logf("draw sale %s: %d entrants through %d gateways; kill -9 gateway-1 and stop Redis during the entries", sale, entrants, len(c.GatewayURLs))
	client := &http.Client{Timeout: 5 * time.Second}
	people := make([]*drawEntrant, entrants)
	var answered sync.WaitGroup
	var failMu sync.Mutex
	var failures []time.Time // requests answered 5xx or not at all
	start := time.Now()
	// The faults, while the entrants arrive over about 8 s.
	faultsDone := make(chan []Happened, 1)
	go func() {
		var hs []Happened
		for _, f := range []Fault{{Kind: GatewayKill, Target: 0, At: 1500 * time.Millisecond, Down: 2 * time.Second},
			{Kind: RedisStop, At: 4500 * time.Millisecond, Down: 2 * time.Second}} {
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(start.Add(f.At))):
			}
			hs = append(hs, c.execute(ctx, rdb, sale, f, func() {}))
		}
		faultsDone <- hs
	}()
	send := func(p *drawEntrant, gw int, method, user, ip, variant string) (int, map[string]any) {
		var body io.Reader
		if variant != "" {
			body = strings.NewReader(`{"variant":"` + variant + `"}`)
		}
		req, _ := http.NewRequestWithContext(ctx, method, c.GatewayURLs[gw]+"/seckill/"+sale+"/draw", body)
		req.Header.Set("X-User-ID", user)
		req.Header.Set("X-Forwarded-For", ip)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	for i := range entrants {
		p := &drawEntrant{}
		people[i] = p
		answered.Add(1)
		go func() {
			defer answered.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(i) * 8 * time.Second / time.Duration(entrants)):
			}
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			user := fmt.Sprintf("%s-e%04d", sale, i)
			ip := fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256)
			steps := []string{"enter"}
			if rng.IntN(4) == 0 {
				steps = append(steps, "change")
			}
			if rng.IntN(8) == 0 {
				steps = append(steps, "withdraw")
			}
			v := rng.IntN(sizes)
			for _, step := range steps {
				method, variant := http.MethodPost, draw.SizeName(v)
				switch step {
				case "change":
					v = (v + 1) % sizes
					variant = draw.SizeName(v)
				case "withdraw":
					method, variant = http.MethodDelete, ""
				}
				// A refused or unanswered request is tried again (other gateway), for up to 20 s.
				for try := 0; ; try++ {
					status, out := send(p, (i+try)%len(c.GatewayURLs), method, user, ip, variant)
					p.mu.Lock()
					if status == http.StatusOK {
						p.unsure = false
						id, _ := out["entry_id"].(string)
						if id != "" {
							if p.entryID != "" && p.entryID != id {
								p.clash = fmt.Sprintf("entry id %s then %s", p.entryID, id)
							}
							p.entryID = id
						}
						p.state, _ = out["state"].(string)
						if p.state == "entered" {
							p.variant, _ = out["variant"].(string)
						}
						p.mu.Unlock()
						break
					}
					if status == 0 || status >= 500 {
						p.unsure = p.unsure || status == 0 || status == 503
						failMu.Lock()
						failures = append(failures, time.Now())
						failMu.Unlock()
					}
					p.mu.Unlock()
					if try >= 40 || ctx.Err() != nil || (status >= 400 && status < 500 && status != http.StatusTooManyRequests) {
						break
					}
					time.Sleep(500 * time.Millisecond)
				}
			}
		}()
	}
	answered.Wait()
	happened := <-faultsDone
	logf("draw: the entrants finished after %.1fs", time.Since(start).Seconds())
	var rows []Row
	for _, h := range happened {
		affected := 0
		for _, at := range failures {
			if !at.Before(h.Start) && at.Before(h.Recovered.Add(2*time.Second)) {
				affected++
			}
		}
		r := Row{Fault: h.Fault.String() + " (draw entries)", When: fmt.Sprintf("t=%.1fs, back at t=%.1fs", h.Start.Sub(start).Seconds(), h.Recovered.Sub(start).Seconds()),
			Affected: affected, Verdict: invariants.Pass, Outcome: fmt.Sprintf("%d requests refused or unanswered, each tried again until answered", affected)}
		if h.Err != nil {
			r.Verdict, r.Outcome = invariants.Fail, h.Err.Error()
		}
		rows = append(rows, r)
	}
	if _, _, err := draw.RunDraw(ctx, drv, sale); err != nil {
		return nil, fmt.Errorf("run the draw: %w", err)
	}
	fixed := map[string][2]string{}
	prs, err := pg.Query(ctx, `SELECT user_id, entry_id, variant FROM draw_entries WHERE sale_id = $1`, sale)
	if err != nil {
		return nil, err
	}
	for prs.Next() {
		var u, id, v string
		if err := prs.Scan(&u, &id, &v); err != nil {
			prs.Close()
			return nil, err
		}
		fixed[u] = [2]string{id, v}
	}
	prs.Close()
	var lost, ghost, clash []string
	sure, entered := 0, 0
	for i, p := range people {
		user := fmt.Sprintf("%s-e%04d", sale, i)
		got, in := fixed[user]
		if p.clash != "" {
			clash = append(clash, user+": "+p.clash)
		}
		if p.unsure || p.state == "" {
			if in && p.entryID != "" && got[0] != p.entryID {
				clash = append(clash, user+": fixed with "+got[0]+", answered "+p.entryID)
			}
			continue
		}
		sure++
		switch p.state {
		case "entered":
			entered++
			if !in || got[0] != p.entryID || got[1] != p.variant {
				lost = append(lost, fmt.Sprintf("%s (answered %s %s, fixed %v)", user, p.entryID, p.variant, got))
			}
		case "withdrawn":
			if in {
				ghost = append(ghost, user)
			}
		}
	}
	r := Row{Fault: "every entry answered 200 is in the draw", When: "after the draw", Verdict: invariants.Pass,
		Outcome: fmt.Sprintf("%d entrants with a certain last answer (%d entered), %d fixed at the close", sure, entered, len(fixed))}
	if len(lost)+len(ghost)+len(clash) > 0 || sure == 0 {
		r.Verdict = invariants.Fail
		r.Outcome += fmt.Sprintf("; lost %d %v; withdrawn but drawn %d %v; id changes %d %v", len(lost), first(lost), len(ghost), first(ghost), len(clash), first(clash))
	}
	rows = append(rows, r)
	vr, err := invariants.Verify(ctx, invariants.Sources{Redis: rdb, PG: pg, Dead: amqpDeadLetters{url: c.AMQPURL}}, invariants.Run{Sale: sale, CheckRedis: true})
	if err != nil {
		return nil, fmt.Errorf("verify the draw sale: %w", err)
	}
	for _, ch := range vr.Checks {
		rows = append(rows, Row{Fault: fmt.Sprintf("draw sale: %s", ch.Name), When: "after the draw", Outcome: ch.Detail, Verdict: ch.Verdict})
	}
	return rows, nil
}

func first(s []string) []string { return s[:min(len(s), 3)] }
