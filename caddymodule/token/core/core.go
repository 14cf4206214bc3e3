// Package core is the token issuer's decision without transport: the Decider checks the
// identities, runs lua/token_issue.lua through a Store (RedisStore) on the user's shard within
// the deadline and max_pending of an edge.Caller, and signs the token with a
// tokenformat.Keyring. An Outcome carries the Refusal (caddymodule/handler/core) it answers. It imports no Caddy
// (caddymodule/token is the handler), so its tests link no Caddy either.
package core

import (
	"context"
	"fmt"
	"time"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
)

// Decider is the issuing decision without transport: identities, the script on the user's shard
// within the deadline and max_pending, and the signature, over a Store and a nonce source. The
// handler gives it Redis; the unit tests a fake Store.
type Decider struct {
	Store    Store
	Caller   edge.Caller
	Shards   edge.ShardCache
	Keyring  *tokenformat.Keyring
	NewNonce func() (string, error)
	TTL      time.Duration
	LeadTime time.Duration
	// RequireAdmission refuses a user without a live waiting-room admission for a sale that
	// has a room (seckill_token require_admission).
	RequireAdmission bool
}

// Request is one token request as the handler read it: the one value the Decider and the
// Store take, so that a new attribute of a request is one field here.
type Request struct {
	// Sale and User name the sale and the buyer (contract.ValidID; checked by Issue).
	Sale, User string
	// JKT is the thumbprint of the device key the token is bound to (the caller's dpop.Check
	// of the request's proof; "" for a bearer token): tokenformat.SignBound. A user whose room
	// place is bound to another key (room_queue.lua keeps the first bound entry's) gets none.
	JKT string
	// Zones is another handler's check (the throttle's zones) for the first script call to
	// carry (lua.TokenIssueThrottled), nil for none; its part of the reply goes to
	// Zones.Answer, and its refusal is the outcome Throttled. A request refused before any
	// script leaves it unanswered, for the caller to settle.
	Zones edge.Joint
}

// Issuance is what the Store runs token_issue.lua for: the Request and what the Decider made
// of it.
type Issuance struct {
	Request
	// Target is the sale id, or the shard id of the user's shard: the script runs on its keys.
	Target string
	// Nonce is the new token's nonce; TTL and Lead the handler's ttl and lead_time.
	Nonce     string
	TTL, Lead time.Duration
	// Admission: the gateway enforces waiting rooms (Decider.RequireAdmission).
	Admission bool
}

// Issue decides for r. err, with an Unavailable result, says what went wrong.
func (c *Decider) Issue(ctx context.Context, r Request) (Result, error) {
	if r.User == "" {
		return Result{Outcome: Unauthenticated}, nil
	}
	if !contract.ValidID(r.Sale) || !contract.ValidID(r.User) {
		return Result{Outcome: BadRequest}, nil
	}
	nonce, err := c.NewNonce()
	if err != nil {
		return Result{Outcome: Unavailable}, fmt.Errorf("no randomness for a token nonce: %w", err)
	}
	is := Issuance{Request: r, Nonce: nonce, TTL: c.TTL, Lead: c.LeadTime, Admission: c.RequireAdmission}
	// A sharded sale's token lives in the user's shard, where the gate looks for it.
	rep, _, err := edge.OnUserShard(c.Shards, r.Sale, r.User, func(target string) (Reply, edge.ShardAnswer, error) {
		call := is
		call.Target = target
		is.Zones = nil // the first call only: a retry on the user's shard does not count the zones again
		rep, err := edge.Call(ctx, c.Caller, func(ctx context.Context) (Reply, error) { return c.Store.Issue(ctx, call) })
		if j := call.Zones; j != nil {
			zerr := err
			if zerr == nil && rep.Zones == nil {
				zerr = errReply
			}
			if j.Answer(rep.Zones, zerr) {
				return Reply{Outcome: Throttled}, edge.ShardAnswer{}, nil
			}
		}
		return rep, edge.ShardAnswer{Sharded: rep.Shards, Gone: rep.Outcome == UnknownSale}, err
	})
	if err != nil {
		return Result{Outcome: Unavailable}, err
	}
	if rep.Outcome != Issued {
		return Result{Outcome: rep.Outcome, OrderID: rep.OrderID, Draw: rep.Draw}, nil
	}
	res := Result{Outcome: Issued, Expires: rep.Expires}
	res.Token, res.Claims, err = c.Keyring.SignBound(r.Sale, r.User, nonce, rep.Expires, r.JKT)
	if err != nil {
		return Result{Outcome: Unavailable}, fmt.Errorf("signing a token: %w", err)
	}
	return res, nil
}
