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

// Issue decides for (sale, user). err, with an Unavailable result, says what went wrong.
func (c *Decider) Issue(ctx context.Context, sale, user string) (Result, error) {
	return c.IssueJoint(ctx, sale, user, nil)
}

// IssueJoint is Issue whose script call also carries joint (nil for none), when the Store is a
// JointStore (a single Redis): the first script call takes it and hands its part of the reply
// to joint.Answer; a refusal of the joint is the outcome Throttled. A request refused before
// any script leaves joint unanswered: the caller settles it on its own.
func (c *Decider) IssueJoint(ctx context.Context, sale, user string, joint edge.Joint) (Result, error) {
	return c.IssueBound(ctx, sale, user, "", joint)
}

// IssueBound is IssueJoint for a token bound to the device key of thumbprint jkt (checked by
// the caller's dpop.Check; "" for a bearer token): tokenformat.SignBound. A user whose room
// place is bound to another key (room_queue.lua keeps the first bound entry's) gets none.
func (c *Decider) IssueBound(ctx context.Context, sale, user, jkt string, joint edge.Joint) (Result, error) {
	if user == "" {
		return Result{Outcome: Unauthenticated}, nil
	}
	if !contract.ValidID(sale) || !contract.ValidID(user) {
		return Result{Outcome: BadRequest}, nil
	}
	nonce, err := c.NewNonce()
	if err != nil {
		return Result{Outcome: Unavailable}, fmt.Errorf("no randomness for a token nonce: %w", err)
	}
	// A sharded sale's token lives in the user's shard, where the gate looks for it.
	js, _ := c.Store.(JointStore)
	if js == nil {
		joint = nil // the caller settles it on its own
	}
	rep, _, err := edge.OnUserShard(c.Shards, sale, user, func(target string) (Reply, edge.ShardAnswer, error) {
		j := joint
		joint = nil // the first call only: a retry on the user's shard does not count the zones again
		if j == nil {
			rep, err := edge.Call(ctx, c.Caller, func(ctx context.Context) (Reply, error) {
				return c.Store.Issue(ctx, target, user, nonce, c.TTL, c.LeadTime, c.RequireAdmission, jkt)
			})
			return rep, edge.ShardAnswer{Sharded: rep.Shards, Gone: rep.Outcome == UnknownSale}, err
		}
		rep, err := edge.Call(ctx, c.Caller, func(ctx context.Context) (Reply, error) {
			return js.IssueJoint(ctx, target, user, nonce, c.TTL, c.LeadTime, c.RequireAdmission, jkt, j)
		})
		zerr := err
		if zerr == nil && rep.Zones == nil {
			zerr = errReply
		}
		if j.Answer(rep.Zones, zerr) {
			return Reply{Outcome: Throttled}, edge.ShardAnswer{}, nil
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
	res.Token, res.Claims, err = c.Keyring.SignBound(sale, user, nonce, rep.Expires, jkt)
	if err != nil {
		return Result{Outcome: Unavailable}, fmt.Errorf("signing a token: %w", err)
	}
	return res, nil
}
