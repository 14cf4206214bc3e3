package room

import (
	"net/http"
	"sync"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/contract"
)

// The room's 200 answers are written without encoding/json (a poll answered
// from memory should cost the gateway little more than the bytes): core.AppendAnswer writes the
// same bytes into a pooled buffer, and the sold-out answer of the gate's broadcast, the same
// for every waiter, is encoded once at provision (h.soldOut). Refusals still go through the
// shared refusal writer.

var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// writeAnswer writes a 200 answer, counted under endpoint and label.
func writeAnswer(ep *handler.Endpoints, w http.ResponseWriter, endpoint, label string, a *core.QueueAnswer) error {
	bp := answerBufs.Get().(*[]byte)
	b := core.AppendAnswer((*bp)[:0], a)
	err := writeJSON(ep, w, endpoint, label, b)
	if cap(b) <= 4096 { // an unusual answer's buffer is not kept
		*bp = b[:0]
		answerBufs.Put(bp)
	}
	return err
}

// writeJSON writes a 200 JSON body as refusal.Endpoints.Answer does (the same headers, the same
// count), from bytes.
func writeJSON(ep *handler.Endpoints, w http.ResponseWriter, endpoint, label string, body []byte) error {
	if ep.Requests != nil {
		ep.Requests.WithLabelValues(endpoint, label).Inc()
	}
	// One backing array for both values: a later handler may edit a header's values in place
	// (Caddy's header replacements do), so they are this response's own.
	v := [2]string{"application/json", "no-store"}
	hd := w.Header()
	hd["Content-Type"] = v[0:1:1]
	hd["Cache-Control"] = v[1:2:2]
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(body)
	return err
}

// The room's own refusals (the shared ones are in package refusal).
var (
	noEndpoint = handler.Refusal{Status: http.StatusNotFound, Code: "not_found", Message: "no such room endpoint"}
	noRoom     = handler.Refusal{Status: http.StatusNotFound, Code: contract.CodeUnknownSale, Message: "no waiting room for this sale"}
	notEnded   = handler.Refusal{Status: http.StatusForbidden, Code: core.CodeNotEnded,
		Message: "the pre-queue is published when the sale has ended"}
	badTicket = handler.Refusal{Status: http.StatusForbidden, Code: core.CodeInvalidTicket,
		Message: "the ticket is forged, foreign, expired or malformed; enter again"}
)
