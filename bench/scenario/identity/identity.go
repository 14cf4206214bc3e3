package identity

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
)

// Identity at the edge, measured: what knowing who the buyer is costs, side by side
// in one run. One Caddy process serves one site per case, each the same token route (POST
// /seckill/<sale>/token of a preheated sale) behind a different identity step; the cases take
// turns, round after round, under the same closed load, each round with sessions nobody has
// presented yet (a cold cache: the rush's first click of each buyer). Every case but the demo
// asks one stand-in shop (Standin, its own process) or its keys, so the CPU of "the gateway
// plus the session service" compares like with like, and the stand-in counts its lookups.

// The identity cases, in their default order.
const (
	// IdentityDemo: the demo Caddyfile's identity, the X-User-ID header believed as sent.
	IdentityDemo = "demo"
	// IdentityJWT: seckill_identity verifies the session cookie, an ES256 JWT, with the
	// stand-in's JWKS.
	IdentityJWT = "jwt"
	// IdentitySession: seckill_session, forward_auth with a cache, against the stand-in's /session.
	IdentitySession = "session"
	// IdentityForwardAuth: Caddy's forward_auth, keep-alive on (Caddy's default transport).
	IdentityForwardAuth = "forward_auth"
	// IdentityForwardAuthClose: forward_auth with `keepalive off`, as deploy/Caddyfile.production ships it.
	IdentityForwardAuthClose = "forward_auth_close"
)

// IdentityCases are every case, in the default order.
var IdentityCases = []string{IdentityDemo, IdentityJWT, IdentitySession, IdentityForwardAuth, IdentityForwardAuthClose}

// IdentityLabel says what a case is, for tables.
func IdentityLabel(c string) string {
	switch c {
	case IdentityDemo:
		return "demo path (X-User-ID header)"
	case IdentityJWT:
		return "seckill_identity (ES256 JWT, JWKS)"
	case IdentitySession:
		return "seckill_session (cached forward_auth)"
	case IdentityForwardAuth:
		return "forward_auth, keep-alive on"
	case IdentityForwardAuthClose:
		return "forward_auth, keep-alive off (as shipped)"
	}
	return c
}

// IdentityCaddyfile is the benchmark's gateway: the demo case on `:8080` (GatewayConfig moves
// it and the admin endpoint to free ports), every other case on ports[case]; standin is the
// stand-in's base URL, ttl seckill_session's. The route is the same in every site: /healthz
// first (the load generator's warm-up, outside identity), then the case's identity step on
// /seckill/*, then (with throttle) the demo Caddyfile's per-IP and per-user zones on /seckill/*
// keyed on the user the step found, then seckill_token for that user.
//
// The throttle makes the route the demo path the targets compare with (the demo
// Caddyfile's token route); its zones are all `shadow` (counted, never refusing), because the
// benchmark's buyers click far more often than 5 a second and a refusal would measure the
// throttle's answer instead of a token. Without it the ratios are of the identity step alone
// against the bare token route. No metrics: every case would pay them alike.
func IdentityCaddyfile(standin string, ports map[string]int, ttl time.Duration, throttle bool) (string, error) {
	host := strings.TrimPrefix(standin, "http://")
	var b strings.Builder
	b.WriteString(`# seckill-bench identity: one site per identity case (docs/bench.md). Written by
# the benchmark; the demo case's :8080 and the admin endpoint are moved to free ports.
{
	admin 127.0.0.1:2019
	servers {
		timeouts {
			read_header 5s
			read_body 10s
			write 15s
			idle 1m
		}
	}
	seckill {
		redis {
			addrs {$SECKILL_REDIS_ADDR:127.0.0.1:16379}
		}
		amqp {
			url {env.SECKILL_AMQP_URL}
		}
		token_keys {
			k1 {env.SECKILL_TOKEN_KEY}
		}
	}
}
`)
	for _, c := range IdentityCases {
		addr := ":8080"
		if c != IdentityDemo {
			p, ok := ports[c]
			if !ok || p <= 0 {
				return "", fmt.Errorf("no port for the %s site", c)
			}
			addr = fmt.Sprintf(":%d", p)
		}
		var step, user string
		switch c {
		case IdentityDemo:
			user = "{http.request.header.X-User-ID}"
		case IdentityJWT:
			step = fmt.Sprintf(`		seckill_identity /seckill/* {
			cookie %s
			jwks_url %s/.well-known/jwks.json
			issuer %s
			audience %s
		}
`, StandinCookie, standin, StandinIssuer, StandinAudience)
			user = "{http.auth.user.id}"
		case IdentitySession:
			step = fmt.Sprintf(`		seckill_session /seckill/* {
			upstream %s/session
			cookie %s
			ttl %s
		}
`, standin, StandinCookie, ttl)
			user = "{http.auth.user.id}"
		case IdentityForwardAuth, IdentityForwardAuthClose:
			transport := ""
			if c == IdentityForwardAuthClose {
				transport = "\t\t\ttransport http {\n\t\t\t\tkeepalive off\n\t\t\t}\n"
			}
			step = fmt.Sprintf(`		forward_auth /seckill/* %s {
			uri /session
			copy_headers X-User-ID>X-Seckill-User
%s		}
`, host, transport)
			user = "{http.request.header.X-Seckill-User}"
		}
		if throttle {
			step += fmt.Sprintf(`		seckill_throttle /seckill/* {
			zone ip {
				key {client_ip}
				window 10s
				limit 100
				ipv6_prefix 64
				shadow
			}
			zone user {
				key %s
				window 1s
				limit 5
				shadow
			}
		}
`, user)
		}
		fmt.Fprintf(&b, `
# %s
%s {
	route {
		handle /healthz {
			respond "ok" 200
		}
%s		handle /seckill/*/token {
			seckill_token {
				user %s
			}
		}
	}
}
`, IdentityLabel(c), addr, step, user)
	}
	return b.String(), nil
}

// WriteIdentityCaddyfile picks free ports for the cases but the demo, writes the Caddyfile
// into dir and returns its path and the ports.
func WriteIdentityCaddyfile(dir, standin string, ttl time.Duration, throttle bool, freePorts func(int) ([]int, error)) (string, map[string]int, error) {
	ps, err := freePorts(len(IdentityCases) - 1)
	if err != nil {
		return "", nil, err
	}
	ports := map[string]int{}
	for i, c := range IdentityCases[1:] {
		ports[c] = ps[i]
	}
	src, err := IdentityCaddyfile(standin, ports, ttl, throttle)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, "identity.Caddyfile")
	return path, ports, os.WriteFile(path, []byte(src), 0o644)
}

// IdentityOptions shape the identity benchmark.
type IdentityOptions struct {
	Cases    []string       // default IdentityCases
	Ports    map[string]int // each case's site port but the demo's (the stack's gateway)
	Standin  *StandinProcess
	Sessions int           // distinct sessions (buyers) per case per round (default 2000)
	Conns    int           // connections of the closed model (default 64)
	Duration time.Duration // each case's rush in each round (default 5 s)
	Rounds   int           // default 3
	TTL      time.Duration // seckill_session's ttl, for its target (default 30 s)
	Throttle bool          // the Caddyfile has the demo's throttle zones (reported only)
	Client   string        // load client (default raw)
	// AroundRush, if set, is called as each rush starts with "<case>-r<round>"; what it
	// returns is called when the rush ends (seckill-bench's -gateway-pprof).
	AroundRush func(kind string) func()
	Logf       func(format string, a ...any)
}

// IdentitySide is one case's rush in one round.
type IdentitySide struct {
	Case  string `json:"case"`
	Round int    `json:"round"`
	// Sessions is how many distinct sessions the rush presented (its first Sessions requests
	// are one per buyer, then the buyers click again in the same order).
	Sessions   int     `json:"sessions"`
	Completed  int     `json:"completed"`
	OK         int     `json:"ok"` // answered 200 with a purchase token
	ElapsedS   float64 `json:"elapsed_s"`
	Throughput float64 `json:"throughput"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	// CPU is µs per completed request of each process tree: gateway, standin, redis, backend
	// (and rabbitmq, postgres: shared servers, others' work included).
	CPU map[string]float64 `json:"cpu_us_per_request"`
	// SessionCalls and JWKSCalls are what the stand-in received during the rush.
	SessionCalls int64          `json:"session_calls"`
	JWKSCalls    int64          `json:"jwks_calls"`
	Outcomes     map[string]int `json:"outcomes"`
}

// Identity is µs per request of the gateway plus the session service.
func (s IdentitySide) Identity() float64 { return s.CPU["gateway"] + s.CPU["standin"] }

// IdentityCaseSummary is one case over the rounds: medians, and ratios to the demo case of
// the same round (the median of the per-round ratios).
type IdentityCaseSummary struct {
	Case       string  `json:"case"`
	Label      string  `json:"label"`
	Rounds     int     `json:"rounds"`
	Throughput float64 `json:"throughput"`
	P99ms      float64 `json:"p99_ms"`
	GatewayUs  float64 `json:"gateway_us_per_request"`
	StandinUs  float64 `json:"session_service_us_per_request"`
	TotalUs    float64 `json:"total_us_per_request"` // gateway + session service
	RedisUs    float64 `json:"redis_us_per_request"`
	// GatewayRatio and TotalRatio are to the demo case (0 without one).
	GatewayRatio float64 `json:"gateway_ratio_to_demo"`
	TotalRatio   float64 `json:"total_ratio_to_demo"`
	// SessionCalls is the median of the rounds' session-service calls; CallsPerSession is
	// the median of calls / sessions presented; MaxSessionCalls the most in one round.
	SessionCalls    float64 `json:"session_calls"`
	MaxSessionCalls int64   `json:"max_session_calls"`
	CallsPerSession float64 `json:"calls_per_session"`
	JWKSCalls       int64   `json:"jwks_calls"` // over every round
	// OKShare is the share of requests answered 200 over every round.
	OKShare float64 `json:"ok_share"`
}

// IdentityTarget is one of the targets of identity at the edge (docs/bench.md), met or not.
type IdentityTarget struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
}

// IdentityResult is the benchmark's answer.
type IdentityResult struct {
	Date     time.Time             `json:"date"`
	Machine  driver.Machine        `json:"machine"`
	Sale     string                `json:"sale"`
	Sessions int                   `json:"sessions_per_case_round"`
	Conns    int                   `json:"conns"`
	Duration time.Duration         `json:"duration_ns"`
	TTL      time.Duration         `json:"session_ttl_ns"`
	Throttle bool                  `json:"throttle"` // the demo's zones (shadow) on every route
	Sides    []IdentitySide        `json:"sides"`    // in the order they ran
	Cases    []IdentityCaseSummary `json:"cases"`
	Targets  []IdentityTarget      `json:"targets"`
}

// MinOKShare is the least share of 200 answers for a case's numbers to mean anything: below
// it the case measured refusals (a broken configuration), and the run fails.
const MinOKShare = 0.99

// OK reports whether every case answered (nearly) all its requests with a token. The targets
// are speed: printed met/MISSED, not failures.
func (r *IdentityResult) OK() bool {
	for _, c := range r.Cases {
		if c.OKShare < MinOKShare {
			return false
		}
	}
	return true
}

// RoundOrder is the order of the cases in round r (from 0): rotated by one each round, so
// no case always runs first after the idle set-up or right after the costliest one.
func RoundOrder(cases []string, r int) []string {
	if len(cases) == 0 {
		return nil
	}
	k := r % len(cases)
	return append(append([]string(nil), cases[k:]...), cases[:k]...)
}

// Identity runs the benchmark: a preheated sale, then o.Rounds rounds of every case.
func Identity(ctx context.Context, d *driver.Driver, o IdentityOptions) (*IdentityResult, error) {
	if len(o.Cases) == 0 {
		o.Cases = IdentityCases
	}
	if o.Sessions <= 0 {
		o.Sessions = 2000
	}
	if o.Conns <= 0 {
		o.Conns = 64
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.TTL <= 0 {
		o.TTL = 30 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Standin == nil {
		return nil, fmt.Errorf("identity: no session stand-in")
	}
	sites := map[string]string{IdentityDemo: d.Stack.Gateway}
	for _, c := range o.Cases {
		if c == IdentityDemo {
			continue
		}
		p, ok := o.Ports[c]
		if !ok {
			return nil, fmt.Errorf("identity: unknown case %q or no site for it", c)
		}
		sites[c] = fmt.Sprintf("http://127.0.0.1:%d", p)
	}
	if err := checkSites(ctx, sites); err != nil {
		return nil, err
	}
	sale := driver.SaleID("identity")
	if err := d.CreateSale(ctx, sale, 1000, true); err != nil {
		return nil, fmt.Errorf("create sale: %w", err)
	}
	// Every session is signed before the first rush, so signing is never measured.
	type side struct {
		round int
		c     string
	}
	signed := map[side]StandinSessions{}
	for r := range o.Rounds {
		for _, c := range o.Cases {
			s, err := o.Standin.Sessions(ctx, fmt.Sprintf("r%d-%s-", r+1, strings.ReplaceAll(c, "_", "")), o.Sessions)
			if err != nil {
				return nil, fmt.Errorf("sign sessions: %w", err)
			}
			signed[side{r, c}] = s
		}
	}
	o.Logf("identity: sale %s, %d cases x %d rounds, %d fresh sessions per case and round (%d signed), %d connections, %s per rush",
		sale, len(o.Cases), o.Rounds, o.Sessions, o.Rounds*len(o.Cases)*o.Sessions, o.Conns, o.Duration)
	res := &IdentityResult{Date: time.Now().UTC(), Machine: driver.ThisMachine(), Sale: sale, Sessions: o.Sessions, Conns: o.Conns,
		Duration: o.Duration, TTL: o.TTL, Throttle: o.Throttle}
	for r := range o.Rounds {
		for _, c := range RoundOrder(o.Cases, r) {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			rush, err := identitySide(ctx, d, o, c, r+1, sites[c], sale, signed[side{r, c}])
			if err != nil {
				return res, err
			}
			o.Logf("round %d %-18s %7.0f req/s  gateway %5.0f µs  session service %5.0f µs  redis %4.0f µs per request  %6d session calls (%d sessions)  %d of %d 200",
				r+1, c, rush.Throughput, rush.CPU["gateway"], rush.CPU["standin"], rush.CPU["redis"], rush.SessionCalls, rush.Sessions, rush.OK, rush.Completed)
			res.Sides = append(res.Sides, rush)
		}
	}
	res.Cases, res.Targets = SummarizeIdentity(res.Sides, o.Cases, o.TTL)
	return res, nil
}

// checkSites fails unless every case's site answers its /healthz with the route's "ok": a port
// that another listener shares (Caddy binds with SO_REUSEPORT, so a second bind of a port
// does not fail, and a listener on 127.0.0.1 takes the loopback connections of one on every
// address) would otherwise answer the whole rush with that listener's 404s.
func checkSites(ctx context.Context, sites map[string]string) error {
	client := &http.Client{Timeout: 10 * time.Second}
	for c, site := range sites {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, site+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("identity: the %s site %s: %w", c, site, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "ok" {
			return fmt.Errorf("identity: the %s site %s answers /healthz with %s %q, not the site's 200 \"ok\": another listener shares its port", c, site, resp.Status, b)
		}
	}
	return nil
}

// identitySide runs one case's rush: the buyers of sessions click in turn until the duration ends.
func identitySide(ctx context.Context, d *driver.Driver, o IdentityOptions, c string, round int, site, sale string, s StandinSessions) (IdentitySide, error) {
	// More requests than the rush can send (50 000/s: more than one gateway CPU answers on the
	// cheapest route): the duration ends it.
	n := int(o.Duration.Seconds()*50000) + 1
	headers := make([]http.Header, len(s.Users))
	for i, u := range s.Users {
		if c == IdentityDemo {
			headers[i] = http.Header{"X-User-Id": {u}}
		} else {
			headers[i] = http.Header{"Cookie": {StandinCookie + "=" + s.Tokens[i]}}
		}
	}
	url := site + "/seckill/" + sale + "/token"
	reqs := make([]load.Request, n)
	for i := range n {
		u := i % len(s.Users)
		reqs[i] = load.Request{Method: http.MethodPost, URL: url, Header: headers[u], Kind: "token", User: s.Users[u]}
	}
	client := load.NewClient(o.Client, o.Conns)
	// The warm-up opens the connections before the counters are read (/healthz is outside
	// identity, so it asks the stand-in nothing).
	load.Warm(ctx, client, site+"/healthz", o.Conns)
	before, err := o.Standin.Calls(ctx)
	if err != nil {
		return IdentitySide{}, err
	}
	done := func() {}
	if o.AroundRush != nil {
		done = o.AroundRush(fmt.Sprintf("%s-r%d", c, round))
	}
	cpu := d.ReadCPU()
	r := load.Execute(ctx, load.Run{Name: c, Model: load.Model{Connections: o.Conns}, Requests: reqs, Duration: o.Duration, Client: client})
	per := d.PerRequest(cpu, r)
	done()
	after, err := o.Standin.Calls(ctx)
	if err != nil {
		return IdentitySide{}, err
	}
	p := load.PercentilesOf(r.Latency)
	return IdentitySide{Case: c, Round: round, Sessions: min(len(s.Users), r.Completed), Completed: r.Completed, OK: r.Outcomes["ok"],
		ElapsedS: r.Elapsed.Seconds(), Throughput: r.Throughput, P50ms: p.P50, P99ms: p.P99, CPU: per,
		SessionCalls: after.Session - before.Session, JWKSCalls: after.JWKS - before.JWKS, Outcomes: r.Outcomes}, nil
}

// The targets of identity at the edge (docs/bench.md, "Identity at the edge").
const (
	// JWTGatewayRatioTarget: local JWT costs the gateway at most this many times the demo path
	// per request.
	JWTGatewayRatioTarget = 1.15
)

// SummarizeIdentity reduces the rushes to one row per case (in cases' order) and checks the
// targets: local JWT at most 1.15x the demo path's gateway CPU per request and no session
// call during its rushes; cached forward_auth at most one call per session per TTL.
func SummarizeIdentity(sides []IdentitySide, cases []string, ttl time.Duration) ([]IdentityCaseSummary, []IdentityTarget) {
	demo := map[int]IdentitySide{}
	for _, s := range sides {
		if s.Case == IdentityDemo {
			demo[s.Round] = s
		}
	}
	ratio := func(a, b float64) (float64, bool) {
		if b <= 0 {
			return 0, false
		}
		return a / b, true
	}
	var out []IdentityCaseSummary
	var perSessionTTL []float64 // cached forward_auth: calls / (sessions x TTL windows), per round
	for _, c := range cases {
		sum := IdentityCaseSummary{Case: c, Label: IdentityLabel(c)}
		var thr, p99, gw, st, tot, rd, calls, cps, gwr, totr []float64
		var completed, ok int
		for _, s := range sides {
			if s.Case != c {
				continue
			}
			sum.Rounds++
			thr, p99 = append(thr, s.Throughput), append(p99, s.P99ms)
			gw, st, tot, rd = append(gw, s.CPU["gateway"]), append(st, s.CPU["standin"]), append(tot, s.Identity()), append(rd, s.CPU["redis"])
			calls = append(calls, float64(s.SessionCalls))
			sum.MaxSessionCalls = max(sum.MaxSessionCalls, s.SessionCalls)
			sum.JWKSCalls += s.JWKSCalls
			completed, ok = completed+s.Completed, ok+s.OK
			if s.Sessions > 0 {
				cps = append(cps, float64(s.SessionCalls)/float64(s.Sessions))
			}
			if dm, found := demo[s.Round]; found {
				if v, ok := ratio(s.CPU["gateway"], dm.CPU["gateway"]); ok {
					gwr = append(gwr, v)
				}
				if v, ok := ratio(s.Identity(), dm.Identity()); ok {
					totr = append(totr, v)
				}
			}
			if c == IdentitySession && s.Sessions > 0 && ttl > 0 {
				windows := math.Ceil(s.ElapsedS / ttl.Seconds())
				perSessionTTL = append(perSessionTTL, float64(s.SessionCalls)/(float64(s.Sessions)*max(windows, 1)))
			}
		}
		if sum.Rounds == 0 {
			continue
		}
		sum.Throughput, sum.P99ms = driver.Median(thr), driver.Median(p99)
		sum.GatewayUs, sum.StandinUs, sum.TotalUs, sum.RedisUs = driver.Median(gw), driver.Median(st), driver.Median(tot), driver.Median(rd)
		sum.GatewayRatio, sum.TotalRatio = driver.Median(gwr), driver.Median(totr)
		sum.SessionCalls, sum.CallsPerSession = driver.Median(calls), driver.Median(cps)
		if completed > 0 {
			sum.OKShare = float64(ok) / float64(completed)
		}
		out = append(out, sum)
	}
	var targets []IdentityTarget
	for _, s := range out {
		switch s.Case {
		case IdentityJWT:
			if len(demo) > 0 {
				targets = append(targets, IdentityTarget{Name: "local JWT: gateway CPU per request against the demo path's (median of the rounds' ratios)",
					Want: fmt.Sprintf("<= %.2fx", JWTGatewayRatioTarget), Got: fmt.Sprintf("%.2fx", s.GatewayRatio), Met: s.GatewayRatio > 0 && s.GatewayRatio <= JWTGatewayRatioTarget})
			}
			targets = append(targets, IdentityTarget{Name: "local JWT: session-service calls during the rush (most in one round)",
				Want: "0", Got: fmt.Sprintf("%d (JWKS fetches: %d)", s.MaxSessionCalls, s.JWKSCalls), Met: s.MaxSessionCalls == 0})
		case IdentitySession:
			worst := 0.0
			for _, v := range perSessionTTL {
				worst = max(worst, v)
			}
			targets = append(targets, IdentityTarget{Name: fmt.Sprintf("cached forward_auth: session-service calls per session per TTL (%s; worst round)", ttl),
				Want: "<= 1", Got: fmt.Sprintf("%.3f", worst), Met: len(perSessionTTL) > 0 && worst <= 1})
		}
	}
	return out, targets
}
