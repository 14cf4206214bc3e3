package room

import "github.com/seckilledge/seckill/caddymodule/sealed"

// The room's names for the sealed values it shares with the draw (caddymodule/sealed): its
// tickets, the challenges and their proof of work.
type (
	Key    = sealed.Key
	Sealer = sealed.Sealer
)

// Request headers of the buyer protocol.
const (
	HeaderChallenge = sealed.HeaderChallenge
	HeaderSolution  = sealed.HeaderSolution
	HeaderTicket    = sealed.HeaderTicket
)

var (
	NewSealer       = sealed.NewSealer
	Solve           = sealed.Solve
	LeadingZeroBits = sealed.LeadingZeroBits
)
