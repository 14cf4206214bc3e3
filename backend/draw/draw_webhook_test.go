//go:build integration

package draw_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// rawReceiver keeps every verified body as received, by event id, and fails the first attempt
// of the ids in failOnce (the sender must retry them with the same id).
type rawReceiver struct {
	mu       sync.Mutex
	bodies   map[string][]string // id -> bodies, in arrival order
	order    []string            // ids in first-arrival order
	failOnce map[string]bool
	badSig   int
}

func (rr *rawReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if contract.VerifyWebhook(servicetest.HookSecretOld, req.Header.Get(contract.SignatureHeader), body, time.Minute, time.Now()) != nil {
		rr.mu.Lock()
		rr.badSig++
		rr.mu.Unlock()
		w.WriteHeader(400)
		return
	}
	id := req.Header.Get("Idempotency-Key")
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if _, seen := rr.bodies[id]; !seen {
		rr.order = append(rr.order, id)
	}
	rr.bodies[id] = append(rr.bodies[id], string(body))
	if rr.failOnce[id] {
		delete(rr.failOnce, id)
		w.WriteHeader(500)
		return
	}
	w.WriteHeader(200)
}

// A draw's events leave the outbox as the contract's DrawEvent, signed like an order's, at
// least once with the same id (and the same bytes) on a retry, in order per entrant; an order
// event next to them keeps its body byte for byte.
func TestDrawEventsAreDeliveredSignedAsDrawEventsAndOrderEventsKeepTheirBody(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	rr := &rawReceiver{bodies: map[string][]string{}, failOnce: map[string]bool{"won-a": true}}
	srv := httptest.NewServer(rr)
	t.Cleanup(srv.Close)
	sale := testenv.ID("d")
	at := time.Date(2026, 12, 1, 14, 0, 0, 123456000, time.UTC)
	until := at.Add(10 * time.Minute)
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := e.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Alice won wave 1 and let it expire; Bob was never reached; Carol bought in an ordinary sale.
	ins := `INSERT INTO webhook_deliveries (id, type, order_id, sale_id, user_id, at, entry_id, variant, wave, claim_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	exec(ins, "won-a", contract.EventDrawWon, "draw:"+sale+":alice", sale, "alice", at, "0000000a", "42", 1, until)
	exec(ins, "expired-a", contract.EventDrawExpired, "draw:"+sale+":alice", sale, "alice", until, "0000000a", "42", 1, until)
	exec(ins, "lost-b", contract.EventDrawLost, "draw:"+sale+":bob", sale, "bob", at, "0000000b", "43", nil, nil)
	exec(`INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at) VALUES ($1, 1, 0, $2, $3)`, sale+"o", at, until)
	exec(`INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at) VALUES ('order-c', $1, 'carol', 'created', $2)`, sale+"o", at)
	exec(`INSERT INTO webhook_deliveries (id, type, order_id, sale_id, user_id, at) VALUES ('created-c', 'order.created', 'order-c', $1, 'carol', $2)`, sale+"o", at)
	e.StartHooks(srv.URL, 2*time.Second, 5)

	testenv.WaitFor(t, 20*time.Second, "all four events delivered", func() bool {
		return e.DBInt(`SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'`) == 4
	})
	rr.mu.Lock()
	defer rr.mu.Unlock()
	ts := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	want := map[string]string{
		"won-a": fmt.Sprintf(`{"id":"won-a","version":1,"type":"draw.won","sale_id":%q,"user_id":"alice","entry_id":"0000000a","variant":"42","wave":1,"claim_until":%q,"at":%q}`,
			sale, ts(until), ts(at)),
		"expired-a": fmt.Sprintf(`{"id":"expired-a","version":1,"type":"draw.expired","sale_id":%q,"user_id":"alice","entry_id":"0000000a","variant":"42","wave":1,"claim_until":%q,"at":%q}`,
			sale, ts(until), ts(until)),
		"lost-b": fmt.Sprintf(`{"id":"lost-b","version":1,"type":"draw.lost","sale_id":%q,"user_id":"bob","entry_id":"0000000b","variant":"43","at":%q}`,
			sale, ts(at)),
		// The order event's body as before draws: no draw field, the order's variant and quantity.
		"created-c": fmt.Sprintf(`{"id":"created-c","version":1,"type":"order.created","order_id":"order-c","sale_id":%q,"variant":"","quantity":1,"user_id":"carol","at":%q}`,
			sale+"o", ts(at)),
	}
	if rr.badSig != 0 {
		t.Fatalf("%d requests failed the signature check", rr.badSig)
	}
	for id, w := range want {
		got := rr.bodies[id]
		if len(got) == 0 {
			t.Fatalf("%s never arrived", id)
		}
		for _, b := range got {
			if b != w {
				t.Fatalf("%s:\n got %s\nwant %s", id, b, w)
			}
		}
	}
	// The failed first attempt came again under the same id: the shop dedupes it.
	if len(rr.bodies["won-a"]) != 2 {
		t.Fatalf("won-a arrived %d times, want 2 (one failed attempt, one retry)", len(rr.bodies["won-a"]))
	}
	// Alice's expiry waited for her win, even while the win was being retried.
	pos := map[string]int{}
	for i, id := range rr.order {
		pos[id] = i
	}
	if pos["expired-a"] < pos["won-a"] {
		t.Fatalf("alice's events arrived out of order: %v", rr.order)
	}
}
