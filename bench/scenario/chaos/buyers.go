package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/internal/invariants"
)

// Attempt is one HTTP request of a buyer, with when it was sent and answered.
type Attempt struct {
	User    string
	Step    string // "token" or "buy"
	Gateway int    // index of the gateway it was sent to
	Sent    time.Time
	Done    time.Time
	Status  int
	// Outcome is load.Classify's: accepted, sold_out, unavailable, … or "error" (transport).
	Outcome    string
	RetryAfter bool // a Retry-After header came with the answer
	OrderID    string
}

// Buyers is a crowd arriving at a fixed rate, each buyer behaving like a well-written client:
// fetch a purchase token, then buy with it; on a connection error try the other gateway (as a
// load balancer would); on 503 or 429 wait for Retry-After and try again; give up after
// GiveUp.
type Buyers struct {
	Gateways []string
	Sale     string
	Rate     float64 // arrivals per second
	Count    int     // buyers
	GiveUp   time.Duration
	Prefix   string // user id prefix, unique per run
	// Variants, when above 0, makes the sale one with variants v0, v1, …: buyer i asks for
	// variant v(i mod Variants) in the buy request's body.
	Variants int
	// Limit, above 1, makes buyer i ask for 1 + (i / Variants) mod Limit units.
	Limit int

	client *http.Client

	mu       sync.Mutex
	attempts []Attempt
	// accepted is every 202 (one per response); told maps a user to the order id they were
	// told (202, or already_bought after an answer they never saw).
	accepted  []invariants.Accepted
	told      map[string]string
	uncertain map[string]bool
	final     map[string]string // user -> last outcome
	watch     *orderWatch
	// finished is when the last buyer finished.
	finished time.Time
}

// Run lets the crowd in and returns when every buyer has finished (or ctx ends).
func (b *Buyers) Run(ctx context.Context) {
	b.told, b.uncertain, b.final = map[string]string{}, map[string]bool{}, map[string]string{}
	b.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 256, MaxConnsPerHost: 512, IdleConnTimeout: 30 * time.Second, DisableCompression: true,
	}}
	defer b.client.CloseIdleConnections()
	start := time.Now()
	interval := time.Duration(float64(time.Second) / b.Rate)
	var wg sync.WaitGroup
	for i := 0; i < b.Count; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b.buyer(ctx, i)
		}(i)
	}
	wg.Wait()
	b.mu.Lock()
	b.finished = time.Now()
	b.mu.Unlock()
}

func (b *Buyers) user(i int) string { return fmt.Sprintf("%su%d", b.Prefix, i) }

// VariantOf is the variant user asks for ("" on a sale without variants).
func (b *Buyers) VariantOf(user string) string {
	i, err := strconv.Atoi(strings.TrimPrefix(user, b.Prefix+"u"))
	if b.Variants <= 0 || err != nil {
		return ""
	}
	return driver.Variant(i % b.Variants)
}

// QuantityOf is the number of units user asks for.
func (b *Buyers) QuantityOf(user string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(user, b.Prefix+"u"))
	if b.Variants <= 0 || b.Limit <= 1 || err != nil {
		return 1
	}
	return 1 + (i/b.Variants)%b.Limit
}

func (b *Buyers) buyer(ctx context.Context, i int) {
	user := b.user(i)
	ip := fmt.Sprintf("10.%d.%d.%d", i&255, (i>>8)&255, 1+(i>>16)&127)
	gw := i % len(b.Gateways)
	giveUp := time.Now().Add(b.GiveUp)
	token, tokens := "", 0
	outcome := "gave_up"
	defer func() {
		b.mu.Lock()
		b.final[user] = outcome
		b.mu.Unlock()
	}()
	for ctx.Err() == nil && time.Now().Before(giveUp) {
		if token == "" {
			if tokens >= 3 {
				return
			}
			a, body, ra := b.do(ctx, gw, "token", user, ip, "")
			switch {
			case a.Status == http.StatusOK:
				var t struct {
					Token string `json:"token"`
				}
				_ = json.Unmarshal(body, &t)
				token = t.Token
				tokens++
			case a.Outcome == "error":
				gw = (gw + 1) % len(b.Gateways)
				pause(ctx, 100*time.Millisecond)
			case a.Status == http.StatusServiceUnavailable || a.Status == http.StatusTooManyRequests:
				pause(ctx, ra)
			default:
				outcome = a.Outcome
				return
			}
			continue
		}
		a, _, ra := b.do(ctx, gw, "buy", user, ip, token)
		switch a.Outcome {
		case "accepted":
			b.mu.Lock()
			acc := invariants.Accepted{OrderID: a.OrderID, UserID: user, At: a.Done}
			b.accepted = append(b.accepted, acc)
			b.told[user] = a.OrderID
			b.mu.Unlock()
			b.watch.Add(a.OrderID)
			outcome = a.Outcome
			return
		case "already_bought":
			if a.OrderID != "" {
				b.mu.Lock()
				b.told[user] = a.OrderID
				b.mu.Unlock()
				b.watch.Add(a.OrderID)
			}
			outcome = a.Outcome
			return
		case "token_used", "invalid_token", "token_expired":
			token = "" // a new token, a new try
		case "error":
			b.mu.Lock()
			b.uncertain[user] = true
			b.mu.Unlock()
			gw = (gw + 1) % len(b.Gateways)
			pause(ctx, 100*time.Millisecond)
		case "unavailable", "rate_limited":
			if a.Outcome == "unavailable" {
				b.mu.Lock()
				b.uncertain[user] = true
				b.mu.Unlock()
			}
			pause(ctx, ra)
		default:
			outcome = a.Outcome
			return
		}
	}
}

// pause sleeps d plus up to 50% jitter (clients that retry in lockstep make their own rush).
func pause(ctx context.Context, d time.Duration) {
	d += time.Duration(rand.Int64N(int64(d/2) + 1))
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// do sends one request and records it. It returns the attempt, the body and the wait the
// server asked for (Retry-After, at most 2 s; 500 ms when absent).
func (b *Buyers) do(ctx context.Context, gw int, step, user, ip, token string) (Attempt, []byte, time.Duration) {
	a := Attempt{User: user, Step: step, Gateway: gw, Sent: time.Now()}
	wait := 500 * time.Millisecond
	var payload io.Reader
	if step == "buy" && b.Variants > 0 {
		payload = strings.NewReader(fmt.Sprintf(`{"variant":%q,"quantity":%d}`, b.VariantOf(user), b.QuantityOf(user)))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.Gateways[gw]+"/seckill/"+b.Sale+"/"+step, payload)
	if err != nil {
		a.Outcome, a.Done = "error", time.Now()
		b.record(a)
		return a, nil, wait
	}
	req.Header.Set("X-User-ID", user)
	req.Header.Set("X-Forwarded-For", ip)
	if token != "" {
		req.Header.Set("X-Seckill-Token", token)
	}
	resp, err := b.client.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
	a.Done = time.Now()
	if err != nil {
		a.Outcome = "error"
		b.record(a)
		return a, nil, wait
	}
	a.Status = resp.StatusCode
	a.Outcome, a.OrderID = load.Classify(resp.StatusCode, body)
	if v := resp.Header.Get("Retry-After"); v != "" {
		a.RetryAfter = true
		if s, err := strconv.Atoi(v); err == nil {
			wait = min(time.Duration(s)*time.Second, 2*time.Second)
		}
	}
	b.record(a)
	return a, body, wait
}

func (b *Buyers) record(a Attempt) {
	b.mu.Lock()
	b.attempts = append(b.attempts, a)
	b.mu.Unlock()
}

// Attempts returns a copy of every attempt so far.
func (b *Buyers) Attempts() []Attempt {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Attempt(nil), b.attempts...)
}

// orderWatch follows order ids into Postgres: every 250 ms it asks for the rows of the ids not
// seen yet and records when each first appeared and with which status. Errors (Postgres is
// down: part of the plan) are counted and the poll goes on.
type orderWatch struct {
	pg *pgxpool.Pool

	mu     sync.Mutex
	added  map[string]time.Time
	seen   map[string]time.Time
	status map[string]string
	errs   int
}

func newOrderWatch(pg *pgxpool.Pool) *orderWatch {
	return &orderWatch{pg: pg, added: map[string]time.Time{}, seen: map[string]time.Time{}, status: map[string]string{}}
}

// Add follows an order id (again harmless).
func (w *orderWatch) Add(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.added[id]; !ok {
		w.added[id] = time.Now()
	}
}

// Seen is when the order's row first appeared, and its status then.
func (w *orderWatch) Seen(id string) (time.Time, string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.seen[id]
	return t, w.status[id], ok
}

// Pending is the number of followed ids without a row yet.
func (w *orderWatch) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.added) - len(w.seen)
}

// Run polls until ctx ends.
func (w *orderWatch) Run(ctx context.Context) {
	for ctx.Err() == nil {
		w.poll(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (w *orderWatch) poll(ctx context.Context) {
	w.mu.Lock()
	var ids []string
	for id := range w.added {
		if _, ok := w.seen[id]; !ok {
			ids = append(ids, id)
		}
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	rows, err := w.pg.Query(qctx, `SELECT order_id, status FROM orders WHERE order_id = ANY($1)`, ids)
	if err != nil {
		w.mu.Lock()
		w.errs++
		w.mu.Unlock()
		return
	}
	now := time.Now()
	type row struct{ id, status string }
	var got []row
	for rows.Next() {
		var r row
		if rows.Scan(&r.id, &r.status) == nil {
			got = append(got, r)
		}
	}
	rows.Close()
	w.mu.Lock()
	for _, r := range got {
		w.seen[r.id], w.status[r.id] = now, r.status
	}
	w.mu.Unlock()
}
