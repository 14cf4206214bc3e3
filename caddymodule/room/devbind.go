package room

import (
	"net/http"
	"time"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/dpop/dpophttp"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/sealed"
)

// Device binding of the room's tickets (device_binding, caddymodule/dpop; docs/room.md,
// "Tickets bound to the device"): an entry with a DPoP proof gets a ticket sealed with the
// proof key's thumbprint (sealed.BindTicket, over a ticket itself sealed for that key:
// sealed.TicketFor), and every poll or leave of that ticket needs a fresh proof of the same
// key over the ticket's hash. A copy of the ticket polled from another
// device is refused (proof_key_mismatch), and one without a proof (proof_required).

// entryBinding returns the thumbprint an entry's ticket is to be bound to ("" for a bearer
// ticket: binding off, or optional and no proof came), or the refusal of its proof.
func entryBinding(s *dpophttp.Settings, r *http.Request, now time.Time) (jkt string, ref handler.Refusal, ok bool) {
	if !s.Enabled() || (s.DeviceBinding == dpop.Optional && !dpophttp.HasProof(r)) {
		return "", ref, true
	}
	p, err := s.Check(r, "", now)
	if err != nil {
		ref, _ = dpop.Refusal(err)
		return "", ref, false
	}
	return p.JKT, ref, true
}

// presentedTicket returns the ticket a poll or a leave presents, unwrapped from its binding
// once the request's proof was checked against it; sealedTo, the thumbprint the ticket inside
// was sealed for ("" for a bearer ticket: VerifyTicketPlaceFor); and jkt, the proof key's
// thumbprint (to bind the newer tickets the answer may hand out). With binding off a bound
// ticket is returned as it is (and is then refused as invalid: a gateway that cannot check
// proofs never serves a copy).
func presentedTicket(s *dpophttp.Settings, sealer *sealed.Sealer, r *http.Request, sale, user string, now time.Time) (ticket, sealedTo, jkt string, ref handler.Refusal, ok bool) {
	raw := r.Header.Get(sealed.HeaderTicket)
	if !s.Enabled() {
		return raw, "", "", ref, true
	}
	bound := sealed.TicketBound(raw)
	if !bound && s.DeviceBinding != dpop.Required && !dpophttp.HasProof(r) {
		return raw, "", "", ref, true
	}
	p, err := s.Check(r, raw, now)
	if err == nil && bound {
		if raw, err = sealer.UnbindTicket(raw, sale, user, p.JKT); err != nil {
			err = dpop.ErrKey
		}
		sealedTo = p.JKT
	} else if err == nil && s.DeviceBinding == dpop.Required {
		err = dpop.ErrUnbound
	}
	if err != nil {
		ref, _ = dpop.Refusal(err)
		return "", "", "", ref, false
	}
	return raw, sealedTo, p.JKT, ref, true
}
