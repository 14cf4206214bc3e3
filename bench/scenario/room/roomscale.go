package room

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/internal/invariants"
)

// The waiting room at scale: N waiters spread over two gateways poll a
// room whose front moves (admissions flowing at the room's rate, some admitted waiters buying,
// some letting their admission lapse, some leaving the queue), each at the refresh_s the
// server last told it, as the waiting page does. The run counts the polls and reads INFO
// commandstats of the stack's private Redis around the polling phase: Redis commands per poll,
// the tokens', purchases' and leaves' included, and scripts per poll. Commands run inside a
// script count under their own names, so no reading of commandstats tells a poll's from a
// purchase's; a second window tells them apart: in it the admitted waiters hold their token and
// purchase until it ends and nobody leaves, so what Redis runs then is what the polls cause (the
// admission steps and ticks they run included; target <= 0.05 a poll), beside the gateways'
// background, read with no request at all before the sale is made. The room's invariants (6-9 of
// internal/invariants) are checked on the sale afterwards, and each gateway's resident memory is
// read at the end.

// ScaleOptions shape the scale run.
type ScaleOptions struct {
	Waiters  int           // waiters entered before the polling phase (default 100 000)
	Duration time.Duration // the polling phase (default 60 s)
	// PollsOnly is the window after the polling phase in which only polls are sent (default
	// Duration / 2; negative: none): the waiters it admits take their token and buy when it
	// ends, and the leaves due in it wait as long.
	PollsOnly time.Duration
	Rate      float64       // the room's admissions per second (default 200)
	Session   time.Duration // how long an admission lives unused (default 10 s)
	// Stock is the sale's units (default: Waiters, so that admissions flow for the whole run:
	// the room admits at most stock x oversubscribe live places).
	Stock int
	// BuyShare is the share of admitted waiters who buy (default 0.5). Every admitted waiter
	// does what the waiting page does on admission: takes a token and stops polling; the
	// others never click Buy, and their admission lapses after the session.
	BuyShare float64
	// LeaveShare is the share of waiters who leave the queue (DELETE) at a random moment of
	// the phase (default 0.05).
	LeaveShare float64
	// Workers is how many requests are in flight at most (default 256): the waiters are a
	// schedule, not goroutines, so 100 000 of them cost a heap entry each.
	Workers int
	// EnterConns is the connections of the entry phase (default 200).
	EnterConns int
	// RoomLines are the seckill_room settings the caller added to the gateways' Caddyfile, for
	// the report ("": none).
	RoomLines    string
	DrainTimeout time.Duration // the wait for the buyers' orders to reach Postgres (default 60 s)
	Seed         uint64
	Logf         func(format string, a ...any)
}

func (o *ScaleOptions) defaults() {
	if o.Waiters <= 0 {
		o.Waiters = 100_000
	}
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	if o.PollsOnly == 0 {
		o.PollsOnly = o.Duration / 2
	}
	if o.Rate <= 0 {
		o.Rate = 200
	}
	if o.Session <= 0 {
		o.Session = 10 * time.Second
	}
	if o.Stock <= 0 {
		o.Stock = o.Waiters
	}
	if o.BuyShare < 0 || o.BuyShare > 1 {
		o.BuyShare = 0.5
	}
	if o.LeaveShare < 0 || o.LeaveShare > 1 {
		o.LeaveShare = 0.05
	}
	if o.Workers <= 0 {
		o.Workers = 256
	}
	if o.EnterConns <= 0 {
		o.EnterConns = 200
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 60 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// GatewayMemory is one gateway process's memory at the end of a run (/proc/<pid>/status).
type GatewayMemory struct {
	URL    string `json:"url"`
	PID    int    `json:"pid"`
	RSSKiB int64  `json:"rss_kib"` // VmRSS
	HWMKiB int64  `json:"hwm_kib"` // VmHWM: the peak resident set
	// PollsFromMemory is the gateway's seckill_room_polls_from_memory_total over the polling
	// phase (-1 when its metrics were unreadable).
	PollsFromMemory int64 `json:"polls_from_memory"`
}

// ScaleResult is the scale run's answer.
type ScaleResult struct {
	Date     time.Time      `json:"date"`
	Machine  driver.Machine `json:"machine"`
	LoadAvg  string         `json:"loadavg"` // /proc/loadavg at the start and at the end
	Sale     string         `json:"sale"`
	Waiters  int            `json:"waiters"`
	Gateways int            `json:"gateways"`
	Rate     float64        `json:"rate"`
	SessionS float64        `json:"session_s"`
	Stock    int            `json:"stock"`
	// RoomLines are the seckill_room settings added to the Caddyfile ("": none).
	RoomLines string  `json:"room_settings,omitempty"`
	EnterS    float64 `json:"enter_s"`   // how long the entry phase took
	PollingS  float64 `json:"polling_s"` // the measured phase
	Polls     int64   `json:"polls"`
	PollsPS   float64 `json:"polls_per_s"`
	// Other requests sent in the phase: tokens, buys, leaves (their Redis work is in the
	// commandstats too: the per-poll figures charge them to the polls).
	Tokens, Buys, Leaves int64
	RedisCommands        int64            `json:"redis_commands"`
	RedisScripts         int64            `json:"redis_scripts"`
	CommandsPerPoll      float64          `json:"redis_commands_per_poll"`
	ScriptsPerPoll       float64          `json:"redis_scripts_per_poll"`
	Commands             map[string]int64 `json:"commands"` // commandstats delta, by command
	FromMemory           int64            `json:"polls_from_memory"`
	FromMemoryShare      float64          `json:"polls_from_memory_share"`
	// Answers counts the poll answers by state (waiting, admitted, ended:lapsed, ...), refusals
	// by status and code, transport errors as "error".
	Answers map[string]int64 `json:"answers"`
	// Outcomes counts the token, buy and leave answers.
	Outcomes map[string]int64 `json:"outcomes"`
	// RoomBefore and Room are the room hash's counters when the polling phase began and at its
	// end (cursor, admitted, lapsed, left, skipped, ...): the front moved by their difference.
	RoomBefore map[string]int64 `json:"room_before"`
	Room       map[string]int64 `json:"room"`
	// LateMeanMs and LateMaxMs are how late the clients' requests left against their schedule
	// (refresh_s after the last answer): a client that cannot keep up sends fewer polls than
	// the waiters would, and the figures per poll are then of a lighter load.
	LateMeanMs float64            `json:"late_mean_ms"`
	LateMaxMs  float64            `json:"late_max_ms"`
	GatewayMem []GatewayMemory    `json:"gateway_memory"`
	Verify     *invariants.Report `json:"verify,omitempty"`
	// RoomChecks is PASS when invariants 6-9 passed, FAIL otherwise; AllChecks the same over
	// every invariant the verifier ran.
	RoomChecks string `json:"room_checks"`
	AllChecks  string `json:"all_checks"`
	// PollsOnly is the window of polls alone; its commands per poll are the polls' own (with
	// the background's share), the figure the target is held to.
	PollsOnly *Window `json:"polls_only,omitempty"`
	// BackgroundPS is Redis commands per second with no request (the gateways' relays and the
	// app's own reads), over a few seconds before the sale is made.
	BackgroundPS float64 `json:"background_commands_per_s"`
	// TargetMet: the polls' own commands per poll (PollsOnly's, or the phase's when there is no
	// such window) <= 0.05 and the room checks PASS.
	TargetMet bool `json:"target_met"`
}

// Window is one measured window of the scale run.
type Window struct {
	Seconds       float64 `json:"seconds"`
	Polls         int64   `json:"polls"`
	RedisCommands int64   `json:"redis_commands"`
	RedisScripts  int64   `json:"redis_scripts"`
	// CommandsPerPoll counts every command in the window; NetPerPoll takes the background's
	// (BackgroundPS over the window) off first.
	CommandsPerPoll float64          `json:"redis_commands_per_poll"`
	NetPerPoll      float64          `json:"redis_commands_per_poll_net"`
	Commands        map[string]int64 `json:"commands"`
	// Held are the admitted waiters whose token and purchase waited for the window's end.
	Held int64 `json:"held"`
	// Answers counts the window's poll answers as ScaleResult.Answers does.
	Answers map[string]int64 `json:"answers"`
}

// scaleWaiter is one waiter of the scale run, scheduled by its next request.
type scaleWaiter struct {
	user    string
	gw      int
	ticket  string
	next    time.Time
	leaveAt time.Time // zero: stays
	index   int       // in the heap
}

// waiterHeap orders waiters by their next request.
type waiterHeap []*scaleWaiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h waiterHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *waiterHeap) Push(x any)        { w := x.(*scaleWaiter); w.index = len(*h); *h = append(*h, w) }
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}

// roomAnswer is the part of a room answer the clients read.
type roomAnswer struct {
	State    string  `json:"state"`
	Reason   string  `json:"reason"`
	RefreshS float64 `json:"refresh_s"`
	Ticket   string  `json:"ticket"`
	Code     string  `json:"code"`
	Token    string  `json:"token"`
	OrderID  string  `json:"order_id"`
}

// scaleRun is the shared state of the polling phase.
type scaleRun struct {
	d       *driver.Driver
	o       ScaleOptions
	sale    string
	clients []*http.Client
	acc     *driver.Winners
	rng     *rand.Rand
	rngMu   sync.Mutex

	polls, tokens, buys, leaves atomic.Int64
	mu                          sync.Mutex
	answers, outcomes           map[string]int64
	buyers                      map[string]bool
	// pollsOnly holds back, while set, what is not a poll: an admitted waiter joins held (his
	// token and purchase come when the window ends), a leave waits.
	pollsOnly atomic.Bool
	held      []*scaleWaiter
}

func (r *scaleRun) count(m map[string]int64, k string) {
	r.mu.Lock()
	m[k]++
	r.mu.Unlock()
}

func (r *scaleRun) float() float64 {
	r.rngMu.Lock()
	defer r.rngMu.Unlock()
	return r.rng.Float64()
}

// call sends one request to the waiter's gateway and decodes the answer.
func (r *scaleRun) call(ctx context.Context, w *scaleWaiter, method, path string, h map[string]string) (int, roomAnswer, error) {
	var a roomAnswer
	req, err := http.NewRequestWithContext(ctx, method, r.d.Stack.AllGateways()[w.gw]+"/seckill/"+r.sale+path, nil)
	if err != nil {
		return 0, a, err
	}
	req.Header.Set("X-User-ID", w.user)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := r.clients[w.gw].Do(req)
	if err != nil {
		return 0, a, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = json.Unmarshal(b, &a)
	return resp.StatusCode, a, nil
}

// step is one visit of a waiter: a leave when its time has come, else a poll, and what the
// page does on admission when the poll admits him. It returns when the waiter polls next
// (zero: never).
func (r *scaleRun) step(ctx context.Context, w *scaleWaiter, now time.Time) time.Time {
	if !w.leaveAt.IsZero() && !now.Before(w.leaveAt) && !r.pollsOnly.Load() {
		r.leaves.Add(1)
		st, a, err := r.call(ctx, w, http.MethodDelete, "/queue", map[string]string{"X-Seckill-Ticket": w.ticket})
		switch {
		case err != nil:
			r.count(r.outcomes, "leave:error")
		case st == http.StatusOK:
			r.count(r.outcomes, "leave:"+a.State)
			return time.Time{}
		default:
			// An admitted waiter cannot leave (409 not_waiting): he goes on as the others.
			r.count(r.outcomes, fmt.Sprintf("leave:%d %s", st, a.Code))
		}
		w.leaveAt = time.Time{}
	}
	st, a, err := r.call(ctx, w, http.MethodGet, "/queue", map[string]string{"X-Seckill-Ticket": w.ticket})
	if ctx.Err() != nil {
		return time.Time{}
	}
	r.polls.Add(1)
	if err != nil {
		r.count(r.answers, "error")
		return now.Add(time.Second)
	}
	if st != http.StatusOK {
		r.count(r.answers, fmt.Sprintf("%d %s", st, a.Code))
		if st == http.StatusServiceUnavailable {
			return now.Add(time.Second)
		}
		return time.Time{}
	}
	key := a.State
	if a.Reason != "" {
		key += ":" + a.Reason
	}
	r.count(r.answers, key)
	if a.Ticket != "" {
		// The page keeps the newest ticket it is given (a placed one, for answers from memory).
		w.ticket = a.Ticket
	}
	wait := time.Duration(a.RefreshS * float64(time.Second))
	if wait <= 0 {
		wait = time.Second
	}
	switch a.State {
	case "waiting", "paused":
	case "admitted":
		if r.pollsOnly.Load() {
			r.mu.Lock()
			r.held = append(r.held, w)
			r.mu.Unlock()
			return time.Time{}
		}
		if r.admitted(ctx, w) {
			return time.Time{}
		}
	default: // sold_out, ended (lapsed, used)
		return time.Time{}
	}
	// A little jitter, as real clocks and networks give: waiters told the same refresh_s at
	// the same moment do not stay in lockstep.
	return now.Add(wait + time.Duration(r.float()*0.1*float64(wait)))
}

// admitted is what the waiting page does on admission: it takes a token and shows Buy, and
// polls no more; a share of the people click it. It returns true when the waiter is done (he
// bought, left his admission to lapse, or met a final refusal), false when he should poll
// again (no token: the page would go back to the room).
func (r *scaleRun) admitted(ctx context.Context, w *scaleWaiter) bool {
	r.tokens.Add(1)
	st, a, err := r.call(ctx, w, http.MethodPost, "/token", nil)
	if ctx.Err() != nil {
		return true // the phase is over, not the sale
	}
	if err != nil || st != http.StatusOK || a.Token == "" {
		r.count(r.outcomes, fmt.Sprintf("token:%d %s", st, a.Code))
		return final(a.Code)
	}
	if r.float() >= r.o.BuyShare {
		r.count(r.outcomes, "admission left to lapse")
		return true
	}
	r.mu.Lock()
	r.buyers[w.user] = true
	r.mu.Unlock()
	r.buys.Add(1)
	st, a, err = r.call(ctx, w, http.MethodPost, "/buy", map[string]string{"X-Seckill-Token": a.Token})
	switch {
	case err != nil || st == http.StatusServiceUnavailable:
		r.count(r.outcomes, "buy:unavailable")
		r.acc.Collect(load.Request{User: w.user}, load.Response{Outcome: "unavailable", At: time.Now()})
		return true
	case st == http.StatusAccepted:
		r.count(r.outcomes, "buy:accepted")
		r.acc.Collect(load.Request{User: w.user}, load.Response{Outcome: "accepted", OrderID: a.OrderID, At: time.Now()})
		return true
	default:
		r.count(r.outcomes, fmt.Sprintf("buy:%d %s", st, a.Code))
		return true
	}
}

// RoomScale runs the scale measurement on a stack with at least one gateway (two for the
// issue's target: Start with Gateways 2).
func RoomScale(ctx context.Context, d *driver.Driver, o ScaleOptions) (*ScaleResult, error) {
	o.defaults()
	gws := d.Stack.AllGateways()
	res := &ScaleResult{Date: time.Now().UTC(), Machine: driver.ThisMachine(), LoadAvg: driver.LoadAvg(), Waiters: o.Waiters, Gateways: len(gws),
		Rate: o.Rate, SessionS: o.Session.Seconds(), Stock: o.Stock, RoomLines: o.RoomLines}
	sale := driver.SaleID("room-scale")
	res.Sale = sale
	// The background: what Redis runs with no request at all (the gateways' relays, the app's
	// own reads), per second.
	bg0, bgAt := redisCalls(ctx, d), time.Now()
	select {
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if bg1 := redisCalls(ctx, d); bg0 != nil && bg1 != nil {
		res.BackgroundPS = float64(sumDelta(bg0, bg1, nil)) / time.Since(bgAt).Seconds()
	}
	now := time.Now().UTC()
	// Started a moment ago, so every entry gets a placed ticket (its later polls far from the
	// front are answered from memory); the end is far beyond the run.
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales", map[string]any{"id": sale, "stock": o.Stock,
		"starts_at": now.Add(-time.Second).Format(time.RFC3339), "ends_at": now.Add(2 * time.Hour).Format(time.RFC3339),
		"pay_within": "1h", "room": map[string]any{"rate": o.Rate, "session": o.Session.String(), "difficulty": [2]int{0, 0},
			"max_waiters": 2 * o.Waiters}}); err != nil {
		return nil, fmt.Errorf("create sale: %w", err)
	}
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales/"+sale+"/preheat", nil); err != nil {
		return nil, fmt.Errorf("preheat: %w", err)
	}

	// Waiters poll from their own entry on, as the page does: the workers and the dispatcher
	// run during the entry phase too. The measured phase is the Duration after the last entry
	// (with one presence window for all, the first polls waited for the whole entry phase, and
	// a waiter who entered first was passed as absent before his first poll: a benchmark
	// artefact, 2026-12-02).
	run := &scaleRun{d: d, o: o, sale: sale, acc: &driver.Winners{Drain: invariants.NewDrainWatcher(ctx, d.PG)},
		rng: rand.New(rand.NewPCG(o.Seed, 28)), answers: map[string]int64{}, outcomes: map[string]int64{}, buyers: map[string]bool{}}
	perGW := max(o.Workers/len(gws), 1) + 16
	for range gws {
		run.clients = append(run.clients, &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
			DialContext:  (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns: perGW, MaxIdleConnsPerHost: perGW, MaxConnsPerHost: perGW, IdleConnTimeout: 90 * time.Second}})
	}
	defer func() {
		for _, c := range run.clients {
			c.CloseIdleConnections()
		}
	}()
	h := make(waiterHeap, 0, o.Waiters)
	var hmu sync.Mutex
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	due := make(chan *scaleWaiter)
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range due {
				next := run.step(pctx, w, time.Now())
				if next.IsZero() || pctx.Err() != nil {
					continue
				}
				if l := w.leaveAt; !l.IsZero() && l.Before(next) {
					next = l
				}
				w.next = next
				hmu.Lock()
				heap.Push(&h, w)
				hmu.Unlock()
			}
		}()
	}
	// The dispatcher hands each waiter to a worker when his time comes; lateness is counted
	// in the measured phase only.
	var measuring atomic.Bool
	var lateSum, lateMax time.Duration
	var lateN int64
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		lastLog := time.Now()
		for pctx.Err() == nil {
			hmu.Lock()
			var w *scaleWaiter
			if len(h) > 0 && !h[0].next.After(time.Now()) {
				w = heap.Pop(&h).(*scaleWaiter)
			}
			hmu.Unlock()
			if w == nil {
				select {
				case <-pctx.Done():
					return
				case <-tick.C:
				}
				if time.Since(lastLog) >= 5*time.Second {
					lastLog = time.Now()
					o.Logf("room scale: %d polls so far", run.polls.Load())
				}
				continue
			}
			if measuring.Load() {
				late := time.Since(w.next)
				lateSum += late
				lateMax = max(lateMax, late)
				lateN++
			}
			select {
			case due <- w:
			case <-pctx.Done():
				return
			}
		}
	}()

	// 1. Entry, spread over the gateways (waiter i enters and polls through gateway i mod n);
	// each waiter's first poll comes within the refresh_s his entry told.
	began := time.Now()
	waiters, err := enterSpread(ctx, d, sale, o.Waiters, o.EnterConns, func(w *scaleWaiter, refresh time.Duration) {
		now := time.Now()
		w.next = now.Add(time.Duration(run.float() * float64(refresh)))
		if run.float() < o.LeaveShare {
			w.leaveAt = now.Add(time.Duration(run.float() * float64(o.Duration)))
		}
		hmu.Lock()
		heap.Push(&h, w)
		hmu.Unlock()
	})
	if err != nil {
		return res, err
	}
	res.EnterS = time.Since(began).Seconds()
	o.Logf("room scale: %d waiters entered sale %s through %d gateways in %.1f s", len(waiters), sale, len(gws), res.EnterS)

	// 2. The measured phase: Duration of polling, as the clients would, each at his refresh_s.
	start := time.Now()
	polls0, tokens0, buys0, leaves0 := run.polls.Load(), run.tokens.Load(), run.buys.Load(), run.leaves.Load()
	run.mu.Lock()
	run.answers, run.outcomes = map[string]int64{}, map[string]int64{}
	run.mu.Unlock()
	res.RoomBefore = roomCounters(ctx, d, sale)
	memBefore := pollsFromMemory(ctx, d)
	before := redisCalls(ctx, d)
	measuring.Store(true)
	select {
	case <-time.After(o.Duration):
	case <-ctx.Done():
	}
	phaseEnd := time.Now()
	after := redisCalls(ctx, d)
	memAfter := pollsFromMemory(ctx, d)
	polls1 := run.polls.Load()
	res.Polls, res.Tokens, res.Buys, res.Leaves = polls1-polls0, run.tokens.Load()-tokens0, run.buys.Load()-buys0, run.leaves.Load()-leaves0
	run.mu.Lock()
	res.Answers, res.Outcomes = run.answers, run.outcomes
	run.answers, run.outcomes = map[string]int64{}, map[string]int64{}
	run.mu.Unlock()
	// 2b. Polls alone.
	if o.PollsOnly > 0 {
		run.pollsOnly.Store(true)
		w0, at := redisCalls(ctx, d), time.Now()
		select {
		case <-time.After(o.PollsOnly):
		case <-ctx.Done():
		}
		w1 := redisCalls(ctx, d)
		win := &Window{Seconds: time.Since(at).Seconds(), Polls: run.polls.Load() - polls1, Commands: map[string]int64{}}
		win.RedisCommands = sumDelta(w0, w1, win.Commands)
		for name, n := range win.Commands {
			if strings.HasPrefix(name, "eval") {
				win.RedisScripts += n
			}
		}
		if win.Polls > 0 {
			win.CommandsPerPoll = float64(win.RedisCommands) / float64(win.Polls)
			win.NetPerPoll = max(float64(win.RedisCommands)-res.BackgroundPS*win.Seconds, 0) / float64(win.Polls)
		}
		res.PollsOnly = win
	}
	cancel()
	<-dispatched
	if lateN > 0 {
		res.LateMeanMs = float64(lateSum.Microseconds()) / 1000 / float64(lateN)
		res.LateMaxMs = float64(lateMax.Microseconds()) / 1000
	}
	close(due)
	wg.Wait()
	res.PollingS = phaseEnd.Sub(start).Seconds()
	// What the window held back: the admitted waiters' tokens and purchases, as the page would
	// have sent them (late: an admission that lapsed meanwhile is refused its token).
	if res.PollsOnly != nil {
		run.mu.Lock()
		res.PollsOnly.Held, res.PollsOnly.Answers = int64(len(run.held)), run.answers
		run.mu.Unlock()
		sem := make(chan struct{}, 32)
		var hw sync.WaitGroup
		for _, w := range run.held {
			hw.Add(1)
			sem <- struct{}{}
			go func() {
				defer hw.Done()
				defer func() { <-sem }()
				run.admitted(ctx, w)
			}()
		}
		hw.Wait()
	}

	res.PollsPS = float64(res.Polls) / res.PollingS
	res.ScriptsPerPoll, res.CommandsPerPoll = perPoll(before, after, int(res.Polls))
	res.Commands = map[string]int64{}
	for name, n := range after {
		if dn := n - before[name]; dn > 0 {
			res.Commands[name] = dn
			res.RedisCommands += dn
			if strings.HasPrefix(name, "eval") {
				res.RedisScripts += dn
			}
		}
	}
	for i, g := range gws {
		m := GatewayMemory{URL: g, PollsFromMemory: -1}
		if i < len(d.Stack.GatewayPIDs) {
			m.PID = d.Stack.GatewayPIDs[i]
		} else if i == 0 {
			m.PID = d.Stack.GatewayPID
		}
		m.RSSKiB, m.HWMKiB = ProcMemory(m.PID)
		if memBefore != nil && memAfter != nil && i < len(memAfter) && memBefore[i] >= 0 && memAfter[i] >= 0 {
			m.PollsFromMemory = memAfter[i] - memBefore[i]
			res.FromMemory += m.PollsFromMemory
		}
		res.GatewayMem = append(res.GatewayMem, m)
	}
	if res.Polls > 0 {
		res.FromMemoryShare = float64(res.FromMemory) / float64(res.Polls)
	}
	res.Room = roomCounters(ctx, d, sale)
	o.Logf("room scale: %d polls in %.1f s (%.0f/s), %.4f Redis commands and %.4f scripts per poll; %.1f %% from memory; room %v",
		res.Polls, res.PollingS, res.PollsPS, res.CommandsPerPoll, res.ScriptsPerPoll, 100*res.FromMemoryShare, res.Room)

	// 3. The room's invariants on the sale as the run left it.
	if _, err := run.acc.Drain.Wait(ctx, o.DrainTimeout); err != nil {
		return res, fmt.Errorf("drain: %w", err)
	}
	if _, err := invariants.WaitSettled(ctx, d.PG, d.Redis, sale, o.DrainTimeout); err != nil {
		return res, fmt.Errorf("settle: %w", err)
	}
	rep, err := invariants.Verify(ctx, invariants.Sources{Redis: d.Redis, PG: d.PG,
		Dead:   invariants.RabbitMgmt{URL: d.Stack.MgmtURL, Vhost: d.Stack.Vhost},
		Orders: invariants.HTTPOrders(d.Stack.Gateway, nil)},
		invariants.Run{Sale: sale, Accepted: run.acc.Accepted, Demand: len(run.buyers), CheckRedis: true, Uncertain: run.acc.Uncertain})
	if err != nil {
		return res, err
	}
	res.Verify = &rep
	res.RoomChecks, res.AllChecks = checksVerdict(rep, 6, 9), checksVerdict(rep, 0, 1<<30)
	own, polls := res.CommandsPerPoll, res.Polls
	if res.PollsOnly != nil {
		own, polls = res.PollsOnly.CommandsPerPoll, res.PollsOnly.Polls
	}
	// A window without polls measures nothing: no target is met by it.
	res.TargetMet = polls > 0 && own <= 0.05 && res.RoomChecks == "PASS"
	res.LoadAvg += " / " + driver.LoadAvg()
	return res, nil
}

// sumDelta is how many commands ran between two commandstats readings (the benchmark's own
// INFO left out), each put in by (when not nil) by command.
func sumDelta(before, after map[string]int64, by map[string]int64) int64 {
	var n int64
	for name, a := range after {
		if name == "info" {
			continue
		}
		if dn := a - before[name]; dn > 0 {
			n += dn
			if by != nil {
				by[name] = dn
			}
		}
	}
	return n
}

// checksVerdict is PASS when every check numbered within [lo, hi] passed (FAIL also when
// there is none).
func checksVerdict(rep invariants.Report, lo, hi int) string {
	n := 0
	for _, c := range rep.Checks {
		if c.N < lo || c.N > hi {
			continue
		}
		n++
		if c.Verdict != invariants.Pass {
			return "FAIL"
		}
	}
	if n == 0 {
		return "FAIL"
	}
	return "PASS"
}

// enterSpread puts n users in the sale's room, user i through gateway i mod the gateways, and
// returns them with their tickets; entered (when not nil) gets each waiter as his entry answers,
// with the refresh_s it told him.
func enterSpread(ctx context.Context, d *driver.Driver, sale string, n, conns int, entered func(w *scaleWaiter, refresh time.Duration)) ([]*scaleWaiter, error) {
	gws := d.Stack.AllGateways()
	reqs := make([]load.Request, n)
	byUser := make(map[string]int, n)
	for i := range n {
		u := fmt.Sprintf("%s-w%07d", sale, i)
		byUser[u] = i
		reqs[i] = load.Request{Method: http.MethodPost, URL: gws[i%len(gws)] + "/seckill/" + sale + "/queue",
			Header: http.Header{"X-User-Id": {u}}, Kind: "enter", User: u}
	}
	out := make([]*scaleWaiter, n)
	var mu sync.Mutex
	got := 0
	r := load.Execute(ctx, load.Run{Name: "enter", Model: load.Model{Connections: conns}, Requests: reqs, Client: load.NewClient("nethttp", conns),
		OnResponse: func(req load.Request, resp load.Response) {
			var a roomAnswer
			if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &a) != nil || a.Ticket == "" {
				return
			}
			i := byUser[req.User]
			refresh := time.Duration(a.RefreshS * float64(time.Second))
			if refresh <= 0 {
				refresh = time.Second
			}
			w := &scaleWaiter{user: req.User, gw: i % len(gws), ticket: a.Ticket}
			mu.Lock()
			out[i] = w
			got++
			mu.Unlock()
			if entered != nil {
				entered(w, refresh)
			}
		}})
	if got < n {
		return nil, fmt.Errorf("only %d of %d waiters entered the room (%v)", got, n, r.Outcomes)
	}
	return out, nil
}

// pollsFromMemory reads seckill_room_polls_from_memory_total from each gateway's metrics (-1
// for a gateway whose metrics were unreadable; nil when no admin URL is known).
func pollsFromMemory(ctx context.Context, d *driver.Driver) []int64 {
	admins := d.Stack.GatewayAdmins
	if len(admins) == 0 && d.Stack.Admin != "" {
		admins = []string{d.Stack.Admin}
	}
	if len(admins) == 0 {
		return nil
	}
	out := make([]int64, len(admins))
	for i, a := range admins {
		out[i] = metricSum(ctx, a+"/metrics", "seckill_room_polls_from_memory_total")
	}
	return out
}

// metricSum sums a counter's samples on a Prometheus text page (-1 when unreadable).
func metricSum(ctx context.Context, url, name string) int64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return -1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return -1
	}
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := strings.TrimPrefix(line, name)
		if rest != "" && rest[0] != ' ' && rest[0] != '{' {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return int64(sum)
}

// roomCounters reads the room hash's counters.
func roomCounters(ctx context.Context, d *driver.Driver, sale string) map[string]int64 {
	out := map[string]int64{}
	vals, err := d.Redis.HMGet(ctx, "seckill:{sale:"+sale+"}:room", "cursor", "admitted", "lapsed", "left", "skipped", "entries", "revoked", "noshows", "claimed").Result()
	if err != nil {
		return out
	}
	for i, k := range []string{"cursor", "admitted", "lapsed", "left", "skipped", "entries", "revoked", "noshows", "claimed"} {
		if s, ok := vals[i].(string); ok {
			out[k], _ = strconv.ParseInt(s, 10, 64)
		}
	}
	out["queue"] = d.Redis.ZCard(ctx, "seckill:{sale:"+sale+"}:room:q").Val()
	out["live"] = d.Redis.ZCard(ctx, "seckill:{sale:"+sale+"}:room:live").Val()
	out["seen"] = d.Redis.ZCard(ctx, "seckill:{sale:"+sale+"}:room:seen").Val()
	if st, err := d.Redis.HGet(ctx, "seckill:{sale:"+sale+"}:meta", "stock").Int64(); err == nil {
		out["stock"] = st
	}
	return out
}

// ProcMemory is a process's resident set and its peak, in KiB (/proc/<pid>/status VmRSS and
// VmHWM; zeros when unreadable).
func ProcMemory(pid int) (rss, hwm int64) {
	if pid <= 0 {
		return 0, 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm
}
