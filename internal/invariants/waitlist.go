package invariants

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
)

// waitlistStale is how long past its window an offer may stay open before the check calls it
// lost: the backend ends offers on every sweep (a second by default).
const waitlistStale = time.Minute

// Waitlist checks invariant 16 of a sale with a waiting room (docs/room.md, "The waitlist"):
// every unit held for the waitlist is offered to one waiter at a time and every offer ends
// bought, passed or returned; no unit is offered twice, none is lost. It replays the
// waitlist's log (room:offerlog: "v" held, "o" offered, "b" bought, "x" passed, "g" given back
// to the pool) and holds it to Redis (meta reserved and "o:<user>", the open offers) and to
// the buyers in Postgres (orderUsers: the users holding an order of the sale, any status).
// found is false when the sale never held a unit for its waitlist (no check).
func Waitlist(ctx context.Context, rdb redis.UniversalClient, sale string, orderUsers []string) (c Check, found bool, err error) {
	pipe := rdb.Pipeline()
	lg := pipe.LRange(ctx, contract.RoomOfferLogKey(sale), 0, -1)
	open := pipe.ZRangeWithScores(ctx, contract.RoomOffersKey(sale), 0, -1)
	meta := pipe.HGetAll(ctx, contract.MetaKey(sale))
	tm := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return c, false, fmt.Errorf("verify: read the waitlist of %s: %w", sale, err)
	}
	if len(lg.Val()) == 0 {
		return c, false, nil
	}
	return checkWaitlist(lg.Val(), open.Val(), meta.Val(), orderUsers, tm.Val()), true, nil
}

func checkWaitlist(log []string, open []redis.Z, meta map[string]string, orderUsers []string, now time.Time) Check {
	c := Check{N: 16, Name: "every waitlist offer ends bought, passed or returned", Verdict: Pass}
	var held, released, offered, bought, passed, returned int
	offers := map[string]int64{} // user -> until, the offers the log leaves open
	ever := map[string]bool{}
	bad := 0
	problem := func(format string, args ...any) {
		bad++
		addProblem(&c, fmt.Sprintf(format, args...))
	}
	for _, s := range log {
		p := strings.SplitN(s, ":", 4)
		n, err := strconv.ParseInt(pOr(p, 2), 10, 64)
		if len(p) != 4 || err != nil {
			problem("unreadable waitlist log element %q", s)
			continue
		}
		u := p[3]
		switch p[0] {
		case "v":
			held++
			released++
		case "o":
			offered++
			if held < 1 {
				problem("user %s offered a unit while none was held (a unit offered twice)", u)
			}
			held--
			if ever[u] {
				problem("user %s offered a unit twice", u)
			}
			ever[u] = true
			offers[u] = n
		case "b", "x":
			if _, ok := offers[u]; !ok {
				problem("user %s's offer ended (%s) but was not open", u, p[0])
				continue
			}
			delete(offers, u)
			if p[0] == "b" {
				bought++
			} else {
				passed++
				held++
			}
		case "g":
			returned += int(n)
			held -= int(n)
			if held < 0 {
				problem("%d units given back to the pool while fewer were held", n)
			}
		default:
			problem("unknown waitlist log element %q", s)
		}
	}
	// Redis agrees: the units held are the ones not on offer plus the open offers, and each
	// open offer is the one the log leaves open, still on sale to its user or just bought.
	reserved, _ := strconv.Atoi(meta["reserved"])
	if reserved != held+len(offers) {
		problem("Redis holds %d units for the waitlist, the log %d (%d not on offer, %d offers open)", reserved, held+len(offers), held, len(offers))
	}
	inRedis := map[string]bool{}
	for _, z := range open {
		u, _ := z.Member.(string)
		inRedis[u] = true
		if _, ok := offers[u]; !ok {
			problem("user %s holds an open offer the log does not", u)
		}
	}
	buyers := map[string]bool{}
	for _, u := range orderUsers {
		buyers[u] = true
	}
	stale := 0
	for _, u := range sortedKeys(offers) {
		until := offers[u]
		switch {
		case !inRedis[u]:
			problem("user %s's offer is open in the log but not in Redis (a unit lost)", u)
		case meta["o:"+u] == "" && !buyers[u]:
			problem("user %s's offer was taken, yet he holds no order (a unit lost)", u)
		case now.Sub(time.UnixMilli(until)) > waitlistStale:
			stale++
			problem("user %s's offer ended at %d and is still open", u, until)
		}
	}
	for _, s := range log {
		if p := strings.SplitN(s, ":", 4); len(p) == 4 && p[0] == "b" && !buyers[p[3]] {
			problem("user %s bought his offer, yet holds no order", p[3])
		}
	}
	c.Numbers = map[string]int{"released": released, "offered": offered, "bought": bought, "passed": passed,
		"returned": returned, "open": len(offers), "held": held, "stale": stale}
	note(&c, "%d units held for the waitlist, %d offers: %d bought, %d passed, %d open; %d units back to the pool, %d held",
		released, offered, bought, passed, len(offers), returned, held)
	if bad > 0 {
		c.Verdict = Fail
	}
	return c
}

func pOr(p []string, i int) string {
	if i < len(p) {
		return p[i]
	}
	return ""
}
