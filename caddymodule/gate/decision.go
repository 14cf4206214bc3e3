package gate

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/seckilledge/seckill/caddymodule/refusal"
	"github.com/seckilledge/seckill/contract"
)

// Outcome is what the gate decided for one purchase. Its string is the stable code clients see
// ("accepted" for a win), the value of {http.seckill.outcome} and the metrics' outcome label.
type Outcome string

// Outcomes. Every refusal is also a contract code.
const (
	Accepted        Outcome = "accepted"
	Unauthenticated Outcome = contract.CodeUnauthenticated
	BadRequest      Outcome = contract.CodeBadRequest
	UnknownSale     Outcome = contract.CodeUnknownSale
	NotStarted      Outcome = contract.CodeNotStarted
	Ended           Outcome = contract.CodeEnded
	Paused          Outcome = contract.CodePaused
	InvalidToken    Outcome = contract.CodeInvalidToken
	TokenExpired    Outcome = contract.CodeTokenExpired
	TokenUsed       Outcome = contract.CodeTokenUsed
	AlreadyBought   Outcome = contract.CodeAlreadyBought
	SoldOut         Outcome = contract.CodeSoldOut
	Unavailable     Outcome = contract.CodeUnavailable
)

// refusals holds the answer of every refusing outcome.
var refusals = map[Outcome]refusal.Refusal{
	Unauthenticated: refusal.Unauthenticated,
	BadRequest:      refusal.BadRequest,
	UnknownSale:     refusal.UnknownSale,
	NotStarted:      refusal.NotStarted,
	Ended:           refusal.Ended,
	Paused:          refusal.Paused,
	InvalidToken: {Status: http.StatusForbidden, Code: contract.CodeInvalidToken,
		Message: "the purchase token is missing or not valid for this user and sale"},
	TokenExpired:  {Status: http.StatusForbidden, Code: contract.CodeTokenExpired, Message: "the purchase token has expired"},
	TokenUsed:     {Status: http.StatusForbidden, Code: contract.CodeTokenUsed, Message: "the purchase token was already used"},
	AlreadyBought: refusal.AlreadyBought,
	SoldOut:       refusal.SoldOut,
	Unavailable: {Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "the purchase service is temporarily unavailable; retry later"},
}

// Refusal is the answer of a refusing outcome; anything unknown answers unavailable.
func (o Outcome) Refusal() refusal.Refusal {
	if r, ok := refusals[o]; ok {
		return r
	}
	return refusals[Unavailable]
}

// Status is the HTTP status of an outcome.
func (o Outcome) Status() int {
	if o == Accepted {
		return http.StatusAccepted
	}
	return o.Refusal().Status
}

// Message is the human-readable message of a refusal.
func (o Outcome) Message() string {
	if o == Accepted {
		return "queued"
	}
	return o.Refusal().Message
}

// Verdict is the answer of one decision.
type Verdict struct {
	Outcome Outcome
	// OrderID is the new order (Accepted) or the user's existing one (AlreadyBought).
	OrderID string
	// StockLeft is the stock after an accepted purchase (of the shard, for a sharded sale).
	StockLeft int64
	// Shards is the shard count of a sharded sale (Outcome Sharded).
	Shards int
	// Target is the sale or shard id the decision was made on (its outbox holds the order).
	Target string
}

// Sharded is the script's answer on a sharded sale's own meta hash: nothing was decided, the
// decision is to be made on the user's shard (contract/shard.go). It never reaches a client.
const Sharded Outcome = "sharded"

// Purchase is the input of one decision.
type Purchase struct {
	// Sale is the sale id, or the shard id ("<sale>:<i>") of the user's shard of a sharded
	// sale: the script runs on that shard's keys.
	Sale, User, OrderID string
	// TokenValue is tokens.StoreValue of the presented, verified token; "" when the route does
	// not require tokens.
	TokenValue string
}

// RelayGroup is the consumer group of the outbox streams. The gate script creates it with the
// stream, so no entry can be written before the group exists.
const RelayGroup = "relay"

var errReply = errors.New("gate: unexpected script reply")

// replyOutcomes maps the script's answer codes (lua/gate.lua) to outcomes.
var replyOutcomes = map[int64]Outcome{
	0: Accepted, 1: UnknownSale, 2: NotStarted, 3: Ended, 4: TokenUsed, 5: AlreadyBought,
	6: SoldOut, 7: Sharded, 8: Paused, 9: TokenExpired,
}

// parseReply reads the gate script's reply.
func parseReply(res []any) (Verdict, error) {
	if len(res) == 0 {
		return Verdict{}, errReply
	}
	code, ok := res[0].(int64)
	if !ok {
		return Verdict{}, errReply
	}
	o, ok := replyOutcomes[code]
	if !ok {
		return Verdict{}, fmt.Errorf("%w: code %d", errReply, code)
	}
	v := Verdict{Outcome: o}
	switch o {
	case Accepted, AlreadyBought:
		v.OrderID, _ = at(res, 1).(string)
		v.StockLeft, _ = at(res, 2).(int64)
		if v.OrderID == "" {
			return Verdict{}, fmt.Errorf("%w: %s without an order id", errReply, o)
		}
	case Sharded:
		k, _ := at(res, 1).(int64)
		if k < 2 || k > contract.MaxShards {
			return Verdict{}, fmt.Errorf("%w: shard count %d", errReply, k)
		}
		v.Shards = int(k)
	}
	return v, nil
}

func at(res []any, i int) any {
	if i < len(res) {
		return res[i]
	}
	return nil
}
