package room

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
)

// The two populations' behaviour in the fairness scenario (fairness.go): what a bot and a
// person do, without and with the room.

// fairClient is one buyer of the scenario.
type fairClient struct {
	user   string
	fast   bool
	rng    *rand.Rand
	http   *http.Client
	ticket string
	// keepTicket: the client keeps the newest ticket a poll hands it, as the waiting page does
	// (a placed ticket: its polls far from the front are then answered from the gateway's
	// memory, and its presence recorded by the gateway's ticks).
	keepTicket bool
}

// fairRun is the shared state of one sale's crowd.
type fairRun struct {
	d        *driver.Driver
	o        FairnessOptions
	sale     string
	start    time.Time
	acc      *driver.Winners
	mu       sync.Mutex
	outcomes map[string]int
	won      map[string]bool // winner -> in the fast population
	admitted map[string]bool // users the room admitted -> in the fast population
	lastWin  time.Time
	requests [2]atomic.Int64 // fast, slow
}

func (r *fairRun) count(outcome string) {
	r.mu.Lock()
	r.outcomes[outcome]++
	r.mu.Unlock()
}

// call sends one request and decodes the JSON answer.
func (r *fairRun) call(ctx context.Context, c *fairClient, method, path string, h map[string]string) (int, map[string]any) {
	if c.fast {
		r.requests[0].Add(1)
	} else {
		r.requests[1].Add(1)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.d.Stack.Gateway+"/seckill/"+r.sale+path, nil)
	if err != nil {
		return 0, nil
	}
	req.Header.Set("X-User-ID", c.user)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// think is a slow client's pause (none for a fast one).
func (r *fairRun) think(ctx context.Context, c *fairClient) bool {
	if c.fast {
		return ctx.Err() == nil
	}
	d := r.o.ThinkMin + time.Duration(c.rng.Int64N(int64(r.o.ThinkMax-r.o.ThinkMin)+1))
	return sleepCtx(ctx, d)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// final outcomes end a client's attempt.
func final(code string) bool {
	switch code {
	case "sold_out", "ended", "already_bought", "unknown_sale", "invalid_token", "token_expired":
		return true
	}
	return false
}

// buy takes a token and clicks Buy until an answer ends it. A fast client retries every
// refusal at once; a slow one thinks first. It reports whether the client should stop.
func (r *fairRun) buy(ctx context.Context, c *fairClient, token string) (stop bool) {
	for ctx.Err() == nil {
		if token == "" {
			st, m := r.call(ctx, c, http.MethodPost, "/token", nil)
			if st == http.StatusOK {
				token = str(m, "token")
			} else {
				code := str(m, "code")
				r.count("token:" + code)
				if final(code) {
					return true
				}
				if code == "not_admitted" {
					return false // back to the room
				}
				if !r.think(ctx, c) {
					return true
				}
				continue
			}
		}
		if !r.think(ctx, c) { // a person reads the page before clicking Buy
			return true
		}
		st, m := r.call(ctx, c, http.MethodPost, "/buy", map[string]string{"X-Seckill-Token": token})
		code := str(m, "code")
		switch {
		case st == http.StatusAccepted:
			r.count("accepted")
			now := time.Now()
			r.acc.Collect(load.Request{User: c.user}, load.Response{Outcome: "accepted", OrderID: str(m, "order_id"), At: now})
			r.mu.Lock()
			r.won[c.user] = c.fast
			if now.After(r.lastWin) {
				r.lastWin = now
			}
			r.mu.Unlock()
			return true
		case st == 0 || st == http.StatusServiceUnavailable:
			r.count("buy:unavailable")
			r.acc.Collect(load.Request{User: c.user}, load.Response{Outcome: "unavailable", At: time.Now()})
		default:
			r.count("buy:" + code)
			if final(code) {
				return true
			}
			if code == "token_used" {
				token = ""
			}
		}
	}
	return true
}

// withoutRoom: the token is fetched before the start (page load); from the start a fast
// client clicks Buy in a loop, a slow one after thinking.
func (r *fairRun) withoutRoom(ctx context.Context, c *fairClient) {
	var token string
	for ctx.Err() == nil && token == "" {
		st, m := r.call(ctx, c, http.MethodPost, "/token", nil)
		if st == http.StatusOK {
			token = str(m, "token")
		} else if !sleepCtx(ctx, 100*time.Millisecond) {
			return
		}
	}
	// Fast clients start hammering a moment early; refusals before the start are retried.
	early := time.Duration(0)
	if c.fast {
		early = 100 * time.Millisecond
	}
	if !sleepCtx(ctx, time.Until(r.start.Add(-early))) {
		return
	}
	r.buy(ctx, c, token)
}

// withRoom: enter the pre-queue, then poll (fast: as fast as answers come; slow: at refresh_s)
// until admitted, then take a token and buy.
func (r *fairRun) withRoom(ctx context.Context, c *fairClient) {
	for ctx.Err() == nil && c.ticket == "" {
		st, m := r.call(ctx, c, http.MethodPost, "/queue", nil)
		if st == http.StatusOK {
			c.ticket = str(m, "ticket")
		} else if !sleepCtx(ctx, 100*time.Millisecond) {
			return
		}
	}
	for ctx.Err() == nil {
		st, m := r.call(ctx, c, http.MethodGet, "/queue", map[string]string{"X-Seckill-Ticket": c.ticket})
		state := str(m, "state")
		if t := str(m, "ticket"); c.keepTicket && st == http.StatusOK && t != "" {
			c.ticket = t
		}
		if st != http.StatusOK {
			r.count("poll:" + str(m, "code"))
			state = ""
		}
		switch state {
		case "admitted":
			r.mu.Lock()
			r.admitted[c.user] = c.fast
			r.mu.Unlock()
			if r.buy(ctx, c, "") {
				return
			}
			continue
		case "sold_out", "ended":
			r.count("room:" + state)
			return
		}
		if c.fast {
			continue
		}
		wait := time.Second
		if f, ok := m["refresh_s"].(float64); ok && f > 0 {
			wait = time.Duration(f * float64(time.Second))
		}
		if !sleepCtx(ctx, wait) {
			return
		}
	}
}
