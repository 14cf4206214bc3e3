// Package report builds, signs, stores and serves a sale's fairness report (docs/operator.md,
// "The fairness report"). When a sale has ended the publisher reads the room's queue and log
// from Redis (or a draw's entries and waves from Postgres) and the orders from Postgres, writes
// them as the evidence (contract/report), computes the report's figures from that evidence, runs
// the permutation check (or the draw's and its beacon's), signs the canonical
// report with the backend's Ed25519 key and stores report and evidence once: a published report
// is never replaced (the table refuses UPDATE and DELETE). The order listener serves the report,
// its evidence and the public keys; `seckill-bench verify-report` checks them from the
// published data alone.
package report

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	rep "github.com/seckilledge/seckill/contract/report"
	"github.com/seckilledge/seckill/internal/invariants"
)

// DemoKey is the demo's signing key (SECKILL_REPORT_KEY=demo, what `make run` sets): its
// private half is in this source, so a report it signs proves nothing. The key set marks it
// "demo", the report says "demo_key", and the page says so.
const DemoKey = "ZGVtby1vbmx5LXNlY2tpbGwtcmVwb3J0LWtleS0wMDE"

// Key is the backend's signing key.
type Key struct {
	Private ed25519.PrivateKey
	Demo    bool
}

// ParseKey reads SECKILL_REPORT_KEY: base64 (standard or URL alphabet, padded or not) of a
// 32-byte Ed25519 seed, or "demo" for DemoKey. "" is no key: no report is published.
func ParseKey(v string) (*Key, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	demo := v == "demo"
	if demo {
		v = DemoKey
	}
	var seed []byte
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
		if b, err := enc.DecodeString(v); err == nil {
			seed = b
			break
		}
	}
	if len(seed) != ed25519.SeedSize {
		return nil, errors.New("SECKILL_REPORT_KEY must be the base64 of a 32-byte Ed25519 seed (or \"demo\")")
	}
	return &Key{Private: ed25519.NewKeyFromSeed(seed), Demo: demo}, nil
}

// Publisher builds and publishes the reports.
type Publisher struct {
	Pool  *pgxpool.Pool
	Redis redis.UniversalClient
	Key   *Key // nil: no report is published
	Log   *slog.Logger
	Now   func() time.Time
	// Delay is how long after a sale's end its report is built (orders still in flight land
	// first; 0: DefaultDelay).
	Delay time.Duration
	// Retention is how long a sale's Redis keys outlive its end: a sale ended longer ago than
	// this is not reported (its evidence is gone).
	Retention time.Duration
	// Page renders the report's page for GET /seckill/{sale}/report with Accept: text/html
	// (nil: the JSON only).
	Page func(w http.ResponseWriter, r *http.Request, s rep.Signed)
}

// DefaultDelay is the report's delay after the sale's end when none is set.
const DefaultDelay = 30 * time.Second

// Errors of Publish.
var (
	ErrNotEnded   = errors.New("the sale has not ended")
	ErrNoKey      = errors.New("no report signing key (SECKILL_REPORT_KEY)")
	ErrUnknown    = errors.New("no such sale")
	ErrNoEvidence = errors.New("the sale's room is gone from Redis: nothing to report from")
)

func (p *Publisher) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// sale is what Postgres says of a sale.
type sale struct {
	id           string
	units        int64
	starts, ends time.Time
	hasRoom      bool
	isDraw       bool
}

func (p *Publisher) readSale(ctx context.Context, id string) (sale, error) {
	s := sale{id: id}
	err := p.Pool.QueryRow(ctx, `SELECT initial_stock, starts_at, ends_at, room IS NOT NULL,
		EXISTS (SELECT 1 FROM draws d WHERE d.sale_id = sales.id) FROM sales WHERE id = $1`, id).
		Scan(&s.units, &s.starts, &s.ends, &s.hasRoom, &s.isDraw)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, ErrUnknown
	}
	return s, err
}

// Publish builds, signs and stores the report of an ended sale, once: it answers false when
// the report was already published (by this or another instance; the first stays).
func (p *Publisher) Publish(ctx context.Context, id string) (bool, error) {
	if p.Key == nil {
		return false, ErrNoKey
	}
	s, err := p.readSale(ctx, id)
	if err != nil {
		return false, err
	}
	if p.now().Before(s.ends) {
		return false, ErrNotEnded
	}
	var exists bool
	if err := p.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sale_reports WHERE sale_id = $1)`, id).Scan(&exists); err != nil || exists {
		return false, err
	}
	r, evidence, err := p.Build(ctx, s)
	if err != nil {
		return false, err
	}
	signed, err := rep.Sign(r, p.Key.Private)
	if err != nil {
		return false, err
	}
	pub := p.Key.Private.Public().(ed25519.PublicKey)
	tx, err := p.Pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO report_keys (kid, public_key, demo) VALUES ($1, $2, $3) ON CONFLICT (kid) DO NOTHING`,
		signed.Signature.Kid, base64.RawURLEncoding.EncodeToString(pub), p.Key.Demo); err != nil {
		return false, err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO sale_reports (sale_id, report, kid, signature, evidence) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (sale_id) DO NOTHING`, id, []byte(signed.Report), signed.Signature.Kid, signed.Signature.Value, evidence)
	if err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	if tag.RowsAffected() == 1 && p.Log != nil {
		p.Log.Info("fairness report published", "sale", id, "entrants", r.Figures.Entrants, "evidence_bytes", len(evidence))
	}
	return tag.RowsAffected() == 1, nil
}

// settings are the room hash's fields that are settings or secrets, not counters.
var settings = map[string]bool{"seed": true, "ekey": true, "commitment": true, "rate": true, "oversubscribe": true,
	"session_ms": true, "prequeue_ms": true, "difficulty_min": true, "difficulty_max": true, "max_waiters": true,
	"units": true, "presence": true, "presence_ms": true, "claim_ms": true, "oversubscribe_max": true, "last_ms": true,
	"paused_ms": true, "rate_s": true, "rate_cur": true, "rate_prev": true, "allow": true}

// chunk is how many queue members or log entries one Redis call reads.
const chunk = 10000

// Build reads the sale's evidence and computes its report (unsigned).
func (p *Publisher) Build(ctx context.Context, s sale) (*rep.Report, []byte, error) {
	r := &rep.Report{Version: rep.Version, Sale: s.id, Mode: "plain", BuiltAt: p.now().UTC().Format("2006-01-02T15:04:05.000Z"),
		Timeline: rep.Timeline{Starts: rep.FormatMS(s.starts.UnixMilli()), Ends: rep.FormatMS(s.ends.UnixMilli())},
		Figures:  rep.Figures{Units: s.units}, DemoKey: p.Key != nil && p.Key.Demo}
	r.Checks.Beacon = rep.Result{Result: rep.NotApplicable, Detail: "a sale without a draw names no beacon"}
	r.Checks.Permutation = rep.Result{Result: rep.NotApplicable, Detail: "a sale without a room has no queue"}
	var ev bytes.Buffer
	var entryOf func(user string) string
	if s.isDraw {
		// A draw has no room: its evidence is the draw's, from Postgres.
		r.Checks.Permutation.Detail = "a draw sale has no queue"
		entries, err := p.writeDraw(ctx, s, r, &ev)
		if err != nil {
			return nil, nil, err
		}
		anonymous := p.anonymous(s.id)
		entryOf = func(user string) string {
			if id, ok := entries[user]; ok {
				return id
			}
			return anonymous(user)
		}
		return p.finish(ctx, s, r, &ev, entryOf)
	}
	room, err := p.Redis.HGetAll(ctx, contract.RoomKey(s.id)).Result()
	if err != nil && err != redis.Nil {
		return nil, nil, err
	}
	if room["seed"] == "" && s.hasRoom {
		return nil, nil, ErrNoEvidence
	}
	if room["seed"] != "" {
		r.Mode = "room"
		ekey, err := hex.DecodeString(room["ekey"])
		if err != nil {
			return nil, nil, fmt.Errorf("report: the room's entry key: %w", err)
		}
		entryOf = entryIDs(ekey, s.id)
		r.Evidence.Seed, r.Evidence.Commitment = room["seed"], room["commitment"]
		if ms, err := strconv.ParseInt(room["prequeue_ms"], 10, 64); err == nil {
			r.Timeline.PrequeueFrom = rep.FormatMS(s.starts.UnixMilli() - ms)
		}
		r.Counters = map[string]int64{}
		for k, v := range room {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && !settings[k] {
				r.Counters[k] = n
			}
		}
		if n, ok := r.Counters["flagged"]; ok {
			r.Flagged = &rep.Flagged{Count: n}
		}
		for k, n := range r.Counters {
			if lane, counter, ok := strings.Cut(strings.TrimPrefix(k, "lane:"), ":"); ok && strings.HasPrefix(k, "lane:") {
				if r.Lanes == nil {
					r.Lanes = map[string]rep.Lane{}
				}
				if r.Lanes[lane] == nil {
					r.Lanes[lane] = rep.Lane{}
				}
				r.Lanes[lane][counter] = n
			}
		}
		if err := p.writeQueues(ctx, s.id, room["lanes"], &ev); err != nil {
			return nil, nil, err
		}
		if err := p.writeLog(ctx, s.id, &ev, entryOf); err != nil {
			return nil, nil, err
		}
	} else {
		entryOf = p.anonymous(s.id)
	}
	return p.finish(ctx, s, r, &ev, entryOf)
}

// anonymous names the buyers of a sale without entry ids (no room) by a keyed hash of (sale,
// user) under a key nobody keeps, so the evidence reveals no user id.
func (p *Publisher) anonymous(sale string) func(string) string {
	key := make([]byte, 32)
	sum := sha256.Sum256(append([]byte("seckill-report-anonymous\x00"+sale+"\x00"), p.Key.Private.Seed()...))
	copy(key, sum[:])
	return entryIDs(key, sale)
}

// finish writes the orders after the queue and log (or the draw) in ev, computes the report's
// figures from the whole evidence and runs the mode's checks.
func (p *Publisher) finish(ctx context.Context, s sale, r *rep.Report, ev *bytes.Buffer, entryOf func(string) string) (*rep.Report, []byte, error) {
	if err := p.writeOrders(ctx, s.id, ev, entryOf); err != nil {
		return nil, nil, err
	}
	evidence := ev.Bytes()
	c := rep.Compute(evidence, s.units)
	c.Apply(r)
	d := rep.Digest(evidence)
	r.Evidence.SHA256, r.Evidence.Lines, r.Evidence.Bytes = d.SHA256, d.Lines, d.Bytes
	switch r.Mode {
	case "room":
		r.Checks.Permutation = PermutationCheck(r.Evidence.Commitment, r.Evidence.Seed, c)
	case "draw":
		dc := DrawCheck(r, c)
		r.Checks.Draw = &dc
		r.Checks.Beacon = BeaconCheck(r)
	}
	return r, evidence, nil
}

// PermutationCheck is the report's permutation check: the seed opens the commitment, the
// pre-queue is ordered by HMAC-SHA256(seed, entry id), and every admission was the queue's
// next place or a passed waiter's return. The builder and the checker both run it.
func PermutationCheck(commitment, seed string, c rep.Computed) rep.Result {
	var problems []string
	if len(c.Lanes) == 0 {
		problems = invariants.RoomOrderProblems(commitment, seed, c.Prequeue)
	} else {
		// A room with lanes: each lane's pre-queue is ranked by the same committed seed.
		problems = invariants.RoomOrderProblems(commitment, seed, nil)
		for _, lane := range c.Lanes {
			for _, pr := range invariants.RoomOrderProblems(commitment, seed, c.LanePrequeues[lane]) {
				if !strings.HasPrefix(pr, "SHA-256") {
					problems = append(problems, "lane "+lane+": "+pr)
				}
			}
		}
	}
	problems = append(problems, c.Problems...)
	if len(problems) > 0 {
		if len(problems) > 5 {
			problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
		}
		return rep.Result{Result: rep.Fail, Detail: strings.Join(problems, "; ")}
	}
	if len(c.Lanes) > 0 {
		n := 0
		for _, l := range c.Lanes {
			n += len(c.LanePrequeues[l])
		}
		return rep.Result{Result: rep.Pass, Detail: fmt.Sprintf("the seed opens the commitment; %d lanes (%s), %d pre-queue places, each lane's in the order of HMAC-SHA256(seed, entry_id); %d admissions, each in its lane's order",
			len(c.Lanes), strings.Join(c.Lanes, ", "), n, c.Figures.Admitted)}
	}
	return rep.Result{Result: rep.Pass, Detail: fmt.Sprintf("the seed opens the commitment; %d pre-queue places in the order of HMAC-SHA256(seed, entry_id); %d admissions in the queue's order",
		len(c.Prequeue), c.Figures.Admitted)}
}

// entryIDs maps a user to the room's public entry id (docs/room.md, "Entry id").
func entryIDs(ekey []byte, sale string) func(string) string {
	return func(user string) string {
		id := contract.RoomEntryID(ekey, sale, user)
		return base64.RawURLEncoding.EncodeToString(id[:])
	}
}

// writeQueues writes the room's queue, or with lanes each lane's queue in the lanes' order,
// each place with its lane (contract/report, "q:").
func (p *Publisher) writeQueues(ctx context.Context, id, lanes string, ev *bytes.Buffer) error {
	if lanes == "" {
		return p.writeQueue(ctx, contract.RoomQueueKey(id), "", ev)
	}
	for _, part := range strings.Split(lanes, ",")[1:] {
		f := strings.SplitN(part, ":", 3)
		if len(f) < 2 {
			return fmt.Errorf("report: the room's lanes field %q", lanes)
		}
		key := contract.RoomLaneQueueKey(id, f[0])
		if f[1] == "public" {
			key = contract.RoomQueueKey(id)
		}
		if err := p.writeQueue(ctx, key, f[0], ev); err != nil {
			return err
		}
	}
	return nil
}

func (p *Publisher) writeQueue(ctx context.Context, key, lane string, ev *bytes.Buffer) error {
	for start := int64(0); ; start += chunk {
		zs, err := p.Redis.ZRangeWithScores(ctx, key, start, start+chunk-1).Result()
		if err != nil && err != redis.Nil {
			return fmt.Errorf("report: read the queue: %w", err)
		}
		for _, z := range zs {
			m, _ := z.Member.(string)
			if len(m) <= 48 {
				continue
			}
			ev.WriteString("q:")
			ev.WriteString(strconv.FormatInt(int64(z.Score), 10))
			ev.WriteByte(':')
			ev.WriteString(base64.RawURLEncoding.EncodeToString([]byte(m[32:48])))
			if lane != "" {
				ev.WriteByte(':')
				ev.WriteString(lane)
			}
			ev.WriteByte('\n')
		}
		if len(zs) < chunk {
			return nil
		}
	}
}

func (p *Publisher) writeLog(ctx context.Context, id string, ev *bytes.Buffer, entryOf func(string) string) error {
	key := contract.RoomLogKey(id)
	for start := int64(0); ; start += chunk {
		lines, err := p.Redis.LRange(ctx, key, start, start+chunk-1).Result()
		if err != nil && err != redis.Nil {
			return fmt.Errorf("report: read the room's log: %w", err)
		}
		for _, l := range lines {
			parts := strings.SplitN(l, ":", 5)
			if len(parts) < 4 || len(parts[0]) != 1 || strings.ContainsAny(l, "\n") {
				continue
			}
			user := parts[3]
			entry := "-"
			if user != "-" && user != "" {
				entry = entryOf(user)
			}
			ev.WriteString(parts[0] + ":" + parts[1] + ":" + parts[2] + ":" + entry + "\n")
		}
		if len(lines) < chunk {
			return nil
		}
	}
}

func (p *Publisher) writeOrders(ctx context.Context, id string, ev *bytes.Buffer, entryOf func(string) string) error {
	rows, err := p.Pool.Query(ctx, `SELECT user_id, status, quantity, coalesce(reason, ''), accepted_at FROM orders
		WHERE sale_id = $1 ORDER BY accepted_at, order_id`, id)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var user, status, reason string
		var qty int64
		var at time.Time
		if err := rows.Scan(&user, &status, &qty, &reason, &at); err != nil {
			return err
		}
		reason = strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, reason)
		fmt.Fprintf(ev, "o:%d:%s:%d:%s:%s\n", at.UnixMilli(), status, qty, entryOf(user), reason)
	}
	return rows.Err()
}

// Run publishes the report of every sale that ended at least Delay ago (and within the Redis
// retention), every interval, until ctx ends. Instances may run it side by side: the first
// insert of a report wins, the others write nothing.
func (p *Publisher) Run(ctx context.Context, interval time.Duration) {
	if p.Key == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		p.publishDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Publisher) publishDue(ctx context.Context) {
	delay, retention := p.Delay, p.Retention
	if delay <= 0 {
		delay = DefaultDelay
	}
	if retention <= 0 {
		retention = 24 * time.Hour
	}
	now := p.now()
	rows, err := p.Pool.Query(ctx, `SELECT id FROM sales s WHERE ends_at <= $1 AND ends_at > $2
		AND NOT EXISTS (SELECT 1 FROM sale_reports r WHERE r.sale_id = s.id) ORDER BY ends_at LIMIT 20`,
		now.Add(-delay), now.Add(-retention))
	if err != nil {
		return
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, id := range ids {
		if _, err := p.Publish(ctx, id); err != nil && ctx.Err() == nil && p.Log != nil {
			p.Log.Warn("fairness report not published", "sale", id, "err", err)
		}
	}
}

// EntryID is the entry id of a place's 16 raw bytes (base64url, as the queue's member holds them).
func EntryID(raw []byte) string { return base64.RawURLEncoding.EncodeToString(raw) }
