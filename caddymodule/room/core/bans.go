package core

import (
	"context"

	"go.uber.org/zap"
)

// An admission goes only to a waiter who can use it now. A user the throttle bans
// cannot take a token or buy until the ban ends, so an admission given to him would sit unused
// for a whole session while a present waiter waits. With ban_zones (the throttle zones keyed
// on the room's user id) the gateway that ran an admission step reads the bans of the users
// the step admitted and of a few random live admissions (room_queue.lua's checks), and ends
// the live admissions of the banned ones at once (the script's revoke): their capacity goes
// to the next present waiter at the next step. The ban keys live in their own Cluster slots,
// so the script cannot read them; the gateway reads them in one pipeline with Redis TIME,
// which keeps the rule exact across gateways (the bans are the throttle's, in Redis).

// PassOnBanned ends the live admissions of rep's checked users whom the throttle bans. It runs
// after a call that ran the admission step; a failure only postpones the check to the next
// step (the admission stays as it was: permission, never a unit).
func (g *Gateway) PassOnBanned(ctx context.Context, sale string, c *Cached, rep Reply) {
	if len(g.BanZones) == 0 || len(rep.Checks) == 0 {
		return
	}
	users := dedupe(rep.Checks)
	banned, err := g.Store.Banned(ctx, g.BanZones, users)
	if err != nil || len(banned) == 0 {
		if err != nil {
			g.Logger.Warn("room: reading the throttle's bans failed", zap.String("sale", sale), zap.Error(err))
		}
		return
	}
	v := Visit{Settings: c.Room.Settings, Revoke: make([]Ban, 0, len(banned))}
	for u, until := range banned {
		v.Revoke = append(v.Revoke, Ban{User: u, Member: PlaceOf(c.Room.EntryKey, c.Room.Seed, sale, u).Member(u), Until: until})
	}
	r, err := g.Store.Visit(ctx, sale, v)
	if err != nil {
		g.Logger.Warn("room: revoking banned users' admissions failed", zap.String("sale", sale), zap.Error(err))
		return
	}
	add(g.Counts.Revoked, float64(r.Revoked))
}

func dedupe(us []string) []string {
	seen := make(map[string]struct{}, len(us))
	out := us[:0:0]
	for _, u := range us {
		if _, ok := seen[u]; !ok {
			seen[u] = struct{}{}
			out = append(out, u)
		}
	}
	return out
}
