package shop

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// maxWebhookBody bounds what the receiver reads: an event is a few hundred bytes.
const maxWebhookBody = 64 << 10

// maxOrders bounds the orders the shop remembers (the oldest go first): this is a demo that
// keeps everything in memory.
const maxOrders = 10000

// Delivery is one webhook request as the shop received it.
type Delivery struct {
	ReceivedAt time.Time `json:"received_at"`
	// Verified is true when the signature matched the first secret of SECKILL_WEBHOOK_SECRETS;
	// only then was the event believed.
	Verified bool `json:"verified"`
	// StandardVerified is true when the Standard Webhooks signature (webhook-id,
	// webhook-timestamp, webhook-signature) matched too: what a shop verifying with that
	// specification's libraries would check instead (contract.VerifyStandardWebhook here).
	StandardVerified bool `json:"standard_verified"`
	// Duplicate: the event id was seen before (at least once delivery); not applied again.
	Duplicate bool `json:"duplicate,omitempty"`
	// Error says why a delivery was refused.
	Error string                 `json:"error,omitempty"`
	Event *contract.WebhookEvent `json:"event,omitempty"`
}

// Order is an order as the shop knows it: from the webhooks, and from its own payments.
type Order struct {
	ID       string    `json:"order_id"`
	SaleID   string    `json:"sale_id"`
	Variant  string    `json:"variant,omitempty"`
	Quantity int       `json:"quantity"`
	UserID   string    `json:"user_id"`
	Status   string    `json:"status"`
	Updated  time.Time `json:"updated_at"`
}

// Inbox receives the backend's webhooks: it checks each signature, dedupes by event id and
// folds the events into the orders it knows.
type Inbox struct {
	secret string
	keep   int

	mu         sync.Mutex
	deliveries []Delivery        // the last keep, oldest first
	seen       map[string]bool   // ids of verified events still in deliveries
	orders     map[string]*Order // by order id
	order      []string          // order ids, oldest first (eviction)
}

// NewInbox checks signatures with secret and keeps the last keep deliveries.
func NewInbox(secret string, keep int) *Inbox {
	if keep <= 0 {
		keep = 100
	}
	return &Inbox{secret: secret, keep: keep, seen: map[string]bool{}, orders: map[string]*Order{}}
}

// ServeHTTP is POST /webhooks: 204 for an event it believes (again 204 for a duplicate), 401
// for a bad or missing signature, 400 for a body that is not an event.
func (in *Inbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, contract.CodeBadRequest, "the body could not be read")
		return
	}
	d, status := in.receive(r.Header.Get(contract.SignatureHeader), r.Header, body, time.Now())
	if status >= 300 {
		writeError(w, status, codeFor(status), d.Error)
		return
	}
	w.WriteHeader(status)
}

// Receive handles one delivery: the SignatureHeader value and the raw body, at now. It returns
// what it recorded and the HTTP status to answer.
func (in *Inbox) Receive(header string, body []byte, now time.Time) (Delivery, int) {
	return in.receive(header, nil, body, now)
}

// receive is Receive, also checking the Standard Webhooks headers of std (nil: none).
func (in *Inbox) receive(header string, std http.Header, body []byte, now time.Time) (Delivery, int) {
	d := Delivery{ReceivedAt: now.UTC()}
	var ev contract.WebhookEvent
	switch {
	case in.secret == "":
		d.Error = "no webhook secret configured (SECKILL_WEBHOOK_SECRETS)"
	default:
		// The signature first: nothing in the body is read before it is known to be the
		// backend's.
		if err := contract.VerifyWebhook(in.secret, header, body, 0, now); err != nil {
			d.Error = err.Error()
		} else if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" || len(ev.ID) > 128 {
			d.Verified, d.Error = true, "the body is not an event"
		} else {
			d.Verified, d.Event = true, &ev
			// The Standard Webhooks signature covers webhook-id, not the body's id: the two
			// must agree for its id to be the event's.
			d.StandardVerified = std != nil && std.Get(contract.StandardIDHeader) == ev.ID &&
				contract.VerifyStandardWebhook([]string{in.secret}, std, body, now, contract.WebhookVerifyOptions{}) == nil
		}
	}
	if !d.Verified {
		// A refused delivery is listed (the demo shows it) without its body: nothing
		// unverified is repeated back.
		in.record(d)
		return d, http.StatusUnauthorized
	}
	if d.Event == nil {
		in.record(d)
		return d, http.StatusBadRequest
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.seen[ev.ID] {
		d.Duplicate = true
	} else {
		in.apply(ev, now)
	}
	in.recordLocked(d)
	return d, http.StatusNoContent
}

func (in *Inbox) record(d Delivery) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.recordLocked(d)
}

func (in *Inbox) recordLocked(d Delivery) {
	if len(in.deliveries) == in.keep {
		old := in.deliveries[0]
		if old.Event != nil && !old.Duplicate {
			delete(in.seen, old.Event.ID)
		}
		in.deliveries = append(in.deliveries[:0], in.deliveries[1:]...)
	}
	if d.Event != nil && !d.Duplicate {
		in.seen[d.Event.ID] = true
	}
	in.deliveries = append(in.deliveries, d)
}

// rank orders the statuses an order goes through: a late or repeated event never moves an
// order back (created after paid, say).
func rank(status string) int {
	switch status {
	case contract.StatusQueued:
		return 0
	case contract.StatusCreated:
		return 1
	default: // paid, cancelled, failed
		return 2
	}
}

func statusOf(eventType string) string {
	switch eventType {
	case contract.EventOrderCreated:
		return contract.StatusCreated
	case contract.EventOrderPaid:
		return contract.StatusPaid
	case contract.EventOrderCancelled:
		return contract.StatusCancelled
	case contract.EventOrderFailed:
		return contract.StatusFailed
	}
	return ""
}

func (in *Inbox) apply(ev contract.WebhookEvent, now time.Time) {
	status := statusOf(ev.Type)
	if status == "" || !contract.ValidID(ev.OrderID) {
		return // an event type this shop does not know: recorded, not applied
	}
	o := in.orders[ev.OrderID]
	if o == nil {
		if len(in.order) == maxOrders {
			delete(in.orders, in.order[0])
			in.order = in.order[1:]
		}
		o = &Order{ID: ev.OrderID, SaleID: ev.SaleID, Variant: ev.Variant, Quantity: ev.Quantity, UserID: ev.UserID}
		in.orders[ev.OrderID] = o
		in.order = append(in.order, ev.OrderID)
	}
	if o.Status == "" || rank(status) > rank(o.Status) {
		o.Status, o.Updated = status, now.UTC()
	}
}

// MarkPaid records a payment the backend confirmed (its order.paid webhook follows).
func (in *Inbox) MarkPaid(orderID string, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if o := in.orders[orderID]; o != nil && rank(o.Status) < 2 {
		o.Status, o.Updated = contract.StatusPaid, now.UTC()
	}
}

// Order returns the order with id, if the webhooks told of it.
func (in *Inbox) Order(id string) (Order, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	o := in.orders[id]
	if o == nil {
		return Order{}, false
	}
	return *o, true
}

// OrdersOf returns user's orders, newest first.
func (in *Inbox) OrdersOf(user string) []Order {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []Order
	for i := len(in.order) - 1; i >= 0; i-- {
		if o := in.orders[in.order[i]]; o.UserID == user {
			out = append(out, *o)
		}
	}
	return out
}

// Deliveries returns the kept deliveries, oldest first.
func (in *Inbox) Deliveries() []Delivery {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Delivery{}, in.deliveries...)
}

func codeFor(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return contract.CodeUnauthenticated
	case http.StatusNotFound:
		return "not_found"
	case http.StatusConflict:
		return contract.CodeNotPayable
	case http.StatusServiceUnavailable:
		return contract.CodeUnavailable
	}
	return contract.CodeBadRequest
}
