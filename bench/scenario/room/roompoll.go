package room

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
)

// The waiting room's poll against Caddy's plain `respond`, in one run:
// N clients poll GET /seckill/{sale}/queue with valid tickets as fast as answers come, then
// the same load goes to the ceiling site, round after round. A poll near the front is one
// room_queue.lua call in Redis, one far from it none; the run counts the scripts and
// Redis commands per poll (the stack's Redis is private).

// PollOptions shape the poll benchmark.
type PollOptions struct {
	Users    int           // waiters holding a ticket (default 2000)
	Conns    int           // connections of the closed model (default 200)
	Duration time.Duration // each side of each round (default 5 s)
	Rounds   int           // alternations room/respond (default 3)
	Client   string        // load client (default raw)
	Logf     func(format string, a ...any)
}

// PollSide is one side of one round.
type PollSide struct {
	Completed  int                `json:"completed"`
	Throughput float64            `json:"throughput"`
	P50ms      float64            `json:"p50_ms"`
	P99ms      float64            `json:"p99_ms"`
	CPU        map[string]float64 `json:"cpu_us_per_request"`
	Outcomes   map[string]int     `json:"outcomes"`
}

// PollRound is one alternation.
type PollRound struct {
	Room    PollSide `json:"room"`
	Respond PollSide `json:"respond"`
	Ratio   float64  `json:"ratio"` // room / respond throughput
	// ScriptsPerPoll is the EVALSHA/EVAL calls Redis ran during the room side over its polls:
	// the round trips a poll costs (nothing else runs on the private Redis but the relay's and
	// this benchmark's few reads). RedisCommandsPerPoll counts every command, the script's
	// inner ones included.
	ScriptsPerPoll       float64 `json:"redis_scripts_per_poll"`
	RedisCommandsPerPoll float64 `json:"redis_commands_per_poll"`
}

// PollResult is the benchmark's answer: the rounds and their medians.
type PollResult struct {
	Date    time.Time      `json:"date"`
	Machine driver.Machine `json:"machine"`
	Users   int            `json:"users"`
	Conns   int            `json:"conns"`
	Rounds  []PollRound    `json:"rounds"`
	// Medians over the rounds.
	Ratio, RoomThroughput, RespondThroughput, RoomGatewayUs, RoomRedisUs, RespondGatewayUs, ScriptsPerPoll, RedisPerPoll float64
	// Waiting is how many polls answered `waiting` (all should: nobody is admitted).
	Waiting, Polls int
}

// RoomPoll runs the poll benchmark.
func RoomPoll(ctx context.Context, d *driver.Driver, o PollOptions) (*PollResult, error) {
	if o.Users <= 0 {
		o.Users = 2000
	}
	if o.Conns <= 0 {
		o.Conns = 200
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	// A started sale whose room admits almost nobody (0.001/s): every poll answers `waiting`.
	// The waiters beyond the front window (all but the first few, whose
	// entries after the start gave them placed tickets) are answered from the gateway's
	// memory, so this measures mostly the memory path; scripts and Redis commands per poll
	// show what still reaches Redis (the front's polls and one tick per sale per interval).
	sale := driver.SaleID("room-poll")
	now := time.Now().UTC()
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales", map[string]any{"id": sale, "stock": 1000,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
		"pay_within": "1h", "room": map[string]any{"rate": 0.001, "difficulty": [2]int{0, 0}}}); err != nil {
		return nil, fmt.Errorf("create sale: %w", err)
	}
	if err := d.Admin(ctx, http.MethodPost, "/admin/sales/"+sale+"/preheat", nil); err != nil {
		return nil, fmt.Errorf("preheat: %w", err)
	}
	tickets, err := enterAll(ctx, d, sale, o.Users, o.Conns)
	if err != nil {
		return nil, err
	}
	o.Logf("room poll: %d waiters entered sale %s; %d rounds of %s per side, %d connections", len(tickets), sale, o.Rounds, o.Duration, o.Conns)
	// More requests than the run can send: the duration ends each side.
	n := int(o.Duration.Seconds()*30000) + 1
	room, respond := make([]load.Request, n), make([]load.Request, n)
	headers := make([]http.Header, len(tickets))
	for u, tk := range tickets {
		headers[u] = http.Header{"X-User-Id": {tk[0]}, "X-Seckill-Ticket": {tk[1]}}
	}
	for i := range n {
		u := i % len(tickets)
		h := headers[u]
		room[i] = load.Request{Method: http.MethodGet, URL: d.Stack.Gateway + "/seckill/" + sale + "/queue", Header: h, Kind: "poll", User: tickets[u][0]}
		respond[i] = load.Request{Method: http.MethodGet, URL: d.Stack.Ceiling + "/", Header: h, Kind: "poll", User: tickets[u][0]}
	}
	res := &PollResult{Date: time.Now().UTC(), Machine: driver.ThisMachine(), Users: len(tickets), Conns: o.Conns}
	var mu sync.Mutex
	side := func(name string, reqs []load.Request, warm string) PollSide {
		cpu := d.ReadCPU()
		r := load.Execute(ctx, load.Run{Name: name, Model: load.Model{Connections: o.Conns}, Requests: reqs, Duration: o.Duration,
			Client: load.NewClient(o.Client, o.Conns), WarmURL: warm,
			OnResponse: func(_ load.Request, resp load.Response) {
				if name == "room" && resp.Status == http.StatusOK && strings.Contains(string(resp.Body), `"state":"waiting"`) {
					mu.Lock()
					res.Waiting++
					mu.Unlock()
				}
			}})
		p := load.PercentilesOf(r.Latency)
		return PollSide{Completed: r.Completed, Throughput: r.Throughput, P50ms: p.P50, P99ms: p.P99, CPU: d.PerRequest(cpu, r), Outcomes: r.Outcomes}
	}
	for i := range o.Rounds {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		before := redisCalls(ctx, d)
		var rd PollRound
		rd.Room = side("room", room, d.Stack.Gateway+"/healthz")
		rd.ScriptsPerPoll, rd.RedisCommandsPerPoll = perPoll(before, redisCalls(ctx, d), rd.Room.Completed)
		rd.Respond = side("respond", respond, d.Stack.Ceiling+"/")
		if rd.Respond.Throughput > 0 {
			rd.Ratio = rd.Room.Throughput / rd.Respond.Throughput
		}
		res.Polls += rd.Room.Completed
		o.Logf("round %d: room %.0f polls/s (gateway %.0f µs, redis %.0f µs per poll; %.3f scripts, %.1f Redis commands per poll), respond %.0f req/s (gateway %.0f µs): %.2fx",
			i+1, rd.Room.Throughput, rd.Room.CPU["gateway"], rd.Room.CPU["redis"], rd.ScriptsPerPoll, rd.RedisCommandsPerPoll, rd.Respond.Throughput, rd.Respond.CPU["gateway"], rd.Ratio)
		res.Rounds = append(res.Rounds, rd)
	}
	med := func(f func(PollRound) float64) float64 {
		v := make([]float64, len(res.Rounds))
		for i, r := range res.Rounds {
			v[i] = f(r)
		}
		return driver.Median(v)
	}
	res.Ratio = med(func(r PollRound) float64 { return r.Ratio })
	res.RoomThroughput = med(func(r PollRound) float64 { return r.Room.Throughput })
	res.RespondThroughput = med(func(r PollRound) float64 { return r.Respond.Throughput })
	res.RoomGatewayUs = med(func(r PollRound) float64 { return r.Room.CPU["gateway"] })
	res.RoomRedisUs = med(func(r PollRound) float64 { return r.Room.CPU["redis"] })
	res.RespondGatewayUs = med(func(r PollRound) float64 { return r.Respond.CPU["gateway"] })
	res.ScriptsPerPoll = med(func(r PollRound) float64 { return r.ScriptsPerPoll })
	res.RedisPerPoll = med(func(r PollRound) float64 { return r.RedisCommandsPerPoll })
	return res, nil
}

// enterAll puts n users in the sale's room and returns (user, ticket) pairs.
func enterAll(ctx context.Context, d *driver.Driver, sale string, n, conns int) ([][2]string, error) {
	reqs := make([]load.Request, n)
	for i := range n {
		u := fmt.Sprintf("%s-w%06d", sale, i)
		reqs[i] = load.Request{Method: http.MethodPost, URL: d.Stack.Gateway + "/seckill/" + sale + "/queue",
			Header: http.Header{"X-User-Id": {u}}, Kind: "enter", User: u}
	}
	var mu sync.Mutex
	var out [][2]string
	r := load.Execute(ctx, load.Run{Name: "enter", Model: load.Model{Connections: conns}, Requests: reqs, Client: load.NewClient("nethttp", conns),
		OnResponse: func(req load.Request, resp load.Response) {
			var b struct {
				Ticket string `json:"ticket"`
			}
			if resp.Status == http.StatusOK && json.Unmarshal(resp.Body, &b) == nil && b.Ticket != "" {
				mu.Lock()
				out = append(out, [2]string{req.User, b.Ticket})
				mu.Unlock()
			}
		}})
	if len(out) < n {
		return nil, fmt.Errorf("only %d of %d waiters entered the room (%v)", len(out), n, r.Outcomes)
	}
	return out, nil
}

// redisCalls reads INFO commandstats: the calls of every command, scripts' inner commands
// included (nil when unreadable).
func redisCalls(ctx context.Context, d *driver.Driver) map[string]int64 {
	s, err := d.Redis.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil
	}
	out := map[string]int64{}
	for _, line := range strings.Split(s, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		v, _, _ := strings.Cut(rest, ",")
		n, _ := strconv.ParseInt(v, 10, 64)
		out[name] = n
	}
	return out
}

// perPoll is (scripts run, commands run) per poll between two commandstats readings.
func perPoll(before, after map[string]int64, polls int) (scripts, commands float64) {
	if before == nil || after == nil || polls == 0 {
		return 0, 0
	}
	var s, c int64
	for name, n := range after {
		c += n - before[name]
		if strings.HasPrefix(name, "eval") {
			s += n - before[name]
		}
	}
	return float64(s) / float64(polls), float64(c) / float64(polls)
}
