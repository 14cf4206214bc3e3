// Package decision moved to caddymodule/handler/core (issue 36: one home for what every
// handler shares). These aliases keep branches written against the old path compiling.
//
// Deprecated: moved to caddymodule/handler; removed after the merge.
package decision

import "github.com/seckilledge/seckill/caddymodule/handler/core"

// Deprecated: moved to caddymodule/handler; removed after the merge.
type Refusal = core.Refusal

// Deprecated: moved to caddymodule/handler; removed after the merge.
type Generation = core.Generation

// Deprecated: moved to caddymodule/handler; removed after the merge.
var (
	Unauthenticated = core.Unauthenticated
	BadRequest      = core.BadRequest
	UnknownSale     = core.UnknownSale
	NotStarted      = core.NotStarted
	Ended           = core.Ended
	SoldOut         = core.SoldOut
	Paused          = core.Paused
	AlreadyBought   = core.AlreadyBought
	Unavailable     = core.Unavailable
	RoomMissing     = core.RoomMissing
	DrawMissing     = core.DrawMissing
	NotWon          = core.NotWon
	PathMismatch    = core.PathMismatch
)
