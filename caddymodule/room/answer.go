package room

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/contract"
)

// The room's 200 answers are written without encoding/json (a poll answered
// from memory should cost the gateway little more than the bytes): core.AppendAnswer writes the
// same bytes into a pooled buffer. An answer that is the same for every waiter is encoded once:
// the sold-out answer of the gate's broadcast at provision (h.soldOut), and a sold-out, paused
// or ended room's answer (its state, the units left and refresh_s alone) once for as long as
// they stay the same (stableAnswers). Refusals still go through the shared refusal writer.

var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// stableAnswers are the last encoded answer of each state every waiter is told alike.
type stableAnswers struct {
	soldOut, paused, ended atomic.Pointer[stableAnswer]
}

// stableAnswer is one such answer and what it says.
type stableAnswer struct {
	units, refresh int64
	body           []byte
}

// of is the encoded answer a when it is one every waiter is told alike (nil when not): made
// at its first use, and again when its units or refresh_s change.
func (s *stableAnswers) of(a *core.QueueAnswer) []byte {
	if s == nil || a.Ticket != "" || a.EntryID != "" || a.Position != 0 || a.Ahead != 0 || a.EstimatedWaitS != 0 ||
		len(a.EstimatedWaitRangeS) != 0 || a.AdmittedUntil != "" || a.Reason != "" {
		return nil
	}
	var p *atomic.Pointer[stableAnswer]
	switch core.Outcome(a.State) {
	case core.SoldOut:
		p = &s.soldOut
	case core.Paused:
		p = &s.paused
	case core.Ended:
		p = &s.ended
	default:
		return nil
	}
	if c := p.Load(); c != nil && c.units == a.UnitsLeft && c.refresh == a.RefreshS {
		return c.body
	}
	c := &stableAnswer{units: a.UnitsLeft, refresh: a.RefreshS, body: core.AppendAnswer(nil, a)}
	p.Store(c)
	return c.body
}

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
	badInvitation = handler.Refusal{Status: http.StatusBadRequest, Code: contract.CodeBadRequest,
		Message: "an invitation code is 1 to 64 letters, digits and '-', in X-Seckill-Invitation or the JSON body {\"invitation\"}"}
	unknownInvitation = handler.Refusal{Status: http.StatusForbidden, Code: contract.CodeInvitationUnknown,
		Message: "this sale issued no such invitation code"}
)
