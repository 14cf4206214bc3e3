package draw

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/internal/invariants"
)

// A whole draw sale, from the first entry to the last claim: the
// whole-system test runs it on a private stack, and `seckill-bench draw-sale` on make run's.
// Entrants enter through every gateway (every tenth changes his size, every twentieth
// withdraws); the backend draws by itself at closes_at; wave 1's winners buy their size except
// the best-ranked of each size, whose unit goes to the next rank in wave 2 when the claim
// window ends; wave 2's winners buy. On the way it checks what buyers must be told: a token
// before the draw, a purchase of another size, a purchase by a waiting entrant, all refused.

// DrawSaleOptions shape the sale.
type DrawSaleOptions struct {
	Sale     string        // default draw-sale-<time>
	Entrants int           // default 240
	Sizes    int           // default 3
	Units    int           // per size, default 5
	Close    time.Duration // from now to closes_at (default 12 s)
	Claim    time.Duration // each wave's claim window (default 3 s)
	// Forward, when set, is the X-Forwarded-For of each entrant's requests (a gateway that
	// trusts loopback proxies then throttles each entrant apart); nil sends none.
	Forward func(user string) string
	Logf    func(format string, a ...any)
}

// DrawSaleResult is what the sale did; Problems lists every broken expectation.
type DrawSaleResult struct {
	Sale              string
	Entries           int // fixed at the close
	Withdrawn         int
	WinnersByWave     map[int]int
	Bought            int
	Accepted          []invariants.Accepted
	SizeOf            map[string]string // the size each entrant ended with ("" withdrawn)
	Problems          []string
	DrawnAfterCloseMs int64
}

// DrawSale runs the sale through the driver's gateways.
func DrawSale(ctx context.Context, d *driver.Driver, o DrawSaleOptions) (*DrawSaleResult, error) {
	if o.Sale == "" {
		o.Sale = fmt.Sprintf("draw-sale-%d", time.Now().UnixNano()%1e9)
	}
	if o.Entrants <= 0 {
		o.Entrants = 240
	}
	if o.Sizes <= 0 {
		o.Sizes = 3
	}
	if o.Units <= 0 {
		o.Units = 5
	}
	if o.Close <= 0 {
		o.Close = 12 * time.Second
	}
	if o.Claim <= 0 {
		o.Claim = 3 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	sale := o.Sale
	res := &DrawSaleResult{Sale: sale, WinnersByWave: map[int]int{}, SizeOf: map[string]string{}}
	var mu sync.Mutex
	problem := func(format string, a ...any) {
		mu.Lock()
		res.Problems = append(res.Problems, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	now := time.Now().UTC().Truncate(time.Second)
	closes := now.Add(o.Close)
	if err := d.AdminJSON(ctx, http.MethodPost, "/admin/sales", drawSpec(sale, o.Sizes, o.Units, now.Add(-time.Minute), closes, o.Claim.String()), nil); err != nil {
		return nil, err
	}
	if err := d.AdminJSON(ctx, http.MethodPost, "/admin/sales/"+sale+"/preheat", nil, nil); err != nil {
		return nil, err
	}
	gws := d.Stack.AllGateways()
	cl := &http.Client{Timeout: 10 * time.Second}
	call := func(gw int, method, path, user, body string, hdr ...string) (int, map[string]any) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequestWithContext(ctx, method, gws[gw%len(gws)]+path, rd)
		req.Header.Set("X-User-ID", user)
		if o.Forward != nil {
			req.Header.Set("X-Forwarded-For", o.Forward(user))
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := cl.Do(req)
		if err != nil {
			return 0, map[string]any{"error": err.Error()}
		}
		defer resp.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	user := func(i int) string { return fmt.Sprintf("%s-u%03d", sale, i) }
	base := "/seckill/" + sale

	var wg sync.WaitGroup
	sizeOf := make([]string, o.Entrants)
	for i := range o.Entrants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := SizeName(i % o.Sizes)
			st, out := call(i, http.MethodPost, base+"/draw", user(i), `{"variant":"`+v+`"}`)
			if st != http.StatusOK || out["state"] != "entered" {
				problem("entrant %d entering: %d %v", i, st, out)
				return
			}
			if i%10 == 0 {
				v = SizeName((i + 1) % o.Sizes)
				if st, out2 := call(i+1, http.MethodPost, base+"/draw", user(i), `{"variant":"`+v+`"}`); st != http.StatusOK || out2["entry_id"] != out["entry_id"] {
					problem("entrant %d changing size: %d %v (first %v)", i, st, out2, out["entry_id"])
				}
			}
			if i%20 == 5 {
				if st, out := call(i, http.MethodDelete, base+"/draw", user(i), ""); st != http.StatusOK || out["state"] != "withdrawn" {
					problem("entrant %d withdrawing: %d %v", i, st, out)
				}
				v = ""
			}
			sizeOf[i] = v
		}()
	}
	wg.Wait()
	for i, v := range sizeOf {
		res.SizeOf[user(i)] = v
		if v == "" {
			res.Withdrawn++
		}
	}
	o.Logf("draw sale %s: %d entrants entered through %d gateways (%d withdrew); the draw closes at %s", sale, o.Entrants, len(gws), res.Withdrawn, closes.Format(time.TimeOnly))
	if st, out := call(0, http.MethodPost, base+"/token", user(1), ""); st == http.StatusOK {
		problem("a token before the draw: %d %v", st, out)
	}
	// The backend draws by itself at closes_at.
	var status DrawStatus
	for {
		if err := d.AdminJSON(ctx, http.MethodGet, "/admin/sales/"+sale+"/draw", nil, &status); err != nil {
			return nil, err
		}
		if status.State == "drawn" || status.State == "done" {
			break
		}
		if time.Now().After(closes.Add(60 * time.Second)) {
			return nil, fmt.Errorf("no draw a minute after closes_at: %+v", status)
		}
		time.Sleep(250 * time.Millisecond)
	}
	res.DrawnAfterCloseMs = time.Since(closes).Milliseconds()
	res.Entries = status.Entries
	if status.Entries != o.Entrants-res.Withdrawn {
		problem("%d entries fixed at the close, want %d", status.Entries, o.Entrants-res.Withdrawn)
	}
	o.Logf("draw sale %s: drawn %d ms after the close, %d entries, root %s", sale, res.DrawnAfterCloseMs, status.Entries, status.Root)
	time.Sleep(time.Until(closes))
	buy := func(i int, v string) (int, map[string]any) {
		st, out := call(i, http.MethodPost, base+"/token", user(i), "")
		if st != http.StatusOK {
			return st, out
		}
		tok, _ := out["token"].(string)
		return call(i+1, http.MethodPost, base+"/buy", user(i), `{"variant":"`+v+`"}`, "X-Seckill-Token", tok)
	}
	// each runs f(i) for i in [0, n), 16 at a time: a wave's winners are found and served side
	// by side, well within the claim window, however long one round trip takes.
	each := func(n int, f func(i int)) {
		var g errgroup.Group
		g.SetLimit(16)
		for i := range n {
			g.Go(func() error { f(i); return nil })
		}
		_ = g.Wait()
	}
	skipped := map[string]bool{}
	claimWave := func(wave int) int {
		// The wave's winners, by asking every entrant's state.
		won := make([]bool, o.Entrants)
		rank1 := make([]bool, o.Entrants)
		each(o.Entrants, func(i int) {
			st, out := call(i, http.MethodGet, base+"/draw", user(i), "")
			if st != http.StatusOK || out["state"] != "won" {
				return
			}
			if w, _ := out["wave"].(float64); int(w) != wave {
				return
			}
			won[i], rank1[i] = true, out["rank"] == float64(1)
		})
		n := 0 // the wave's winners, those who let their window pass included
		var winners []int
		for i, w := range won {
			if !w {
				continue
			}
			n++
			if v := sizeOf[i]; wave == 1 && !skipped[v] && rank1[i] {
				skipped[v] = true // his claim window passes: the unit goes to wave 2
				continue
			}
			winners = append(winners, i)
		}
		each(len(winners), func(k int) {
			i := winners[k]
			v := sizeOf[i]
			// Another size is refused: not_admitted, or sold_out when that size is gone already
			// (the gateway knows it without asking Redis). Never a sale.
			if other := SizeName((i + 2) % o.Sizes); other != v {
				if st, out := buy(i, other); !(st == http.StatusForbidden && out["code"] == "not_admitted") && !(st == http.StatusConflict && out["code"] == "sold_out") {
					problem("winner %d buying %s instead of %s: %d %v", i, other, v, st, out)
				}
			}
			if st, out := buy(i, v); st != http.StatusAccepted {
				problem("winner %d of wave %d buying %s: %d %v", i, wave, v, st, out)
			} else {
				id, _ := out["order_id"].(string)
				mu.Lock()
				res.Bought++
				res.Accepted = append(res.Accepted, invariants.Accepted{OrderID: id, UserID: user(i), At: time.Now()})
				mu.Unlock()
			}
		})
		return n
	}
	res.WinnersByWave[1] = claimWave(1)
	if res.WinnersByWave[1] != o.Sizes*o.Units {
		problem("%d winners in wave 1, want %d", res.WinnersByWave[1], o.Sizes*o.Units)
	}
	for i := range o.Entrants {
		if st, out := call(i, http.MethodGet, base+"/draw", user(i), ""); st == http.StatusOK && out["state"] == "waiting" {
			if st, out := buy(i, sizeOf[i]); st != http.StatusForbidden || out["code"] != "not_admitted" {
				problem("a waiting entrant bought: %d %v", st, out)
			}
			break
		}
	}
	o.Logf("draw sale %s: wave 1: %d winners, %d bought; waiting for the claim window to end", sale, res.WinnersByWave[1], res.Bought)
	deadline := time.Now().Add(o.Claim + 30*time.Second)
	for {
		if err := d.AdminJSON(ctx, http.MethodGet, "/admin/sales/"+sale+"/draw", nil, &status); err != nil {
			return nil, err
		}
		waves2 := 0
		for _, w := range status.Waves {
			if w.Wave == 2 {
				waves2++
			}
		}
		if waves2 == o.Sizes {
			break
		}
		if time.Now().After(deadline) {
			problem("no second wave in every size: %+v", status.Waves)
			return res, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	res.WinnersByWave[2] = claimWave(2)
	if res.WinnersByWave[2] != o.Sizes {
		problem("%d winners in wave 2, want %d (one unsold unit per size)", res.WinnersByWave[2], o.Sizes)
	}
	if res.Bought != o.Sizes*o.Units {
		problem("%d units bought, want %d", res.Bought, o.Sizes*o.Units)
	}
	o.Logf("draw sale %s: wave 2: %d winners; %d units bought in all", sale, res.WinnersByWave[2], res.Bought)
	return res, nil
}
