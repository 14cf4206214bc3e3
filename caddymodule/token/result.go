package token

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/seckilledge/seckill/caddymodule/tokens"
	"github.com/seckilledge/seckill/contract"
)

// Outcome is what the handler answered. Its values are the metric label and, for refusals,
// the contract's code.
type Outcome string

// Outcomes.
const (
	Issued           Outcome = "issued"
	Unauthenticated  Outcome = contract.CodeUnauthenticated
	BadRequest       Outcome = contract.CodeBadRequest
	MethodNotAllowed Outcome = "method_not_allowed" // answered with code bad_request
	UnknownSale      Outcome = contract.CodeUnknownSale
	NotStarted       Outcome = contract.CodeNotStarted
	Ended            Outcome = contract.CodeEnded
	Unavailable      Outcome = contract.CodeUnavailable
)

var outcomes = []Outcome{Issued, Unauthenticated, BadRequest, MethodNotAllowed, UnknownSale, NotStarted, Ended, Unavailable}

// Status is the HTTP status of the outcome.
func (o Outcome) Status() int {
	switch o {
	case Issued:
		return http.StatusOK
	case Unauthenticated:
		return http.StatusUnauthorized
	case BadRequest:
		return http.StatusBadRequest
	case MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case UnknownSale:
		return http.StatusNotFound
	case NotStarted, Ended:
		return http.StatusForbidden
	default:
		return http.StatusServiceUnavailable
	}
}

// Code is the refusal code of the body.
func (o Outcome) Code() string {
	if o == MethodNotAllowed {
		return contract.CodeBadRequest
	}
	return string(o)
}

// Message is the human-readable refusal message.
func (o Outcome) Message() string {
	switch o {
	case Unauthenticated:
		return "no user id: sign in first"
	case BadRequest:
		return "sale and user ids are 1 to 64 characters of [A-Za-z0-9_-]"
	case MethodNotAllowed:
		return "use POST to ask for a purchase token"
	case UnknownSale:
		return "no such sale"
	case NotStarted:
		return "tokens are not issued yet: the sale has not started"
	case Ended:
		return "the sale has ended"
	default:
		return "the token service is unavailable: retry shortly"
	}
}

// Result is the decision on one request.
type Result struct {
	Outcome Outcome
	Expires time.Time // when Issued: the expiry Redis decided
	Token   string
	Claims  tokens.Claims
}

// parseReply reads the token_issue script's reply {outcome, exp_ms, now_ms}.
func parseReply(reply []any) (Result, error) {
	if len(reply) != 3 {
		return Result{}, fmt.Errorf("%d elements, want 3", len(reply))
	}
	s, _ := reply[0].(string)
	exp, ok := reply[1].(int64)
	if !ok {
		return Result{}, fmt.Errorf("exp_ms %T", reply[1])
	}
	switch o := Outcome(s); o {
	case Issued:
		if exp <= 0 {
			return Result{}, fmt.Errorf("issued with exp_ms %d", exp)
		}
		return Result{Outcome: o, Expires: time.UnixMilli(exp)}, nil
	case UnknownSale, NotStarted, Ended:
		return Result{Outcome: o}, nil
	default:
		return Result{}, fmt.Errorf("unknown outcome %q", s)
	}
}

// Static bodies of the refusals.
var refusalBodies = func() map[Outcome][]byte {
	m := map[Outcome][]byte{}
	for _, o := range outcomes[1:] {
		m[o] = []byte(`{"code":"` + o.Code() + `","message":"` + o.Message() + `"}`)
	}
	return m
}()

func writeResult(w http.ResponseWriter, res Result, retryAfter string) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	// A token is a credential of one user: no cache may keep it.
	h["Cache-Control"] = []string{"no-store"}
	var body []byte
	switch res.Outcome {
	case Issued:
		// Token and timestamp are URL-safe ASCII: no JSON escaping needed.
		body = []byte(`{"token":"` + res.Token + `","expires_at":"` + res.Claims.Expires.UTC().Format(time.RFC3339) + `"}`)
	case MethodNotAllowed:
		h["Allow"] = []string{http.MethodPost}
		body = refusalBodies[res.Outcome]
	case Unavailable:
		h["Retry-After"] = []string{retryAfter}
		body = refusalBodies[res.Outcome]
	default:
		body = refusalBodies[res.Outcome]
		if body == nil {
			res.Outcome = Unavailable
			h["Retry-After"] = []string{retryAfter}
			body = refusalBodies[Unavailable]
		}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(res.Outcome.Status())
	_, _ = w.Write(body)
}
