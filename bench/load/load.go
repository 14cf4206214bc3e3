// Package load drives HTTP requests at a server under one of two load models and measures what
// happened:
//
//   - closed: C connections, each sending its next request when the previous answer arrived.
//     Throughput is what the server sustains at that concurrency; latency is per request.
//   - open: requests arrive at a fixed rate whatever the server does, as real crowds do. Latency
//     is measured from the moment a request was due, not from when the client got round to
//     sending it, and requests sent late are counted: a stalled server cannot hide its stall by
//     slowing the client down (coordinated omission).
//
// Latencies go into HDR histograms (microseconds, 3 significant digits). A timeline of 100 ms
// buckets keeps throughput, outcomes and tail latency over time for the report.
package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Request is one HTTP request of a scenario.
type Request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
	// Kind labels the scenario the request belongs to (crowd, repeat, bot, replay, forged, ...);
	// outcomes are counted per kind too.
	Kind string
	// User is who sent it (for collecting accepted order ids).
	User string
}

// Response is what a request got.
type Response struct {
	Status  int
	Outcome string // see Classify
	OrderID string // the order id of a 2xx or of already_bought, when the body had one
	Body    []byte
	Err     error
	At      time.Time // when the answer was complete
}

// Model is a load model: Connections > 0 with Rate == 0 is closed; Rate > 0 is open, with
// Connections as the most requests in flight (0: unbounded).
type Model struct {
	Connections int
	Rate        float64 // requests per second
}

// Open reports whether the model is open.
func (m Model) Open() bool { return m.Rate > 0 }

func (m Model) String() string {
	if m.Open() {
		return fmt.Sprintf("open %.0f req/s", m.Rate)
	}
	return fmt.Sprintf("closed %d conns", m.Connections)
}

// Run is one measured run.
type Run struct {
	Name     string
	Model    Model
	Requests []Request
	// Duration caps the run: no request is started after it (0: until Requests are done).
	Duration time.Duration
	// Client sends the requests (default: a Raw client).
	Client Doer
	// OnResponse, if set, sees every response (from many goroutines at once).
	OnResponse func(Request, Response)
	// Progress, if set, receives a one-line progress bar every 200 ms (use a TTY).
	Progress io.Writer
	// LateAfter is how late an open-model request may be sent before it counts as late (default 1 ms).
	LateAfter time.Duration
	// WarmURL, if set, is fetched once per connection before the run (not measured), so the
	// run measures requests, not TCP handshakes. Every contestant gets the same warm-up.
	WarmURL string
	// Warmed, if set, is called once the connections are warm, just before the first request
	// is due: a caller that charges the run's server cost to its requests starts counting
	// there, so the warm-up (a request and a TCP handshake per connection: 2 000 of them in
	// the open model's default) is not part of it.
	Warmed func()
}

// NewClient returns the client named kind: "raw" (default) or "nethttp".
func NewClient(kind string, conns int) Doer {
	if kind == "nethttp" {
		return NetHTTP{Client: NewHTTPClient(conns)}
	}
	return NewRaw(conns)
}

// NewHTTPClient is a net/http client for load: keep-alive connections up to conns, no compression,
// a generous timeout (a timeout is an outcome, "error", not a hang).
func NewHTTPClient(conns int) *http.Client {
	if conns <= 0 {
		conns = 1000
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// Classify turns an answer into an outcome: "accepted" for a 2xx that carries an order id,
// "ok" for another 2xx, the refusal code of a JSON refusal body, otherwise "http_<status>".
func Classify(status int, body []byte) (outcome, orderID string) {
	var b struct {
		Code    string `json:"code"`
		OrderID string `json:"order_id"`
	}
	_ = json.Unmarshal(body, &b)
	switch {
	case status >= 200 && status < 300 && b.OrderID != "":
		return "accepted", b.OrderID
	case status >= 200 && status < 300:
		return "ok", ""
	case b.Code != "":
		return b.Code, b.OrderID
	}
	return fmt.Sprintf("http_%d", status), ""
}

// Do sends one request and classifies the answer.
func Do(ctx context.Context, c *http.Client, r Request) Response {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, body)
	if err != nil {
		return Response{Outcome: "error", Err: err, At: time.Now()}
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return Response{Outcome: "error", Err: err, At: time.Now()}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return Response{Status: resp.StatusCode, Outcome: "error", Err: err, At: time.Now()}
	}
	out := Response{Status: resp.StatusCode, Body: b, At: time.Now()}
	out.Outcome, out.OrderID = Classify(resp.StatusCode, b)
	return out
}

// Warm opens up to conns keep-alive connections by sending conns concurrent GETs to url.
func Warm(ctx context.Context, c Doer, url string, conns int) {
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Do(ctx, Request{Method: http.MethodGet, URL: url})
		}()
	}
	wg.Wait()
}

// Bucket is 100 ms of a run's timeline (by completion time).
type Bucket struct {
	StartMs   int            `json:"start_ms"`
	Completed int            `json:"completed"`
	Outcomes  map[string]int `json:"outcomes"`
	P50us     int64          `json:"p50_us"`
	P99us     int64          `json:"p99_us"`
	MaxUs     int64          `json:"max_us"`
}

// BucketWidth is the timeline resolution.
const BucketWidth = 100 * time.Millisecond

// Result is what a run measured.
type Result struct {
	Name      string        `json:"name"`
	Model     string        `json:"model"`
	Planned   int           `json:"planned"`   // requests in the scenario
	Sent      int           `json:"sent"`      // requests started before the duration ran out
	Completed int           `json:"completed"` // answered or failed
	Elapsed   time.Duration `json:"elapsed_ns"`
	// Throughput is completed requests per second of the run.
	Throughput float64 `json:"throughput"`
	// Late counts open-model requests sent more than LateAfter after they were due; MaxLate is
	// the worst lateness. Both are zero for the closed model.
	Late     int            `json:"late"`
	MaxLate  time.Duration  `json:"max_late_ns"`
	Outcomes map[string]int `json:"outcomes"`
	// ByKind: outcome counts per scenario kind.
	ByKind map[string]map[string]int `json:"by_kind"`
	// Latency from when each request was due (open) or sent (closed), microseconds.
	Latency *hdrhistogram.Histogram `json:"-"`
	// Service is the latency from the actual send (equal to Latency in the closed model).
	Service  *hdrhistogram.Histogram `json:"-"`
	Timeline []Bucket                `json:"timeline"`
	Errors   []string                `json:"errors,omitempty"` // first few transport errors
}

const maxLatencyUs = 60_000_000

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, maxLatencyUs, 3) }

type recorder struct {
	mu       sync.Mutex
	start    time.Time
	res      *Result
	buckets  []*hdrhistogram.Histogram
	counts   []map[string]int
	progress atomic.Int64
}

func (r *recorder) record(req Request, resp Response, due, sent time.Time) {
	lat := resp.At.Sub(due).Microseconds()
	svc := resp.At.Sub(sent).Microseconds()
	r.progress.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.res
	res.Completed++
	res.Outcomes[resp.Outcome]++
	if res.ByKind[req.Kind] == nil {
		res.ByKind[req.Kind] = map[string]int{}
	}
	res.ByKind[req.Kind][resp.Outcome]++
	_ = res.Latency.RecordValue(clamp(lat))
	_ = res.Service.RecordValue(clamp(svc))
	if resp.Err != nil && len(res.Errors) < 5 {
		res.Errors = append(res.Errors, resp.Err.Error())
	}
	b := int(resp.At.Sub(r.start) / BucketWidth)
	if b < 0 {
		b = 0
	}
	for len(r.buckets) <= b {
		r.buckets = append(r.buckets, hdrhistogram.New(1, maxLatencyUs, 2))
		r.counts = append(r.counts, map[string]int{})
	}
	_ = r.buckets[b].RecordValue(clamp(lat))
	r.counts[b][resp.Outcome]++
}

func clamp(us int64) int64 {
	if us < 1 {
		return 1
	}
	if us > maxLatencyUs {
		return maxLatencyUs
	}
	return us
}

// Execute runs the requests under the model and returns what it measured. The context cancels
// the run early (what was measured until then is returned).
func Execute(ctx context.Context, run Run) *Result {
	res := &Result{Name: run.Name, Model: run.Model.String(), Planned: len(run.Requests),
		Outcomes: map[string]int{}, ByKind: map[string]map[string]int{}, Latency: newHist(), Service: newHist()}
	rec := &recorder{res: res}
	client := run.Client
	if client == nil {
		client = NewRaw(run.Model.Connections)
	}
	if run.LateAfter == 0 {
		run.LateAfter = time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if run.WarmURL != "" {
		Warm(ctx, client, run.WarmURL, max(run.Model.Connections, 1))
	}
	if run.Warmed != nil {
		run.Warmed()
	}
	stopProgress := startProgress(run, rec)
	rec.start = time.Now()
	var deadline time.Time
	if run.Duration > 0 {
		deadline = rec.start.Add(run.Duration)
	}
	if run.Model.Open() {
		executeOpen(ctx, run, client, rec, deadline)
	} else {
		executeClosed(ctx, run, client, rec, deadline)
	}
	res.Elapsed = time.Since(rec.start)
	stopProgress()
	if res.Elapsed > 0 {
		res.Throughput = float64(res.Completed) / res.Elapsed.Seconds()
	}
	for i, h := range rec.buckets {
		bk := Bucket{StartMs: i * int(BucketWidth/time.Millisecond), Outcomes: rec.counts[i]}
		for _, n := range rec.counts[i] {
			bk.Completed += n
		}
		if h.TotalCount() > 0 {
			bk.P50us, bk.P99us, bk.MaxUs = h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.Max()
		}
		res.Timeline = append(res.Timeline, bk)
	}
	return res
}

func executeClosed(ctx context.Context, run Run, client Doer, rec *recorder, deadline time.Time) {
	conns := max(run.Model.Connections, 1)
	var next atomic.Int64
	var sent atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(run.Requests) || (!deadline.IsZero() && time.Now().After(deadline)) {
					return
				}
				sent.Add(1)
				req := run.Requests[i]
				t := time.Now()
				resp := client.Do(ctx, req)
				rec.record(req, resp, t, t)
				if run.OnResponse != nil {
					run.OnResponse(req, resp)
				}
			}
		}()
	}
	wg.Wait()
	rec.mu.Lock()
	rec.res.Sent = int(sent.Load())
	rec.mu.Unlock()
}

func executeOpen(ctx context.Context, run Run, client Doer, rec *recorder, deadline time.Time) {
	interval := time.Duration(float64(time.Second) / run.Model.Rate)
	var sem chan struct{}
	if run.Model.Connections > 0 {
		sem = make(chan struct{}, run.Model.Connections)
	}
	var wg sync.WaitGroup
	var late int
	var maxLate time.Duration
	sent := 0
	for i, req := range run.Requests {
		due := rec.start.Add(time.Duration(i) * interval)
		if !deadline.IsZero() && due.After(deadline) {
			break
		}
		if d := time.Until(due); d > 0 {
			// Sleep granularity is coarse; waking a little early and sending every request
			// that is due keeps the schedule without busy-waiting.
			if d > 200*time.Microsecond {
				select {
				case <-ctx.Done():
				case <-time.After(d - 100*time.Microsecond):
				}
			}
		}
		if ctx.Err() != nil {
			break
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		now := time.Now()
		if l := now.Sub(due); l > run.LateAfter {
			late++
			if l > maxLate {
				maxLate = l
			}
		}
		sent++
		wg.Add(1)
		go func(req Request, due, sentAt time.Time) {
			defer wg.Done()
			resp := client.Do(ctx, req)
			rec.record(req, resp, due, sentAt)
			if run.OnResponse != nil {
				run.OnResponse(req, resp)
			}
			if sem != nil {
				<-sem
			}
		}(req, due, now)
	}
	wg.Wait()
	rec.mu.Lock()
	rec.res.Sent, rec.res.Late, rec.res.MaxLate = sent, late, maxLate
	rec.mu.Unlock()
}

func startProgress(run Run, rec *recorder) func() {
	if run.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		total := len(run.Requests)
		for {
			select {
			case <-done:
				fmt.Fprintf(run.Progress, "\r\033[K")
				return
			case <-t.C:
				n := int(rec.progress.Load())
				el := time.Since(rec.start)
				frac := float64(n) / float64(max(total, 1))
				if run.Duration > 0 {
					frac = max(frac, min(1, el.Seconds()/run.Duration.Seconds()))
				}
				const width = 30
				filled := int(frac * width)
				bar := bytes.Repeat([]byte("#"), min(filled, width))
				bar = append(bar, bytes.Repeat([]byte("."), width-len(bar))...)
				fmt.Fprintf(run.Progress, "\r\033[K%-22s [%s] %7d req %6.1fs %8.0f req/s", run.Name, bar, n, el.Seconds(),
					float64(n)/max(el.Seconds(), 0.001))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// Percentiles of a histogram in milliseconds, for tables and JSON.
type Percentiles struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// PercentilesOf reads a histogram (microseconds) as milliseconds.
func PercentilesOf(h *hdrhistogram.Histogram) Percentiles {
	if h == nil || h.TotalCount() == 0 {
		return Percentiles{}
	}
	f := func(v int64) float64 { return float64(v) / 1000 }
	return Percentiles{P50: f(h.ValueAtQuantile(50)), P90: f(h.ValueAtQuantile(90)), P99: f(h.ValueAtQuantile(99)),
		P999: f(h.ValueAtQuantile(99.9)), Max: f(h.Max()), Mean: h.Mean() / 1000}
}

// Distribution is the latency histogram as (percentile, ms) points for a chart.
func Distribution(h *hdrhistogram.Histogram) [][2]float64 {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	var pts [][2]float64
	for _, q := range []float64{10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100} {
		pts = append(pts, [2]float64{q, float64(h.ValueAtQuantile(q)) / 1000})
	}
	return pts
}

// SortedOutcomes lists outcome names, most frequent first.
func SortedOutcomes(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if m[ks[i]] != m[ks[j]] {
			return m[ks[i]] > m[ks[j]]
		}
		return ks[i] < ks[j]
	})
	return ks
}
