package backend

import (
	"encoding/json"
	"net/http"
	"strconv"

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

func unavailable(w http.ResponseWriter) {
	refuse(w, http.StatusServiceUnavailable, codeInternal, "the order service cannot reach its database; retry shortly")
}
