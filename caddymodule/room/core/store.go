package core

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	throttlecore "github.com/seckilledge/seckill/caddymodule/throttle/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// RedisStore is the Store of a real Redis (or Cluster: every key of a call shares the sale's
// hash tag).
type RedisStore struct {
	Client   redis.UniversalClient
	Defaults Settings
}

// Room reads the room hash and the sale's window in one pipeline.
func (s RedisStore) Room(ctx context.Context, sale string) (SaleRoom, bool, error) {
	var r SaleRoom
	pipe := s.Client.Pipeline()
	roomCmd := pipe.HGetAll(ctx, contract.RoomKey(sale))
	metaCmd := pipe.HMGet(ctx, contract.MetaKey(sale), "starts_ms", "ends_ms")
	timeCmd := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return r, false, err
	}
	h := roomCmd.Val()
	m := metaCmd.Val()
	if h["seed"] == "" || len(m) != 2 || m[0] == nil || m[1] == nil {
		return r, false, nil
	}
	var err error
	if r.Seed, err = hex.DecodeString(h["seed"]); err != nil {
		return r, false, fmt.Errorf("room of %s: bad seed: %w", sale, err)
	}
	if r.EntryKey, err = hex.DecodeString(h["ekey"]); err != nil {
		return r, false, fmt.Errorf("room of %s: bad entry key: %w", sale, err)
	}
	r.Commitment = h["commitment"]
	r.Starts = time.UnixMilli(atoi(m[0].(string)))
	r.Ends = time.UnixMilli(atoi(m[1].(string)))
	r.Settings = s.Defaults
	if v, err := strconv.ParseFloat(h["rate"], 64); err == nil && v > 0 {
		r.Rate = v
	}
	if v, err := strconv.ParseFloat(h["oversubscribe"], 64); err == nil && v >= 1 {
		r.Oversubscribe = v
	}
	if v, err := strconv.ParseInt(h["session_ms"], 10, 64); err == nil && v > 0 {
		r.Session = time.Duration(v) * time.Millisecond
	}
	if v, err := strconv.ParseInt(h["prequeue_ms"], 10, 64); err == nil && v >= 0 {
		r.Prequeue = time.Duration(v) * time.Millisecond
	}
	dmin, errMin := strconv.Atoi(h["difficulty_min"])
	dmax, errMax := strconv.Atoi(h["difficulty_max"])
	if errMin == nil && errMax == nil {
		r.DifficultyMin, r.DifficultyMax = dmin, dmax
	}
	// max_waiters: the sale's own, else the Caddyfile's, else the built-in, which scales with
	// the stock the room was set up with ("units"; a room set up before that field was kept
	// gets the built-in's ceiling).
	if v, err := strconv.ParseInt(h["max_waiters"], 10, 64); err == nil && v > 0 {
		r.MaxWaiters = v
	} else if r.MaxWaiters <= 0 {
		r.MaxWaiters = MaxDefaultWaiters
		if u, err := strconv.ParseInt(h["units"], 10, 64); err == nil {
			r.MaxWaiters = DefaultMaxWaiters(u)
		}
	}
	r.LaneMode, r.Lanes = ParseLanes(h["lanes"])
	r.EntryRate = EntryRateAt(timeCmd.Val().Unix(), atoi(h["rate_s"]), atoi(h["rate_cur"]), atoi(h["rate_prev"]))
	return r, true, nil
}

// Visit runs room_queue.lua.
func (s RedisStore) Visit(ctx context.Context, sale string, v Visit) (Reply, error) {
	op := "poll"
	switch {
	case v.Enter:
		op = "enter"
	case v.Leave:
		op = "leave"
	case v.Tick:
		op = "tick"
	}
	var nonceExp int64
	maxRate := int64(-1)
	if v.Nonce != "" {
		nonceExp = v.NonceExp.UnixMilli()
		maxRate = v.MaxRate
	}
	keys := []string{contract.MetaKey(sale), contract.RoomKey(sale), contract.RoomQueueKey(sale), contract.RoomLiveKey(sale), contract.RoomSpentKey(sale), contract.BuyersKey(sale),
		contract.RoomLogKey(sale), contract.RoomSeenKey(sale), contract.RoomAwayKey(sale), contract.RoomBackKey(sale), contract.TokensKey(sale), contract.RoomClaimKey(sale), contract.RoomIdleKey(sale),
		contract.RoomKeysKey(sale), contract.RoomFlaggedKey(sale)}
	args := []any{op, v.Member,
		strconv.FormatFloat(v.Settings.Rate, 'f', -1, 64), strconv.FormatFloat(v.Settings.Oversubscribe, 'f', -1, 64),
		v.Settings.Session.Milliseconds(), v.Settings.Prequeue.Milliseconds(), v.Nonce, nonceExp,
		v.Settings.MaxWaiters, maxRate, admitFlag(v.Admit, v.AdmitLease), v.Presence.Milliseconds(),
		max(v.Settings.ClaimWindow.Milliseconds(), 0), strconv.FormatFloat(v.Settings.MaxLive(), 'f', -1, 64)}
	if len(v.Settings.Lanes) > 0 {
		keys = append(keys, laneKeys(sale, v.Settings.Lanes)...)
	} else {
		keys = append(keys, contract.RoomDecidedKey(sale))
		if v.Tick && v.Decided >= 0 {
			args[1] = strconv.FormatInt(v.Decided, 10)
		}
	}
	if v.Enter {
		flag := ""
		if v.Flag {
			flag = "1"
		}
		args = append(args, v.JKT, flag)
		if len(v.Settings.Lanes) > 0 {
			args = append(args, v.Lane, v.CodeHash)
		}
	}
	for _, u := range v.Present {
		args = append(args, u.User, u.For.Milliseconds())
	}
	if len(v.Revoke) > 0 {
		args[0] = "revoke"
		for _, b := range v.Revoke {
			args = append(args, b.Member, b.Until.UnixMilli())
		}
	}
	res, err := lua.RoomQueue.Run(ctx, s.Client, keys, args...).Slice()
	if err != nil {
		return Reply{}, err
	}
	return parseReply(res)
}

// admitFlag is the script's ARGV[11]: "0" skips the admission step; the lease in ms (above 1)
// runs it unless a step ran for the sale within the lease; "1" runs it.
func admitFlag(admit bool, lease time.Duration) string {
	switch {
	case !admit:
		return "0"
	case lease.Milliseconds() > 1:
		return strconv.FormatInt(lease.Milliseconds(), 10)
	}
	return "1"
}

func parseReply(res []any) (Reply, error) {
	var r Reply
	if len(res) != 15 && len(res) != 16 {
		return r, fmt.Errorf("room_queue: %d values, want 15 or 16", len(res))
	}
	o, ok := res[0].(string)
	if !ok {
		return r, fmt.Errorf("room_queue: outcome %v", res[0])
	}
	n := make([]int64, 12)
	for i := range n {
		v, ok := res[i+1].(int64)
		if !ok {
			return r, fmt.Errorf("room_queue: value %d is %T", i+1, res[i+1])
		}
		n[i] = v
	}
	r.Outcome = Outcome(o)
	r.Position, r.Ahead = n[0], n[1]
	if n[2] > 0 {
		r.AdmittedUntil = time.UnixMilli(n[2])
	}
	r.Now = time.UnixMilli(n[3])
	r.Stock, r.Depth = n[4], n[5]
	r.Starts = time.UnixMilli(n[6])
	r.AdmittedNow, r.LapsedNow = n[7], n[8]
	r.EntryRate = n[9]
	r.Admitted = n[10]
	r.Cursor = n[11]
	checks, _ := res[13].([]any)
	for _, c := range checks {
		if u, ok := c.(string); ok {
			r.Checks = append(r.Checks, u)
		}
	}
	r.Revoked, _ = res[14].(int64)
	if len(res) == 16 {
		d, err := parseDecisions(res[15])
		if err != nil {
			return r, err
		}
		r.Decisions = d
	}
	return r, nil
}

// parseDecisions reads a tick's 16th value: {decided, gap, waitlist, element...}.
func parseDecisions(v any) (*Decisions, error) {
	l, ok := v.([]any)
	if !ok || len(l) < 3 {
		return nil, fmt.Errorf("room_queue: decisions %v", v)
	}
	var d Decisions
	var n [3]int64
	for i := range n {
		if n[i], ok = l[i].(int64); !ok {
			return nil, fmt.Errorf("room_queue: decisions value %d is %T", i, l[i])
		}
	}
	d.Count, d.Gap, d.Waitlist = n[0], n[1] == 1, n[2] == 1
	for _, e := range l[3:] {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("room_queue: decision %T", e)
		}
		d.Steps = append(d.Steps, s)
	}
	return &d, nil
}

// Banned reads the throttle's ban hashes (seckill:rl:{<zone>:<user>}:ban, field banned_until
// in Redis µs, lua/throttle.lua) of users in zones, in one pipeline: each key lives in its own
// slot, which room_queue.lua could not read on a Cluster. A user is banned while banned_until
// is after Redis TIME, read in the same pipeline.
func (s RedisStore) Banned(ctx context.Context, zones, users []string) (map[string]time.Time, error) {
	if len(zones) == 0 || len(users) == 0 {
		return nil, nil
	}
	pipe := s.Client.Pipeline()
	tm := pipe.Time(ctx)
	cmds := make([]*redis.StringCmd, 0, len(zones)*len(users))
	for _, u := range users {
		for _, z := range zones {
			cmds = append(cmds, pipe.HGet(ctx, contract.ThrottleBanKey(z, throttlecore.SafeKey(u)), "banned_until"))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, err
	}
	now := tm.Val()
	var out map[string]time.Time
	for i, c := range cmds {
		us, err := strconv.ParseInt(c.Val(), 10, 64)
		if err != nil {
			continue
		}
		until := time.UnixMicro(us)
		if !until.After(now) {
			continue
		}
		u := users[i/len(zones)]
		if out == nil {
			out = map[string]time.Time{}
		}
		if until.After(out[u]) {
			out[u] = until
		}
	}
	return out, nil
}

// Public reads the sale's stock and state, and Redis's clock.
func (s RedisStore) Public(ctx context.Context, sale string) (Public, error) {
	var p Public
	pipe := s.Client.Pipeline()
	m := pipe.HMGet(ctx, contract.MetaKey(sale), "stock", "state")
	tm := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return p, err
	}
	if v, ok := m.Val()[0].(string); ok {
		p.Stock = atoi(v)
	}
	if v, ok := m.Val()[1].(string); ok {
		p.State = v
	}
	p.Now = tm.Val()
	return p, nil
}

// Prequeue reads the pre-queue (score 0, ranked first: arrivals after the start score 1, 2,
// ...) in rank order: its size, and count members from index from, in one round trip. By
// index, not ZRANGEBYSCORE ... LIMIT, whose offset walks the set: a page costs
// O(log N + count) wherever it starts.
func (s RedisStore) Prequeue(ctx context.Context, sale string, from, count int64) ([]string, int64, error) {
	return s.prequeue(ctx, contract.RoomQueueKey(sale), from, count)
}

// LanePrequeue is Prequeue of a lane's queue.
func (s RedisStore) LanePrequeue(ctx context.Context, sale, lane string, from, count int64) ([]string, int64, error) {
	return s.prequeue(ctx, contract.RoomLaneQueueKey(sale, lane), from, count)
}

func (s RedisStore) prequeue(ctx context.Context, key string, from, count int64) ([]string, int64, error) {
	pipe := s.Client.Pipeline()
	n := pipe.ZCount(ctx, key, "0", "0")
	var page *redis.ZSliceCmd
	if count > 0 {
		page = pipe.ZRangeWithScores(ctx, key, from, from+count-1)
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, 0, err
	}
	if page == nil {
		return nil, n.Val(), nil
	}
	var members []string
	for _, z := range page.Val() {
		if m, ok := z.Member.(string); ok && z.Score == 0 {
			members = append(members, m)
		}
	}
	return members, n.Val(), nil
}

// CheckAdmission is the admission check of seckill_token's require_admission, as a separate
// round trip (lua/room_admission_check.lua): admitted reports a live admission of user to
// sale; hasRoom is false for a sale without a room, which require_admission leaves
// unaffected. An error means Redis did not answer: refuse with 503, never admit.
func CheckAdmission(ctx context.Context, client redis.Scripter, sale, user string) (admitted, hasRoom bool, until time.Time, err error) {
	res, err := lua.RoomAdmissionCheck.Run(ctx, client, []string{contract.RoomKey(sale), contract.RoomLiveKey(sale)}, user).Slice()
	if err != nil {
		return false, false, until, err
	}
	if len(res) != 2 {
		return false, false, until, fmt.Errorf("room_admission_check: %d values", len(res))
	}
	o, _ := res[0].(string)
	ms, _ := res[1].(int64)
	switch o {
	case "no_room":
		return false, false, until, nil
	case "admitted":
		return true, true, time.UnixMilli(ms), nil
	case "not_admitted":
		return false, true, until, nil
	}
	return false, false, until, fmt.Errorf("room_admission_check: outcome %v", res[0])
}

func atoi(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}
