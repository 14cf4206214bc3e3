package room

import "github.com/seckilledge/seckill/caddymodule/room/core"

// The room's names for its core (caddymodule/room/core): the decision, the estimate, the
// summary, the keys and the Store port, which link no Caddy. The handler and its tests use
// them unqualified.
type (
	Settings    = core.Settings
	SaleRoom    = core.SaleRoom
	Outcome     = core.Outcome
	Visit       = core.Visit
	Ban         = core.Ban
	Seen        = core.Seen
	Reply       = core.Reply
	Public      = core.Public
	Store       = core.Store
	Refresh     = core.Refresh
	QueueAnswer = core.QueueAnswer
	Verdict     = core.Verdict
	Pace        = core.Pace
	Estimate    = core.Estimate
	Place       = core.Place
	RedisStore  = core.RedisStore
)

// Codes of the room's refusals (shared DESIGN.md, "Waiting room"), besides the contract's.
const (
	CodeNotAdmitted      = core.CodeNotAdmitted
	CodeInvalidTicket    = core.CodeInvalidTicket
	CodeInvalidChallenge = core.CodeInvalidChallenge
	CodePaused           = core.CodePaused
	CodeNotEnded         = core.CodeNotEnded
	CodeQueueFull        = core.CodeQueueFull
	CodeNotWaiting       = core.CodeNotWaiting
)

// The built-in bound of a room's places (core.DefaultMaxWaiters).
const (
	WaitersPerUnit    = core.WaitersPerUnit
	MinDefaultWaiters = core.MinDefaultWaiters
	MaxDefaultWaiters = core.MaxDefaultWaiters
)

// Outcomes of room_queue.lua.
const (
	Waiting     = core.Waiting
	Admitted    = core.Admitted
	SoldOut     = core.SoldOut
	Ended       = core.Ended
	Paused      = core.Paused
	Lapsed      = core.Lapsed
	Used        = core.Used
	NotEntered  = core.NotEntered
	NotStarted  = core.NotStarted
	Replayed    = core.Replayed
	TooEasy     = core.TooEasy
	QueueFull   = core.QueueFull
	Left        = core.Left
	NotWaiting  = core.NotWaiting
	KeyMismatch = core.KeyMismatch
	Revoked     = core.Revoked
	Prequeue    = core.Prequeue
	Open        = core.Open
	UnknownSale = core.UnknownSale
	NoRoom      = core.NoRoom
)

const (
	maxPresent = core.MaxPresent
	entryIDLen = core.EntryIDLen
	rankLen    = core.RankLen
)

var (
	DefaultMaxWaiters = core.DefaultMaxWaiters
	Decide            = core.Decide
	PublicState       = core.PublicState
	EstimatedWait     = core.EstimatedWait
	FloorRate         = core.FloorRate
	EntryRateAt       = core.EntryRateAt
	PlaceOf           = core.PlaceOf
	Rank              = core.Rank
	EntryIDOfMember   = core.EntryIDOfMember
	RoomKey           = core.RoomKey
	QueueKey          = core.QueueKey
	LiveKey           = core.LiveKey
	SpentKey          = core.SpentKey
	SeenKey           = core.SeenKey
	ClaimKey          = core.ClaimKey
	IdleKey           = core.IdleKey
	KeysKey           = core.KeysKey
	BanKey            = core.BanKey
	CheckAdmission    = core.CheckAdmission

	seenKey = core.SeenKey
	awayKey = core.AwayKey
	backKey = core.BackKey
)
