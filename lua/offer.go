package lua

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
)

// RoomOfferCall is one call of room_offer.lua: the waitlist's step for one sale with a
// waiting room (docs/room.md, "The waitlist").
type RoomOfferCall struct {
	Sale string
	// Window is how long an offered waiter may buy (rounded to ms, at least 1 ms).
	Window time.Duration
	// Paid is the sale's paid orders, for the room's answer to its waiters; below 0: not told.
	Paid int
	// AnyWaiter offers to every waiter in turn; false: only to waiters present now (the
	// gateways' presence rule, their default).
	AnyWaiter bool
}

// OfferEvent is one step of an offer in a RoomOfferResult.
type OfferEvent struct {
	Kind  string // "offered", "bought" or "passed"
	User  string
	Until time.Time // the offer's end
}

// RoomOfferResult is what a room_offer.lua call did.
type RoomOfferResult struct {
	// Room is false when the sale is not in Redis or has no room (nothing was done).
	Room bool
	// Reserved and Offers are the units held and the open offers after the call; Returned the
	// units it gave back to the open pool.
	Reserved, Offers, Returned int64
	// Now is Redis's time of the call.
	Now    time.Time
	Events []OfferEvent
}

// Keys are the call's KEYS.
func (c RoomOfferCall) Keys() []string {
	return []string{contract.MetaKey(c.Sale), contract.RoomKey(c.Sale), contract.RoomQueueKey(c.Sale),
		contract.RoomLiveKey(c.Sale), contract.RoomSeenKey(c.Sale), contract.RoomAwayKey(c.Sale),
		contract.RoomBackKey(c.Sale), contract.RoomLogKey(c.Sale), contract.RoomOffersKey(c.Sale),
		contract.RoomOfferLogKey(c.Sale), contract.BuyersKey(c.Sale)}
}

// Args are the call's ARGV.
func (c RoomOfferCall) Args() []any {
	paid := ""
	if c.Paid >= 0 {
		paid = strconv.Itoa(c.Paid)
	}
	presence := "1"
	if c.AnyWaiter {
		presence = "0"
	}
	return []any{c.Sale, max(c.Window.Milliseconds(), 1), paid, presence}
}

// Run runs room_offer.lua.
func (c RoomOfferCall) Run(ctx context.Context, rdb redis.Scripter) (RoomOfferResult, error) {
	out, err := RoomOffer.Run(ctx, rdb, c.Keys(), c.Args()...).Slice()
	if err != nil {
		return RoomOfferResult{}, err
	}
	return roomOfferReply(out)
}

func roomOfferReply(out []any) (RoomOfferResult, error) {
	var r RoomOfferResult
	if len(out) != 5 {
		return r, fmt.Errorf("room_offer.lua: unexpected reply %v", out)
	}
	var nums [4]int64
	for i := range nums {
		n, ok := out[i].(int64)
		if !ok {
			return r, fmt.Errorf("room_offer.lua: unexpected reply %v", out)
		}
		nums[i] = n
	}
	r.Room = nums[0] >= 0
	r.Reserved, r.Offers, r.Returned, r.Now = max(nums[0], 0), nums[1], nums[2], time.UnixMilli(nums[3])
	ev, ok := out[4].([]any)
	if !ok || len(ev)%3 != 0 {
		return r, fmt.Errorf("room_offer.lua: unexpected events %v", out[4])
	}
	for i := 0; i < len(ev); i += 3 {
		kind, _ := ev[i].(string)
		user, _ := ev[i+1].(string)
		until, ok := ev[i+2].(int64)
		if kind == "" || user == "" || !ok {
			return r, fmt.Errorf("room_offer.lua: unexpected event %v", ev[i:i+3])
		}
		r.Events = append(r.Events, OfferEvent{Kind: kind, User: user, Until: time.UnixMilli(until)})
	}
	return r, nil
}

// ReservedClampCall is one call of reserved_clamp.lua: keep a sale's waitlist reserve within
// what the waitlist holds and the stock (reconcile).
type ReservedClampCall struct {
	Sale string
}

// Run runs reserved_clamp.lua: before and after are meta "reserved" around the call; ok is false
// when the sale has no reserve.
func (c ReservedClampCall) Run(ctx context.Context, rdb redis.Scripter) (before, after int64, ok bool, err error) {
	out, err := ReservedClamp.Run(ctx, rdb, []string{contract.MetaKey(c.Sale), contract.RoomOfferLogKey(c.Sale)}, c.Sale).Int64Slice()
	if err != nil {
		return 0, 0, false, err
	}
	if len(out) != 3 {
		return 0, 0, false, fmt.Errorf("reserved_clamp.lua: unexpected reply %v", out)
	}
	return out[1], out[2], out[0] == 1, nil
}
