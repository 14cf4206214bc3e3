package invariants

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// The four invariants of a sale with a waiting room (docs/DESIGN.md, 6-9), checked from what
// Redis keeps under the sale's hash tag:
//
//   - room            hash: seed, commitment, cursor (places admitted so far), admitted, the
//     sale's oversubscribe
//   - room:q          zset: one member per place, rank (32 bytes) || entry id (16) || user;
//     score 0 for the pre-queue, 1, 2, ... for arrivals after the start
//   - room:log        list: the room's history, in Redis order. "a:<ms>:<stock>:<user>" per
//     admission (room_queue.lua), "l:<ms>:<position>:<user>" per waiting place given up
//     (room_queue.lua, DELETE /queue), "s:<ms>:<last_seen>:<user>" per absent waiter whose place
//     the admission step passed (room_queue.lua with a presence window), "f:<ms>:0:<user>" per
//     flagged waiter's place it passed, "t:<ms>:<admitted_until>:<user>:<nonce>" per token
//     issued on a live admission (token_issue.lua with require_admission)
//   - tokens          hash: user -> "<nonce>:<exp>", the unused tokens
//
// and the users holding an order in Postgres. The log is the evidence the scripts leave
// expressly for this check: without it no afterwards check could tell the order of admissions
// nor whether a token was issued on a live one.
//
// A room with lanes (the room hash's field "lanes", docs/room.md "Lanes") keeps one queue per
// lane: room:q is the public lane's, room:q:<lane> another lane's, each walked by its own
// cursor ("cursor" for the public lane, "lane:<name>:cursor") and counted by
// "lane:<name>:admitted". The log is the room's one history; each of its entries belongs to the
// lane of its user's place, so the order is checked lane by lane.

// RoomOptions say what the verifier assumes of the gateways.
type RoomOptions struct {
	// RequireAdmission: the gateways' seckill_token has require_admission (every shipped
	// Caddyfile with a room does), so every token and order needs a live admission.
	RequireAdmission bool
	// Oversubscribe is the gateways' default, used when the sale sets none (0: 1.5).
	Oversubscribe float64
}

// roomEvent is one element of the room's log.
type roomEvent struct {
	kind  byte // 'a' admission, 'l' place given up, 's' place passed (absent), 'f' place passed (flagged), 't' token
	ms    int64
	n     int64 // a: the stock the script saw; l: the place's position; s: last seen (ms, 0: never); t: the admission's end (ms)
	user  string
	nonce string // t only
}

func parseRoomEvent(s string) (roomEvent, bool) {
	var e roomEvent
	parts := strings.SplitN(s, ":", 5)
	if len(parts) < 4 || len(parts[0]) != 1 {
		return e, false
	}
	e.kind = parts[0][0]
	var err1, err2 error
	e.ms, err1 = strconv.ParseInt(parts[1], 10, 64)
	e.n, err2 = strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return e, false
	}
	switch {
	case strings.IndexByte("alsrnhpf", e.kind) >= 0 && len(parts) == 4:
		e.user = parts[3]
	case e.kind == 't' && len(parts) == 5:
		e.user, e.nonce = parts[3], parts[4]
	case e.kind == 'a': // a user id has no colon (contract.ValidID); a 5th part is not ours
		return e, false
	default:
		return e, false
	}
	return e, e.user != ""
}

// roomPlace is one member of the queue.
type roomPlace struct {
	rank    []byte
	entryID string
	user    string
	pre     bool // score 0: entered before the start
}

// roomLane is one queue of the room: the one queue of a room without lanes, or one lane.
type roomLane struct {
	name     string // "" for the one queue of a room without lanes
	places   []roomPlace
	cursor   int64 // the places its admission walk passed
	admitted int64 // its admissions counter (lanes only)
}

// label names the lane in a problem ("" for a room without lanes).
func (l roomLane) label() string {
	if l.name == "" {
		return ""
	}
	return "lane " + l.name + ": "
}

// roomState is what the room checks read, in one snapshot.
type roomState struct {
	seedHex, commitment string
	cursor, admitted    int64
	presenceMS          int64 // the window absent waiters were judged by (0: no presence rule)
	// presenceUntil: the s: entries carry each waiter's own deadline (room hash presence =
	// "until"): the time until which his last answer made him present.
	presenceUntil bool
	over          float64
	// Conversion-aware admission (the room hash's claim_ms, oversubscribe_max):
	// no-shows (n:) hold no capacity, the holds (h:) say the capacity was full.
	claimMS, overMax float64
	rate             float64
	places           []roomPlace // every queue's places, lane after lane
	// lanes are the room's queues: one (name "") without lanes, else each lane in the room's
	// order; hasLanes says which.
	lanes     []roomLane
	hasLanes  bool
	bad       []string // members that do not parse
	events    []roomEvent
	badEvents []string
	tokens    map[string]string // user -> nonce of the unused token
}

func readRoom(ctx context.Context, rdb redis.UniversalClient, sale string, o RoomOptions) (*roomState, bool, error) {
	// The room hash first: most sales have none, and their tokens need not be read.
	room, err := rdb.HGetAll(ctx, contract.RoomKey(sale)).Result()
	if err != nil && err != redis.Nil {
		return nil, false, fmt.Errorf("verify: read the room of %s: %w", sale, err)
	}
	if room["seed"] == "" {
		return nil, false, nil
	}
	// The queues: the one, or each lane's (the public lane's is room:q).
	lanes := []roomLane{{cursor: atoi64(room["cursor"])}}
	queueKeys := []string{contract.RoomQueueKey(sale)}
	_, specs, hasLanes := admin.ParseLanesField(room["lanes"])
	if hasLanes {
		lanes, queueKeys = nil, nil
		for _, l := range specs {
			rl := roomLane{name: l.Name, cursor: atoi64(room["lane:"+l.Name+":cursor"]), admitted: atoi64(room["lane:"+l.Name+":admitted"])}
			key := contract.RoomLaneQueueKey(sale, l.Name)
			if l.Kind == admin.LanePublic {
				rl.cursor, key = atoi64(room["cursor"]), contract.RoomQueueKey(sale)
			}
			lanes, queueKeys = append(lanes, rl), append(queueKeys, key)
		}
	}
	pipe := rdb.Pipeline()
	qs := make([]*redis.ZSliceCmd, len(queueKeys))
	for i, k := range queueKeys {
		qs[i] = pipe.ZRangeWithScores(ctx, k, 0, -1)
	}
	lg := pipe.LRange(ctx, contract.RoomLogKey(sale), 0, -1)
	tk := pipe.HGetAll(ctx, contract.TokensKey(sale))
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, false, fmt.Errorf("verify: read the room of %s: %w", sale, err)
	}
	st := &roomState{seedHex: room["seed"], commitment: room["commitment"], tokens: map[string]string{}}
	st.cursor = atoi64(room["cursor"])
	st.admitted, _ = strconv.ParseInt(room["admitted"], 10, 64)
	st.presenceMS, _ = strconv.ParseInt(room["presence_ms"], 10, 64)
	st.presenceUntil = room["presence"] == "until"
	st.over = o.Oversubscribe
	if v, err := strconv.ParseFloat(room["oversubscribe"], 64); err == nil && v >= 1 {
		st.over = v
	}
	if st.over < 1 {
		st.over = 1.5
	}
	st.claimMS, _ = strconv.ParseFloat(room["claim_ms"], 64)
	st.overMax, _ = strconv.ParseFloat(room["oversubscribe_max"], 64)
	st.overMax = max(st.overMax, st.over)
	st.rate, _ = strconv.ParseFloat(room["rate"], 64)
	for i, q := range qs {
		for _, z := range q.Val() {
			m, _ := z.Member.(string)
			if len(m) <= 48 {
				st.bad = append(st.bad, fmt.Sprintf("%s%q", lanes[i].label(), m))
				continue
			}
			p := roomPlace{rank: []byte(m[:32]), entryID: base64.RawURLEncoding.EncodeToString([]byte(m[32:48])),
				user: m[48:], pre: z.Score == 0}
			lanes[i].places = append(lanes[i].places, p)
			st.places = append(st.places, p)
		}
	}
	st.lanes, st.hasLanes = lanes, hasLanes
	for _, s := range lg.Val() {
		e, ok := parseRoomEvent(s)
		if !ok {
			st.badEvents = append(st.badEvents, s)
			continue
		}
		st.events = append(st.events, e)
	}
	for u, v := range tk.Val() {
		nonce, _, _ := strings.Cut(v, ":")
		st.tokens[u] = nonce
	}
	return st, true, nil
}

// Room checks invariants 6-9 of a sale with a waiting room. orderUsers are the users holding
// an order of the sale in Postgres (any status). It returns no check for a sale without a
// room; an error only when Redis could not be read.
func Room(ctx context.Context, rdb redis.UniversalClient, sale string, orderUsers []string, o RoomOptions) ([]Check, error) {
	st, ok, err := readRoom(ctx, rdb, sale, o)
	if err != nil || !ok {
		return nil, err
	}
	return []Check{
		st.checkOrder(),
		st.checkTokens(orderUsers, o.RequireAdmission),
		st.checkSoldOut(),
		st.checkPlaces(),
	}, nil
}

func (st *roomState) admissions() []roomEvent {
	var out []roomEvent
	for _, e := range st.events {
		if e.kind == 'a' {
			out = append(out, e)
		}
	}
	return out
}

// 6. The admission order of the pre-queued users equals the permutation of the seed: every
// place carries the rank HMAC-SHA256(seed, entry id), the pre-queue is sorted by it, and the
// k-th admission of the log is the k-th place of the queue (the cursor walks it; arrivals after
// the start stand behind the pre-queue). In a room with lanes, each lane by itself: its
// pre-queue sorted by the one seed's ranks, and its admissions (those of the users whose place
// is in it) its places in order; how the lanes' admissions interleave is the shares' business,
// not the order's.
func (st *roomState) checkOrder() Check {
	c := Check{N: 6, Name: "pre-queue admitted in the seed's permutation", Verdict: Pass}
	seed, err := hex.DecodeString(st.seedHex)
	if err != nil || len(seed) == 0 {
		fail(&c, "the room's seed is not hex")
		return c
	}
	if sum := sha256.Sum256(seed); hex.EncodeToString(sum[:]) != st.commitment {
		fail(&c, "SHA-256 of the seed is not the commitment published at preheat")
	}
	prequeue, wrongRank := 0, 0
	for _, l := range st.lanes {
		var pre []string
		for i, p := range l.places {
			if !bytes.Equal(p.rank, RoomRank(seed, p.entryID)) {
				wrongRank++
				addProblem(&c, fmt.Sprintf("%splace %d (entry %s) carries a rank that is not HMAC-SHA256(seed, entry id)", l.label(), i+1, p.entryID))
			}
			if p.pre {
				if i != len(pre) {
					addProblem(&c, fmt.Sprintf("%spre-queue entry %s stands behind an arrival after the start", l.label(), p.entryID))
					wrongRank++
				}
				pre = append(pre, p.entryID)
			}
		}
		for _, p := range RoomOrderProblems(st.commitment, st.seedHex, pre) {
			if !strings.HasPrefix(p, "SHA-256") { // reported above
				addProblem(&c, l.label()+p)
				wrongRank++
			}
		}
		prequeue += len(pre)
	}
	adm := st.admissions()
	walk := st.walk()
	byLane, placeless := st.byLane(walk.inOrder)
	outOfOrder, preAdmitted, present := 0, 0, 0
	for _, e := range placeless {
		outOfOrder++
		addProblem(&c, fmt.Sprintf("%s of user %s, who holds no place in any lane", eventWhat(e), e.user))
	}
	for li, l := range st.lanes {
		for k, e := range byLane[li] {
			what := eventWhat(e)
			switch {
			case k >= len(l.places):
				outOfOrder++
				addProblem(&c, fmt.Sprintf("%s%s %d (user %s) has no place in the queue", l.label(), what, k+1, e.user))
			case l.places[k].user != e.user:
				outOfOrder++
				addProblem(&c, fmt.Sprintf("%s%s %d went to user %s, but place %d is user %s's", l.label(), what, k+1, e.user, k+1, l.places[k].user))
			case e.kind == 'a' && l.places[k].pre:
				preAdmitted++
			}
			// The presence rule: a place is passed only when its waiter was not seen within the
			// window before (docs/DESIGN.md).
			switch {
			case e.kind != 's':
			case st.presenceUntil:
				// Each waiter's own deadline: the refresh_s he was last told plus the grace.
				if e.n >= e.ms {
					present++
					addProblem(&c, fmt.Sprintf("user %s's place was passed at %d, but the user was present until %d", e.user, e.ms, e.n))
				}
			case st.presenceMS <= 0 || e.n > e.ms-st.presenceMS:
				present++
				addProblem(&c, fmt.Sprintf("user %s's place was passed at %d, but the user was seen at %d (window %d ms)", e.user, e.ms, e.n, st.presenceMS))
			}
		}
	}
	idle := st.idleProblems(&c)
	for _, u := range walk.strays {
		outOfOrder++
		addProblem(&c, fmt.Sprintf("user %s was admitted out of turn: not at the cursor, and not a waiter whose place was passed", u))
	}
	for _, s := range st.bad {
		addProblem(&c, "unreadable queue member "+s)
	}
	c.Numbers = map[string]int{"prequeue": prequeue, "places": len(st.places), "admissions": len(adm),
		"prequeue_admitted": preAdmitted, "wrong_rank": wrongRank, "out_of_order": outOfOrder,
		"passed_absent": walk.passed, "returned": walk.returned, "passed_while_present": present, "idle": idle}
	if st.hasLanes {
		c.Numbers["lanes"] = len(st.lanes)
		note(&c, "%d lanes, each checked by itself", len(st.lanes))
	}
	note(&c, "%d pre-queue places of %d ordered by HMAC-SHA256(seed, entry id) (%d out of place); %d admissions, %d of the pre-queue, %d not in queue order; %d places passed (absent), %d came back, %d passed while present",
		prequeue, len(st.places), wrongRank, len(adm), preAdmitted, outOfOrder, walk.passed, walk.returned, present)
	if idle > 0 {
		note(&c, "%d times the sale idled while units were left and a present waiter waited", idle)
	}
	if wrongRank+outOfOrder+present+idle+len(st.bad) > 0 {
		c.Verdict = Fail
	}
	return c
}

// eventWhat names a walk's event in a problem.
func eventWhat(e roomEvent) string {
	switch e.kind {
	case 's':
		return "passed place"
	case 'f':
		return "flagged place"
	}
	return "admission"
}

// byLane splits events by the lane of their user's place (st.lanes' order). Without lanes
// every event is the one queue's, as the cursor walks it; with lanes, the events of a user
// who holds no place are returned apart.
func (st *roomState) byLane(events []roomEvent) (byLane [][]roomEvent, placeless []roomEvent) {
	byLane = make([][]roomEvent, len(st.lanes))
	if !st.hasLanes {
		byLane[0] = events
		return byLane, nil
	}
	laneOf := map[string]int{}
	for li, l := range st.lanes {
		for _, p := range l.places {
			if _, dup := laneOf[p.user]; !dup { // a second place is check 9's
				laneOf[p.user] = li
			}
		}
	}
	for _, e := range events {
		li, ok := laneOf[e.user]
		if !ok {
			placeless = append(placeless, e)
			continue
		}
		byLane[li] = append(byLane[li], e)
	}
	return byLane, placeless
}

// idleProblems checks the rule "while units are left and a present, eligible waiter waits,
// the sale never idles" (docs/DESIGN.md, invariant 6) on a room with conversion-aware
// admission, from the log alone. Replaying it, the verifier keeps the live admissions (a:,
// ended only by r:; lapses and purchases are not logged, so it keeps more than the script,
// never fewer) and counts as holding capacity each that took a token (t:) or is not judged
// yet, at full weight (the script weighs the unjudged at the observed conversion: less);
// no-shows (n:) hold none. So its count is never below the script's, and:
//   - a hold (h:<ms>:<stock>:<user>: the script found units, the allowance and a present
//     waiter, yet no capacity) is right only if the count then fills stock x oversubscribe,
//     or the live admissions stock x oversubscribe_max;
//   - once a hold's capacity comes back (a no-show judged, an admission revoked), the next
//     admission step walks on (a: or s:) within the slack (the allowance's refill at the
//     room's rate plus two seconds for the steps' timing), unless the sale pauses (p:).
//
// It returns how many times the sale idled. The stock seen by a hold is the lower bound of
// the stock until the next admission (units only come back by a restock).
func (st *roomState) idleProblems(c *Check) int {
	if st.claimMS <= 0 {
		return 0
	}
	type adm struct{ token, judged bool }
	live := map[string]*adm{}
	slack := int64(2000)
	if st.rate > 0 {
		slack += int64(1000 / st.rate)
	}
	var holdStock int64
	held, freedAt, idle := false, int64(-1), 0
	full := func() bool {
		counted, n := 0, 0
		for _, a := range live {
			n++
			if a.token || !a.judged {
				counted++
			}
		}
		capacity := math.Floor(float64(holdStock)*st.over+1e-9) - float64(counted)
		bound := math.Floor(float64(holdStock)*st.overMax+1e-9) - float64(n)
		return capacity < 1 || bound < 1
	}
	for _, e := range st.events {
		if held && freedAt >= 0 && e.ms > freedAt+slack {
			idle++
			addProblem(c, fmt.Sprintf("the sale idled from %d to %d: units left (%d), a present waiter held back, and capacity free", freedAt, e.ms, holdStock))
			freedAt = -1
		}
		switch e.kind {
		case 'a':
			live[e.user] = &adm{}
			held, freedAt = false, -1
		case 's':
			held, freedAt = false, -1
		case 'p':
			held, freedAt = false, -1
		case 't':
			if a := live[e.user]; a != nil {
				a.token = true
			}
		case 'n':
			if a := live[e.user]; a != nil {
				a.judged = true
			}
		case 'r':
			delete(live, e.user)
		case 'h':
			held, holdStock, freedAt = true, e.n, -1
			if !full() {
				idle++
				addProblem(c, fmt.Sprintf("held at %d with stock %d while user %s waited, but the live admissions left capacity", e.ms, e.n, e.user))
			}
			continue
		}
		if held && freedAt < 0 && (e.kind == 'n' || e.kind == 'r') && !full() {
			freedAt = e.ms
		}
	}
	return idle
}

// roomWalk is the cursor's walk replayed from the log: the admissions and passed places in
// cursor order (each the next place of the queue), the admissions of waiters who came back
// after their place was passed (returned), and admissions that are neither (strays).
type roomWalk struct {
	inOrder          []roomEvent
	passed, returned int
	strays           []string
}

func (st *roomState) walk() roomWalk {
	var w roomWalk
	away := map[string]bool{}
	for _, e := range st.events {
		switch e.kind {
		case 's':
			w.inOrder = append(w.inOrder, e)
			w.passed++
			away[e.user] = true
		case 'f':
			// A flagged waiter's place, passed: never admitted, never returns
			// (docs/room.md, "The queue bots never leave").
			w.inOrder = append(w.inOrder, e)
		case 'a':
			if away[e.user] {
				delete(away, e.user)
				w.returned++
				continue
			}
			w.inOrder = append(w.inOrder, e)
		}
	}
	return w
}

// 7. No token without a live admission: every token issued on an admission is logged after
// the user's admission and before its end; every unused token in Redis is one of those; every
// user holding an order got such a token.
func (st *roomState) checkTokens(orderUsers []string, required bool) Check {
	c := Check{N: 7, Name: "no token without a live admission", Verdict: Pass}
	if !required {
		note(&c, "the gateways do not require admission (not checked)")
		return c
	}
	admittedAt := map[string]int64{}
	revokedAt := map[string]int64{}        // r: the admission ended early: the throttle bans the user
	issued := map[string]map[string]bool{} // user -> nonces issued on an admission
	bad := 0
	for _, e := range st.events {
		switch e.kind {
		case 'a':
			if _, ok := admittedAt[e.user]; !ok {
				admittedAt[e.user] = e.ms
			}
		case 'r':
			if _, ok := revokedAt[e.user]; !ok {
				revokedAt[e.user] = e.ms
			}
		case 't':
			at, ok := admittedAt[e.user]
			rv, revoked := revokedAt[e.user]
			switch {
			case !ok:
				bad++
				addProblem(&c, fmt.Sprintf("token %s of user %s issued before any admission of the user", e.nonce, e.user))
			case revoked && e.ms >= rv:
				bad++
				addProblem(&c, fmt.Sprintf("token %s of user %s issued at %d, after the admission ended at %d (the throttle bans the user)", e.nonce, e.user, e.ms, rv))
			case e.ms < at || e.ms >= e.n:
				bad++
				addProblem(&c, fmt.Sprintf("token %s of user %s issued at %d outside the admission [%d, %d)", e.nonce, e.user, e.ms, at, e.n))
			}
			if issued[e.user] == nil {
				issued[e.user] = map[string]bool{}
			}
			issued[e.user][e.nonce] = true
		}
	}
	unlogged := 0
	for _, u := range sortedKeys(st.tokens) {
		if !issued[u][st.tokens[u]] {
			unlogged++
			addProblem(&c, fmt.Sprintf("user %s holds token %s that no admission check issued", u, st.tokens[u]))
		}
	}
	orphans := 0
	for _, u := range orderUsers {
		if len(issued[u]) == 0 {
			orphans++
			addProblem(&c, fmt.Sprintf("user %s holds an order but was never issued a token on an admission", u))
		}
	}
	c.Numbers = map[string]int{"tokens_on_admission": len(issued), "bad_tokens": bad, "unlogged_tokens": unlogged,
		"orders_without_admission": orphans, "order_users": len(orderUsers)}
	note(&c, "%d users issued tokens on a live admission; %d issued outside one, %d unused tokens not issued on one, %d of %d buyers without one",
		len(issued), bad, unlogged, orphans, len(orderUsers))
	if bad+unlogged+orphans > 0 {
		c.Verdict = Fail
	}
	return c
}

// 8. Once sold out, nobody is admitted until units come back: every admission saw stock > 0,
// and one script call (same time, same stock) admitted at most stock x oversubscribe.
func (st *roomState) checkSoldOut() Check {
	c := Check{N: 8, Name: "nobody admitted while sold out", Verdict: Pass}
	adm := st.admissions()
	zero, over := 0, 0
	for i := 0; i < len(adm); {
		j := i
		for j < len(adm) && adm[j].ms == adm[i].ms && adm[j].n == adm[i].n {
			j++
		}
		if adm[i].n <= 0 {
			zero += j - i
			addProblem(&c, fmt.Sprintf("%d admitted at %d with stock %d (first: user %s)", j-i, adm[i].ms, adm[i].n, adm[i].user))
		} else if limit := int(math.Floor(float64(adm[i].n)*st.batchOver() + 1e-9)); j-i > limit {
			over++
			addProblem(&c, fmt.Sprintf("%d admitted at once at %d with stock %d (at most %d)", j-i, adm[i].ms, adm[i].n, limit))
		}
		i = j
	}
	c.Numbers = map[string]int{"admissions": len(adm), "while_sold_out": zero, "batches_over_limit": over}
	note(&c, "%d admissions, %d while the stock was 0, %d batches beyond stock x %.2f", len(adm), zero, over, st.batchOver())
	if zero+over > 0 {
		c.Verdict = Fail
	}
	return c
}

// batchOver is the most admissions per unit one call may make: oversubscribe, or with
// conversion-aware admission oversubscribe_max (no-shows hold no capacity).
func (st *roomState) batchOver() float64 {
	if st.claimMS > 0 {
		return st.overMax
	}
	return st.over
}

// 9. One place per user, a place never given twice: no user holds two places, nobody is
// admitted twice, the admissions logged are exactly the places the cursor passed, and a place
// given up (DELETE /queue) was a waiting one: nobody leaves after being admitted, since
// removing a place the cursor passed would shift the admitted history.
func (st *roomState) checkPlaces() Check {
	c := Check{N: 9, Name: "one place per user, never given twice", Verdict: Pass}
	placeOf := map[string]int{}
	twoPlaces := 0
	for i, p := range st.places {
		if _, ok := placeOf[p.user]; ok {
			twoPlaces++
			addProblem(&c, fmt.Sprintf("user %s holds places %d and %d", p.user, placeOf[p.user]+1, i+1))
			continue
		}
		placeOf[p.user] = i
	}
	adm := st.admissions()
	seen := map[string]bool{}
	twice, left, leftAdmitted := 0, 0, 0
	for _, e := range st.events {
		switch e.kind {
		case 'a':
			if seen[e.user] {
				twice++
				addProblem(&c, fmt.Sprintf("user %s admitted twice", e.user))
			}
			seen[e.user] = true
		case 'l':
			left++
			if seen[e.user] {
				leftAdmitted++
				addProblem(&c, fmt.Sprintf("user %s gave up a place at %d after being admitted", e.user, e.ms))
			}
		}
	}
	for _, s := range st.badEvents {
		addProblem(&c, fmt.Sprintf("unreadable log element %q", s))
	}
	c.Numbers = map[string]int{"places": len(st.places), "users_with_two_places": twoPlaces, "admitted_twice": twice,
		"cursor": int(st.cursor), "admitted_counter": int(st.admitted), "admissions_logged": len(adm),
		"left": left, "left_after_admission": leftAdmitted}
	note(&c, "%d places, %d users with two, %d admitted twice; cursor %d, admitted counter %d, %d admissions logged; %d places given up, %d after admission",
		len(st.places), twoPlaces, twice, st.cursor, st.admitted, len(adm), left, leftAdmitted)
	// The cursor passes a place by admitting it or, absent, by passing it (s:); a waiter who
	// comes back is admitted behind the cursor. With lanes, each lane's cursor and admitted
	// counter against its own part of the log.
	if int64(len(adm)) != st.admitted {
		fail(&c, "the admitted counter and the log disagree")
		addProblem(&c, fmt.Sprintf("the counter says %d admissions, the log shows %d", st.admitted, len(adm)))
	}
	walks, _ := st.byLane(st.walk().inOrder)
	admissions, _ := st.byLane(adm)
	for li, l := range st.lanes {
		walked := int64(len(walks[li]))
		if walked != l.cursor {
			fail(&c, "%sthe cursor and the log disagree", l.label())
			addProblem(&c, fmt.Sprintf("%sthe cursor passed %d places, the log walks %d", l.label(), l.cursor, walked))
		}
		if st.hasLanes && int64(len(admissions[li])) != l.admitted {
			fail(&c, "%sthe admitted counter and the log disagree", l.label())
			addProblem(&c, fmt.Sprintf("%sthe counter says %d admissions, the log shows %d", l.label(), l.admitted, len(admissions[li])))
		}
	}
	if twoPlaces+twice+leftAdmitted+len(st.badEvents) > 0 {
		c.Verdict = Fail
	}
	return c
}

// roomChecks are Verify's invariants 6-9 when the sale has a waiting room (none otherwise).
// The shipped gateways pair the room with seckill_token's require_admission.
func roomChecks(ctx context.Context, src Sources, st *state, run Run) []Check {
	users := map[string]bool{}
	for _, o := range st.orders {
		users[o.user] = true
	}
	cs, err := Room(ctx, src.Redis, run.Sale, sortedKeys(users), RoomOptions{RequireAdmission: true})
	if err != nil {
		c := Check{N: 6, Name: "waiting room", Verdict: Fail}
		fail(&c, "%v", err)
		return []Check{c}
	}
	if len(cs) == 0 {
		return cs
	}
	w, found, err := Waitlist(ctx, src.Redis, run.Sale, sortedKeys(users))
	switch {
	case err != nil:
		w = Check{N: 16, Name: "every waitlist offer ends bought, passed or returned", Verdict: Fail}
		fail(&w, "%v", err)
		return append(cs, w)
	case found:
		return append(cs, w)
	}
	return cs
}

// atoi64 reads a counter of the room hash (0 when absent).
func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
