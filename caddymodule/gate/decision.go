package gate

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
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
	InvalidToken    Outcome = contract.CodeInvalidToken
	TokenExpired    Outcome = contract.CodeTokenExpired
	TokenUsed       Outcome = contract.CodeTokenUsed
	AlreadyBought   Outcome = contract.CodeAlreadyBought
	SoldOut         Outcome = contract.CodeSoldOut
	Unavailable     Outcome = contract.CodeUnavailable
)

// Status is the HTTP status of an outcome.
func (o Outcome) Status() int {
	switch o {
	case Accepted:
		return http.StatusAccepted
	case Unauthenticated:
		return http.StatusUnauthorized
	case BadRequest:
		return http.StatusBadRequest
	case UnknownSale:
		return http.StatusNotFound
	case NotStarted, Ended, InvalidToken, TokenExpired, TokenUsed:
		return http.StatusForbidden
	case AlreadyBought, SoldOut:
		return http.StatusConflict
	default:
		return http.StatusServiceUnavailable
	}
}

// Message is the human-readable message of a refusal.
func (o Outcome) Message() string {
	switch o {
	case Unauthenticated:
		return "no user identity on this request"
	case BadRequest:
		return "sale and user ids are 1 to 64 characters of [A-Za-z0-9_-]"
	case UnknownSale:
		return "no such sale"
	case NotStarted:
		return "the sale has not started"
	case Ended:
		return "the sale has ended"
	case InvalidToken:
		return "the purchase token is missing or not valid for this user and sale"
	case TokenExpired:
		return "the purchase token has expired"
	case TokenUsed:
		return "the purchase token was already used"
	case AlreadyBought:
		return "this user already bought in this sale"
	case SoldOut:
		return "sold out"
	case Accepted:
		return "queued"
	default:
		return "the purchase service is temporarily unavailable; retry later"
	}
}

// Verdict is the answer of the decision script.
type Verdict struct {
	Outcome Outcome
	// OrderID is the new order (Accepted) or the user's existing one (AlreadyBought).
	OrderID string
	// StockLeft is the stock after an accepted purchase (of the shard, for a sharded sale).
	StockLeft int64
	// Shards is the shard count of a sharded sale (Outcome Sharded).
	Shards int
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

var decideScript = lua.Script("gate")

// Decide runs the decision script for p: one round trip.
func Decide(ctx context.Context, rdb redis.Scripter, p Purchase) (Verdict, error) {
	keys := []string{contract.MetaKey(p.Sale), contract.BuyersKey(p.Sale), contract.TokensKey(p.Sale), contract.OutboxKey(p.Sale)}
	res, err := decideScript.Run(ctx, rdb, keys, p.Sale, p.User, p.OrderID, p.TokenValue, RelayGroup).Slice()
	if err != nil {
		return Verdict{}, err
	}
	return parseReply(res)
}

var errReply = errors.New("gate: unexpected script reply")

func parseReply(res []any) (Verdict, error) {
	if len(res) == 0 {
		return Verdict{}, errReply
	}
	code, ok := res[0].(int64)
	if !ok {
		return Verdict{}, errReply
	}
	str := func(i int) string {
		if i < len(res) {
			if s, ok := res[i].(string); ok {
				return s
			}
		}
		return ""
	}
	switch code {
	case 0:
		v := Verdict{Outcome: Accepted, OrderID: str(1)}
		if len(res) > 2 {
			v.StockLeft, _ = res[2].(int64)
		}
		if v.OrderID == "" {
			return Verdict{}, errReply
		}
		return v, nil
	case 1:
		return Verdict{Outcome: UnknownSale}, nil
	case 2:
		return Verdict{Outcome: NotStarted}, nil
	case 3:
		return Verdict{Outcome: Ended}, nil
	case 4:
		return Verdict{Outcome: TokenUsed}, nil
	case 5:
		return Verdict{Outcome: AlreadyBought, OrderID: str(1)}, nil
	case 6:
		return Verdict{Outcome: SoldOut}, nil
	case 7:
		var k int64
		if len(res) > 1 {
			k, _ = res[1].(int64)
		}
		if k < 2 || k > contract.MaxShards {
			return Verdict{}, fmt.Errorf("%w: shard count %d", errReply, k)
		}
		return Verdict{Outcome: Sharded, Shards: int(k)}, nil
	}
	return Verdict{}, fmt.Errorf("%w: code %d", errReply, code)
}
