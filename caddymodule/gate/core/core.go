// Package core is the gate's purchase decision without transport: the Decider checks a
// purchase's identities, item and token, answers from this instance's sold-out memory when it
// can, and otherwise runs lua/gate.lua through a Store (RedisStore) on the user's shard, within
// the deadline and max_pending of an edge.Caller. A Verdict carries its Outcome and the
// hcore.Refusal it answers. It imports no Caddy (caddymodule/gate is the handler), so its
// tests link no Caddy either.
package core

import (
	"context"
	"errors"
	"time"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/edge"
	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
)

// SoldOutCache is this instance's memory of sold-out sales and shards (caddymodule.SaleEvents),
// and of their sold-out variants, named contract.VariantTarget(target, variant); a variant's
// generation is its target's.
type SoldOutCache interface {
	SoldOut(target string) bool
	Generation(target string) hcore.Generation
	MarkSoldOut(target string, gen hcore.Generation)
}

// Decider is the gate's decision without transport: the rules around the script (identities,
// token, sold-out memory, sharding, deadline and shedding) over a Store, a clock and an order
// id source. The handler gives it Redis; the unit tests a fake Store.
type Decider struct {
	Store   Store
	Caller  edge.Caller
	Shards  edge.ShardCache
	SoldOut SoldOutCache
	// Keyring verifies purchase tokens; nil when the route does not require them.
	Keyring *tokenformat.Keyring
	// Now is the clock of the token expiry check (the script checks it again against Redis
	// TIME, so a slow clock here cannot accept an expired token).
	Now func() time.Time
	// NewOrderID makes the id of a new order (UUIDv7 in production).
	NewOrderID func() (string, error)
	// Observe, when set, gets the latency of each script call.
	Observe func(time.Duration)
	// RequireAdmission: this gateway enforces waiting rooms (seckill_gate require_admission);
	// the script checks the user's live admission on a sale that has a room, and refuses
	// such a sale as misconfigured when this is off.
	RequireAdmission bool
	// Binding is the route's device_binding (caddymodule/dpop; "" is off): with optional a
	// bound token (format version 2) needs a proof of its key, with required every token
	// does. ProofWindow is how long a proof's jti stays spent (dpop.ReplayWindow).
	Binding     dpop.Binding
	ProofWindow time.Duration

	// Windows, when set, is this instance's memory of the sales' windows: a click clearly
	// outside the window is answered not_started or ended from it, with no Redis command
	// (window.go).
	Windows WindowCache

	// late remembers the answers given after a sell-out, until the next restock (late.go).
	late lateAnswers[hcore.Generation]
	// general remembers the targets that answered General: their purchases run gate.lua.
	general generalTargets
}

// CheckRequest validates the identities of a purchase before anything else: no user is 401,
// a malformed sale or user id is 400. It returns "" when the request may proceed.
func CheckRequest(sale, user string) Outcome {
	switch {
	case user == "":
		return Unauthenticated
	case !contract.ValidID(user), !contract.ValidID(sale):
		return BadRequest
	}
	return ""
}

// CheckItem validates what a purchase asks for: a variant id of the contract's syntax, a
// quantity of 0 (the default) or 1..contract.MaxQuantity. Whether the sale has that variant
// and allows that quantity is the script's to say. It returns a BadRequest verdict, or one
// with an empty outcome when the item may proceed.
func CheckItem(it Item) Verdict {
	switch {
	case it.Variant != "" && !contract.ValidVariantID(it.Variant):
		return Verdict{Outcome: BadRequest, Reason: ReasonVariant}
	case it.Quantity < 0 || it.Quantity > contract.MaxQuantity:
		return Verdict{Outcome: BadRequest, Reason: ReasonQuantity}
	}
	return Verdict{}
}

// Request is one purchase as the handler read it: the one value the Decider and the Store
// take, so that a new attribute of a purchase is one field here.
type Request struct {
	// Sale and User name the sale and the buyer (contract.ValidID; checked by Decide).
	Sale, User string
	// Token is the purchase token presented ("" for none).
	Token string
	// Item is what is bought: the variant ("" for none) and the quantity (0 for 1).
	Item
	// Proof is the DPoP proof the caller checked against the request and the token
	// (dpop.Check; the zero Proof for none). Under a Binding other than off a bound token
	// verifies only with its key's proof, and the proof's jti is spent in the script call: a
	// replay is refused on every gateway.
	Proof dpop.Proof
	// Zones is another handler's check (the throttle's zones) for the first script call to
	// carry (lua.GateThrottled), nil for none; its part of the reply goes to Zones.Answer, and
	// its refusal is the verdict Throttled. A decision settled without a script (a refusal
	// before Redis, an answer from the sold-out memory: Verdict.Memory) leaves it unanswered,
	// for the caller to settle.
	Zones Joint
}

// Decide makes the decision for one request. known reports whether the sale is known to exist
// (so it may label metrics). err, with an Unavailable verdict, says why Redis did not decide.
func (d *Decider) Decide(ctx context.Context, r Request) (v Verdict, known bool, err error) {
	if o := CheckRequest(r.Sale, r.User); o != "" {
		return Verdict{Outcome: o}, false, nil
	}
	if v := CheckItem(r.Item); v.Outcome != "" {
		return v, false, nil
	}
	// Outside the window, and after sell-out, the answer comes from memory, before the token
	// is even verified (a flood of early or late clicks costs no signature check and no
	// script). The window first: the script checks it before the stock.
	if v, ok := d.fromWindow(r.Sale); ok {
		return v, true, nil
	}
	target := contract.UserShardID(r.Sale, r.User, d.Shards.Of(r.Sale))
	if v, ok := d.fromMemory(ctx, target, r.User, r.Variant); ok {
		return v, true, nil
	}
	p := Purchase{Request: r, Admission: d.RequireAdmission}
	if d.Keyring != nil {
		if r.Token == "" {
			return Verdict{Outcome: InvalidToken}, false, nil
		}
		jkt, o := d.bindingOf(r.Token, r.Proof)
		if o != "" {
			return Verdict{Outcome: o}, false, nil
		}
		c, err := d.Keyring.VerifyBound(r.Token, r.Sale, r.User, jkt, d.Now())
		switch {
		case errors.Is(err, tokenformat.ErrExpired):
			return Verdict{Outcome: TokenExpired}, false, nil
		case err != nil && jkt != "":
			// A bound token that this key does not verify: a copy spent on another device
			// (or no token at all; the MAC cannot tell the two apart, and neither buys).
			return Verdict{Outcome: ProofKeyMismatch}, false, nil
		case err != nil:
			return Verdict{Outcome: InvalidToken}, false, nil
		}
		p.TokenValue = tokenformat.StoreValue(c)
		if r.Proof.JTI != "" {
			p.ProofWindow = d.ProofWindow
			if p.ProofWindow <= 0 {
				p.ProofWindow = dpop.ReplayWindow(0)
			}
		}
	}
	id, err := d.NewOrderID()
	if err != nil {
		return Verdict{Outcome: Unavailable}, false, err
	}
	p.OrderID = id

	v, _, err = edge.OnUserShard(d.Shards, r.Sale, r.User, func(target string) (Verdict, edge.ShardAnswer, error) {
		v, err := d.decideOn(ctx, target, &p)
		if err != nil {
			return v, edge.ShardAnswer{}, err
		}
		return v, edge.ShardAnswer{Sharded: v.Shards, Gone: v.Outcome == UnknownSale}, nil
	})
	if err != nil {
		return Verdict{Outcome: Unavailable}, false, err
	}
	return v, v.Outcome != UnknownSale, nil
}

// bindingOf returns the thumbprint token must verify with ("" for a bearer token), or the
// outcome refusing it: a bound token without a proof, a bearer token where binding is
// required. With binding off no proof is read, and a bound token is verified as a bearer one
// (and fails: a gateway that cannot check proofs never sells to a copy).
func (d *Decider) bindingOf(token string, proof dpop.Proof) (jkt string, o Outcome) {
	if d.Binding == "" || d.Binding == dpop.Off {
		return "", ""
	}
	switch {
	case tokenformat.Bound(token) && proof.JKT == "":
		return "", ProofRequired
	case tokenformat.Bound(token):
		return proof.JKT, ""
	case d.Binding == dpop.Required:
		return "", UnboundToken
	}
	return "", ""
}

// soldOut answers a purchase on a sold-out sale or shard: a buyer is told his order, not
// "sold out" (one plain read of the buyers hash, no script, once per user until the next
// restock); anybody else gets sold_out.
func (d *Decider) soldOut(ctx context.Context, target, user string) Verdict {
	gen := d.SoldOut.Generation(target)
	order, known := d.late.get(target, user, gen)
	var err error
	if !known {
		order, err = edge.Call(ctx, d.Caller, func(ctx context.Context) (string, error) {
			return d.Store.Buyer(ctx, target, user)
		})
		if err == nil {
			d.late.put(target, user, order, gen)
		}
	}
	if err == nil && order != "" {
		return Verdict{Outcome: AlreadyBought, OrderID: order, Target: target}
	}
	// Without an answer the stock is still gone: sold_out is true either way.
	return Verdict{Outcome: SoldOut, Target: target}
}

// fromMemory answers from the sold-out flags of target (a sale or shard) and of the variant
// asked for, when one is set. A sold-out variant is answered sold_out naming it, without a
// read: the buyer may hold another variant, which is no answer to this purchase.
func (d *Decider) fromMemory(ctx context.Context, target, user, variant string) (Verdict, bool) {
	if d.SoldOut.SoldOut(target) {
		v := d.soldOut(ctx, target, user)
		v.Memory = true
		return v, true
	}
	if variant != "" && d.SoldOut.SoldOut(contract.VariantTarget(target, variant)) {
		return Verdict{Outcome: SoldOut, Target: target, Variant: variant, Short: true, Memory: true}, true
	}
	return Verdict{}, false
}

// jointAnswer is a script call's answer: the verdict and the zones' part of the reply.
type jointAnswer struct {
	v     Verdict
	zones []any
}

// decideOn decides on one sale's or shard's keys. The first script call takes p.Zones and
// clears it (a retry on the user's shard runs without them: the zones were checked once).
func (d *Decider) decideOn(ctx context.Context, target string, p *Purchase) (Verdict, error) {
	// A shard learnt just now may be flagged sold out already. For a sharded sale the flag is
	// the user's shard's: another shard may still have units.
	if v, ok := d.fromMemory(ctx, target, p.User, p.Variant); ok {
		return v, nil
	}
	call := *p
	call.Target = target
	call.General = d.general.has(target)
	p.Zones = nil
	gen := d.SoldOut.Generation(target)
	wgen := d.SoldOut.Generation(p.Sale)
	start := time.Now()
	a, err := edge.Call(ctx, d.Caller, func(ctx context.Context) (jointAnswer, error) {
		v, zones, err := d.Store.Decide(ctx, call)
		return jointAnswer{v, zones}, err
	})
	v := a.v
	if j := call.Zones; j != nil {
		// The zones' answer first: a request they refused was never the gate's to decide.
		zerr := err
		if zerr == nil && a.zones == nil {
			zerr = errReply
		}
		if j.Answer(a.zones, zerr) {
			if d.Observe != nil {
				d.Observe(time.Since(start))
			}
			return Verdict{Outcome: Throttled, Target: target}, nil
		}
	}
	if d.Observe != nil {
		d.Observe(time.Since(start))
	}
	if err != nil {
		return Verdict{Outcome: Unavailable}, err
	}
	if v.Outcome == General {
		// The sale is not common: gate.lua decides, now and for the target's next purchases.
		// The zones were answered with the first call.
		d.general.add(target)
		call.General, call.Zones = true, nil
		start = time.Now()
		v, err = edge.Call(ctx, d.Caller, func(ctx context.Context) (Verdict, error) {
			v, _, err := d.Store.Decide(ctx, call)
			return v, err
		})
		if d.Observe != nil {
			d.Observe(time.Since(start))
		}
		if err != nil {
			return Verdict{Outcome: Unavailable}, err
		}
		if v.Outcome == General {
			return Verdict{Outcome: Unavailable}, errReply
		}
	}
	v.Target = target
	d.rememberWindow(p.Sale, v, wgen)
	switch {
	case v.Outcome != SoldOut:
	case !v.Short:
		d.SoldOut.MarkSoldOut(target, gen)
	case v.Variant != "" && v.Left <= 0:
		// The variant is gone, the sale still sells. Its flag shares the target's generation:
		// a restock of the target clears both.
		d.SoldOut.MarkSoldOut(contract.VariantTarget(target, v.Variant), gen)
	}
	return v, nil
}
