package backend

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/seckilledge/seckill/contract"
)

// Backend-only refusal codes (the admin API and the baselines).
const (
	codeSaleExists = "sale_exists"
	codeInternal   = "unavailable"
	codeForbidden  = "forbidden"
	// codeNotFound and codeMethodNotAllowed answer a route that does not exist (routes.go).
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
	// codeSalePreheated refuses a baseline purchase in a sale the gate is selling.
	codeSalePreheated   = "sale_preheated"
	codeUnknownDelivery = "unknown_webhook"
	codeAlreadyPending  = "already_pending"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// refuse writes the contract's refusal body. 503 carries Retry-After.
func refuse(w http.ResponseWriter, status int, code, msg string) {
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(1))
	}
	writeJSON(w, status, contract.Refusal{Code: code, Message: msg})
}

// refuseBadValue answers 400 bad_request, naming the request's fields, when err is Postgres
// refusing a value the request gave, and reports whether it did: SQLSTATE class 22 (a data
// exception: 22003 numeric_value_out_of_range, 22008 datetime_field_overflow, ...) or 23514
// (check_violation). The API bounds its fields so that these should not happen; if one still
// slips through, it is the client's value, not an outage: "cannot reach its database" (503,
// retry) would have the client retry a request that can never succeed (issue 24). Call it only
// where err comes from writing the request's values.
func refuseBadValue(w http.ResponseWriter, err error, fields string) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.HasPrefix(pe.Code, "22") && pe.Code != "23514" {
		return false
	}
	refuse(w, http.StatusBadRequest, contract.CodeBadRequest,
		fmt.Sprintf("a value of the request does not fit the database (%s): %s", fields, pe.Message))
	return true
}

func unavailable(w http.ResponseWriter) {
	refuse(w, http.StatusServiceUnavailable, codeInternal, "the order service cannot reach its database; retry shortly")
}
