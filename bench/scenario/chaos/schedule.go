package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/proc"
)

// Fault kinds.
const (
	GatewayKill     = "gateway-kill"     // kill -9 a gateway (while its relay holds outbox entries), start it again
	RabbitRestart   = "rabbitmq-restart" // rabbitmqctl stop, start again
	RabbitBlock     = "rabbitmq-block"   // memory alarm (watermark 0): publishers blocked, then cleared
	PostgresRestart = "postgres-restart" // pg_ctl stop -m fast, start again
	ConsumerKill    = "consumer-kill"    // kill -9 a backend (its consumer holds deliveries), start it again
	RedisStop       = "redis-stop"       // SIGTERM (Redis writes and fsyncs its AOF), start again
	RedisKill       = "redis-kill"       // kill -9 Redis (AOF everysec, no shutdown), start again
)

// Fault is one step of the schedule.
type Fault struct {
	Kind string
	// At is when the fault starts, from the first buyer's arrival (or from the recovery of
	// the After fault).
	At time.Duration
	// After, when set, is the kind of another fault of the schedule: this one starts At after
	// that one took effect (its part went down), e.g. kill a gateway while RabbitMQ's memory
	// alarm holds its relay's publish unconfirmed.
	After string
	// Down is how long the part stays down before it is started again.
	Down time.Duration
	// Target is the instance (gateway or backend index) for gateway-kill and consumer-kill.
	Target int
}

func (f Fault) String() string {
	switch {
	case f.Kind == GatewayKill && f.After == RabbitBlock:
		return fmt.Sprintf("kill -9 gateway-%d, its publish unconfirmed", f.Target+1)
	}
	switch f.Kind {
	case GatewayKill:
		return fmt.Sprintf("kill -9 gateway-%d", f.Target+1)
	case ConsumerKill:
		return fmt.Sprintf("kill -9 consumer (backend-%d)", f.Target+1)
	case RabbitRestart:
		return "restart RabbitMQ (clean)"
	case RabbitBlock:
		return "RabbitMQ blocks publishers (memory alarm)"
	case PostgresRestart:
		return "restart Postgres (fast stop)"
	case RedisStop:
		return "stop Redis (SIGTERM, AOF written)"
	case RedisKill:
		return "kill -9 Redis (AOF everysec)"
	}
	return f.Kind
}

// part names the process a fault acts on.
func (f Fault) part() string {
	switch f.Kind {
	case GatewayKill:
		return fmt.Sprintf("gateway-%d", f.Target)
	case ConsumerKill:
		return fmt.Sprintf("backend-%d", f.Target)
	case RabbitRestart, RabbitBlock:
		return "rabbitmq"
	case PostgresRestart:
		return "postgres"
	}
	return "redis"
}

// Schedule is the list of faults of a run.
type Schedule []Fault

// DefaultSchedule is `make chaos`: one of each fault in a 55 s sale. The first gateway is
// killed mid-sale; the second while RabbitMQ blocks publishers, so its relay dies holding a
// batch the broker never confirmed. RabbitMQ is then restarted (a clean restart takes 10 to
// 20 s on a busy two-core machine). The consumer is killed while Postgres is down, so it
// certainly dies holding deliveries it could not write. Redis is stopped while units remain.
func DefaultSchedule() Schedule {
	return Schedule{
		{Kind: GatewayKill, At: 3 * time.Second, Down: 3 * time.Second, Target: 0},
		{Kind: RabbitBlock, At: 6 * time.Second, Down: 6 * time.Second},
		{Kind: GatewayKill, After: RabbitBlock, At: time.Second, Down: 3 * time.Second, Target: 1},
		{Kind: RabbitRestart, At: 15 * time.Second, Down: 2 * time.Second},
		{Kind: PostgresRestart, At: 38 * time.Second, Down: 4 * time.Second},
		{Kind: ConsumerKill, At: 40 * time.Second, Down: 3 * time.Second, Target: 0},
		{Kind: RedisStop, At: 46 * time.Second, Down: 3 * time.Second},
	}
}

// ShortSchedule is the same faults packed into a 16 s sale, for `make test`.
func ShortSchedule() Schedule {
	return Schedule{
		{Kind: GatewayKill, At: 1500 * time.Millisecond, Down: 2 * time.Second, Target: 0},
		{Kind: RabbitBlock, At: 2500 * time.Millisecond, Down: 4 * time.Second},
		{Kind: GatewayKill, After: RabbitBlock, At: 500 * time.Millisecond, Down: 2 * time.Second, Target: 1},
		{Kind: RabbitRestart, At: 7 * time.Second, Down: time.Second},
		{Kind: PostgresRestart, At: 9 * time.Second, Down: 2500 * time.Millisecond},
		{Kind: ConsumerKill, At: 10 * time.Second, Down: 2 * time.Second, Target: 1},
		{Kind: RedisStop, At: 13 * time.Second, Down: 2 * time.Second},
	}
}

// ParseSchedule reads "kind@at+down[#target][^after],…", e.g.
// "gateway-kill@4s+3s#1,redis-stop@30s+4s,gateway-kill@0s+3s#2^rabbitmq-restart" (targets
// count from 1; ^kind makes at an offset from the moment that fault took effect).
func ParseSchedule(s string) (Schedule, error) {
	var out Schedule
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, rest, ok := strings.Cut(part, "@")
		if !ok {
			return nil, fmt.Errorf("fault %q: want kind@at+down", part)
		}
		f := Fault{Kind: kind}
		switch kind {
		case GatewayKill, RabbitRestart, RabbitBlock, PostgresRestart, ConsumerKill, RedisStop, RedisKill:
		default:
			return nil, fmt.Errorf("fault %q: unknown kind %q", part, kind)
		}
		if r, after, ok := strings.Cut(rest, "^"); ok {
			f.After, rest = after, r
			switch after {
			case GatewayKill, RabbitRestart, RabbitBlock, PostgresRestart, ConsumerKill, RedisStop, RedisKill:
			default:
				return nil, fmt.Errorf("fault %q: unknown kind %q after ^", part, after)
			}
		}
		if r, t, ok := strings.Cut(rest, "#"); ok {
			n, err := strconv.Atoi(t)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("fault %q: target must be 1, 2, …", part)
			}
			f.Target, rest = n-1, r
		}
		at, down, _ := strings.Cut(rest, "+")
		var err error
		if f.At, err = time.ParseDuration(at); err != nil {
			return nil, fmt.Errorf("fault %q: %w", part, err)
		}
		if down != "" {
			if f.Down, err = time.ParseDuration(down); err != nil {
				return nil, fmt.Errorf("fault %q: %w", part, err)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// Happened is what the schedule did for one fault, with the times that bound its effect.
type Happened struct {
	Fault
	// Start: the fault was begun. Down: the part was seen gone (process exited). Up: the
	// restart was begun. Recovered: the part answered again.
	Start, Down, Up, Recovered time.Time
	// Orphans are the order ids of the outbox entries a killed gateway's relay held pending
	// (read, not yet acknowledged) when it died.
	Orphans []string
	// PendingAtKill is what the gateway held according to XPENDING just before the kill.
	PendingAtKill int64
	// claimed is when the dead relay's pending list became empty (its entries claimed by a
	// live relay), zero until then.
	claimed *claimWatch
	// HeldBatch: a killed backend's log says it was retrying a batch write (Postgres down)
	// when it died: it held deliveries it had not acknowledged.
	HeldBatch bool
	// BuyersAfter is Redis's buyers hash (user -> order id) read as soon as a stopped or killed
	// Redis answered again: every decision acknowledged before it went down must be in it.
	BuyersAfter map[string]string
	Err         error
}

// execute runs one fault against the cluster.
func (c *Cluster) execute(ctx context.Context, rdb *redis.Client, sale string, f Fault, downed func()) (h Happened) {
	h.Fault = f
	fail := func(err error) Happened {
		h.Err = err
		if h.Recovered.IsZero() {
			h.Recovered = time.Now()
		}
		return h
	}
	var p *Proc
	switch f.Kind {
	case GatewayKill:
		if f.Target >= len(c.Gateways) {
			return fail(fmt.Errorf("no gateway %d", f.Target+1))
		}
		p = c.Gateways[f.Target]
	case ConsumerKill:
		if f.Target >= len(c.Backends) {
			return fail(fmt.Errorf("no backend %d", f.Target+1))
		}
		p = c.Backends[f.Target]
	case RabbitRestart, RabbitBlock:
		p = c.Rabbit
	case PostgresRestart:
		p = c.Postgres
	case RedisStop, RedisKill:
		p = c.Redis
	}
	h.Start = time.Now()
	var err error
	switch f.Kind {
	case GatewayKill:
		consumer := relayConsumer(p.PID())
		// Kill it mid-round: wait (up to 3 s) until its relay holds entries it has read and not
		// yet acknowledged, so the survivor has something to claim. (At a few hundred purchases
		// a second a relay round carries one or two entries: each 202 wakes the relay.)
		// Following a memory alarm, wait for an entry the broker has left unconfirmed for a
		// second: the relay is certainly stuck on it.
		var minIdle time.Duration
		if f.After == RabbitBlock {
			minIdle = time.Second
		}
		h.PendingAtKill = waitPending(ctx, rdb, sale, consumer, minIdle, 3*time.Second)
		err = p.Kill()
		h.Down = time.Now()
		downed()
		h.Orphans = pendingOrders(ctx, rdb, sale, consumer)
		if len(h.Orphans) > 0 {
			h.claimed = watchClaim(ctx, rdb, sale, consumer)
		}
	case RabbitBlock:
		// A relative watermark of 0 raises the memory alarm at once: the broker stops reading
		// from publishing connections; consumers go on.
		if p.ctl == nil {
			return fail(fmt.Errorf("%s: no control tool", f))
		}
		err = p.ctl(60*time.Second, "-q", "set_vm_memory_high_watermark", "0")
		h.Down = time.Now()
		downed()
		if err == nil {
			select {
			case <-ctx.Done():
				return fail(ctx.Err())
			case <-time.After(time.Until(h.Start.Add(f.Down))):
			}
			h.Up = time.Now()
			err = p.ctl(60*time.Second, "-q", "set_vm_memory_high_watermark", "0.4")
			h.Recovered = time.Now()
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %w", f, err))
		}
		return h
	case ConsumerKill:
		h.HeldBatch = heldBatch(p.Log)
		err = p.Kill()
		h.Down = time.Now()
		downed()
	case RedisKill:
		err = p.Kill()
		h.Down = time.Now()
		downed()
	default:
		err = p.Stop(ctx)
		h.Down = time.Now()
		downed()
	}
	if err != nil {
		return fail(fmt.Errorf("%s: %w", f, err))
	}
	select {
	case <-ctx.Done():
		return fail(ctx.Err())
	case <-time.After(time.Until(h.Start.Add(f.Down))):
	}
	h.Up = time.Now()
	if err := p.Start(ctx); err != nil {
		return fail(err)
	}
	h.Recovered = time.Now()
	if f.Kind == RedisStop || f.Kind == RedisKill {
		if b, err := rdb.HGetAll(ctx, contract.BuyersKey(sale)).Result(); err == nil {
			h.BuyersAfter = b
		} else {
			h.Err = fmt.Errorf("read the buyers after the restart: %w", err)
		}
	}
	return h
}

// relayConsumer is a gateway's name in the outbox consumer groups (caddymodule/gate: the host
// name and the process id).
func relayConsumer(pid int) string {
	host, _ := os.Hostname()
	if host == "" {
		host = "gateway"
	}
	return host + "-" + strconv.Itoa(pid)
}

func waitPending(ctx context.Context, rdb *redis.Client, sale, consumer string, minIdle, limit time.Duration) int64 {
	deadline := time.Now().Add(limit)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if minIdle > 0 {
			ps, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: contract.OutboxKey(sale), Group: relayGroup,
				Idle: minIdle, Start: "-", End: "+", Count: 1000, Consumer: consumer}).Result()
			if err == nil && len(ps) > 0 {
				return int64(len(ps))
			}
		} else {
			p, err := rdb.XPending(ctx, contract.OutboxKey(sale), relayGroup).Result()
			if err == nil && p.Consumers[consumer] > 0 {
				return p.Consumers[consumer]
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0
}

// relayGroup is the outbox consumer group (caddymodule/gate/core.RelayGroup; not imported, to keep
// Caddy out of this package's dependencies).
const relayGroup = "relay"

func pendingOrders(ctx context.Context, rdb *redis.Client, sale, consumer string) []string {
	key := contract.OutboxKey(sale)
	ps, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: relayGroup, Start: "-", End: "+", Count: 100000, Consumer: consumer}).Result()
	if err != nil {
		return nil
	}
	var ids []string
	for _, p := range ps {
		msgs, err := rdb.XRangeN(ctx, key, p.ID, p.ID, 1).Result()
		if err == nil && len(msgs) == 1 {
			if o, ok := msgs[0].Values["o"].(string); ok {
				ids = append(ids, o)
			}
		}
	}
	return ids
}

// runSchedule starts every fault at its time (faults may overlap) and returns what happened,
// in schedule order, once all are over.
func (c *Cluster) runSchedule(ctx context.Context, rdb *redis.Client, sale string, start time.Time, s Schedule, logf func(string, ...any)) []Happened {
	out := make([]Happened, len(s))
	// down[kind] is closed when the first fault of that kind took effect (for After).
	down := map[string]chan struct{}{}
	for _, f := range s {
		if down[f.Kind] == nil {
			down[f.Kind] = make(chan struct{})
		}
	}
	first := map[string]int{}
	for i := len(s) - 1; i >= 0; i-- {
		first[s[i].Kind] = i
	}
	// Faults on the same part never overlap: a later one waits until the earlier one is over
	// (a slow rabbitmqctl must not clear a memory alarm on a node being restarted).
	parts := map[string]*sync.Mutex{}
	for _, f := range s {
		if parts[f.part()] == nil {
			parts[f.part()] = &sync.Mutex{}
		}
	}
	var wg sync.WaitGroup
	for i, f := range s {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			downed := func() {
				if first[f.Kind] == i {
					once.Do(func() { close(down[f.Kind]) })
				}
			}
			defer downed() // also when the fault could not be carried out
			from := start
			if f.After != "" {
				done, ok := down[f.After]
				if !ok {
					out[i] = Happened{Fault: f, Err: fmt.Errorf("no %s fault to follow", f.After)}
					return
				}
				select {
				case <-ctx.Done():
				case <-done:
				}
				from = time.Now()
			}
			select {
			case <-ctx.Done():
				out[i] = Happened{Fault: f, Err: ctx.Err()}
				return
			case <-time.After(time.Until(from.Add(f.At))):
			}
			parts[f.part()].Lock()
			defer parts[f.part()].Unlock()
			logf("t=%5.1fs  %s", time.Since(start).Seconds(), f)
			out[i] = c.execute(ctx, rdb, sale, f, downed)
			if out[i].Err != nil {
				logf("t=%5.1fs  %s FAILED: %v", time.Since(start).Seconds(), f, out[i].Err)
			} else {
				logf("t=%5.1fs  %s: back after %.1fs", time.Since(start).Seconds(), f, out[i].Recovered.Sub(out[i].Start).Seconds())
			}
		}()
	}
	wg.Wait()
	return out
}

// heldBatch reports whether a backend's log, since its last start, shows a batch write being
// retried (the consumer holds that batch's deliveries unacknowledged meanwhile).
func heldBatch(logPath string) bool {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndex(s, proc.StartMarker); i >= 0 {
		s = s[i:]
	}
	return strings.Contains(s, "batch write failed")
}

// claimWatch follows a dead relay's pending list until it is empty: a live relay claimed its
// entries (XAUTOCLAIM moves them to the claimer).
type claimWatch struct {
	mu sync.Mutex
	at time.Time
}

func (w *claimWatch) When() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

func watchClaim(ctx context.Context, rdb *redis.Client, sale, consumer string) *claimWatch {
	w := &claimWatch{}
	go func() {
		deadline := time.Now().Add(3 * time.Minute)
		for ctx.Err() == nil && time.Now().Before(deadline) {
			p, err := rdb.XPending(ctx, contract.OutboxKey(sale), relayGroup).Result()
			if err == nil && p.Consumers[consumer] == 0 {
				w.mu.Lock()
				w.at = time.Now()
				w.mu.Unlock()
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}
