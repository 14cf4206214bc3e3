// Package seckill is the flash-sale edge for Caddy. Importing it (xcaddy does, with
// `--with github.com/seckilledge/seckill`) registers every seckill module:
//
//	seckill                          the app: shared Redis and RabbitMQ connections, metrics
//	admin.api.seckill                admin routes (/seckill/status)
//	http.handlers.seckill_throttle   sliding-window rate limits, exact across instances
//	http.handlers.seckill_token      one-time purchase tokens
//	http.handlers.seckill_gate       the atomic purchase decision (its outbox entries reach
//	                                 RabbitMQ through the app's relay, caddymodule/relay)
//	http.handlers.seckill_room       the waiting room: pre-queue, fair shuffle, admission
//	http.handlers.seckill_draw       a draw sale's entries, sizes, withdrawals and entry page
//	http.handlers.seckill_identity   a signed session (JWT) verified at the edge
//	http.authentication.providers.seckill_jwt   the same verifier, for Caddy's authentication handler
//	http.handlers.seckill_session    an opaque session asked of the shop, cached
//	http.handlers.seckill_cors       the allow list of origins whose pages call the edge
package seckill

import (
	// The app and its admin routes.
	_ "github.com/seckilledge/seckill/caddymodule"
	// seckill_throttle: sliding-window rate limits.
	_ "github.com/seckilledge/seckill/caddymodule/throttle"
	// seckill_token: one-time purchase tokens.
	_ "github.com/seckilledge/seckill/caddymodule/token"
	// seckill_gate: the purchase decision (the app runs the relay that carries its outbox).
	_ "github.com/seckilledge/seckill/caddymodule/gate"
	// seckill_room: the waiting room (fair admission before the purchase).
	_ "github.com/seckilledge/seckill/caddymodule/room"
	// seckill_draw: a sale in draw mode, at the edge (entries and their state).
	_ "github.com/seckilledge/seckill/caddymodule/draw"
	// seckill_identity, seckill_session, seckill_jwt: who the buyer is, from the shop's session.
	_ "github.com/seckilledge/seckill/caddymodule/identity"
	// seckill_cors: the shop's pages on another origin (CORS with credentials).
	_ "github.com/seckilledge/seckill/caddymodule/cors"
)
