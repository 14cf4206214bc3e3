//go:build integration

package webhook

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/contract"
)

// One batch of outcomes settles each event as its own write would have: a delivery marks its
// event delivered and makes due the order's next event (blocked behind it), a failure schedules
// a retry or parks the event dead at MaxAttempts, and the outcome of an event whose lease ran
// out (claimed again since: its attempts count moved on) changes nothing.
func TestABatchOfOutcomesSettlesEachEventAndSkipsLostLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := backendtest.DB(t)
	// o1: a (attempt 1, delivered) then b (blocked behind a); o2: c (attempt 2, fails);
	// o3: d (attempt 3 = MaxAttempts, fails: dead); o4: f (claimed again: attempts is 2 in
	// Postgres, the outcome is of attempt 1), then g blocked behind f.
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_deliveries (id, type, order_id, sale_id, user_id, attempts, next_at) VALUES
		('a', 'order.created', 'o1', 's', 'u1', 1, now() + interval '1 minute'),
		('b', 'order.paid', 'o1', 's', 'u1', 0, `+blockedUntil+`),
		('c', 'order.created', 'o2', 's', 'u2', 2, now() + interval '1 minute'),
		('d', 'order.created', 'o3', 's', 'u3', 3, now() + interval '1 minute'),
		('f', 'order.created', 'o4', 's', 'u4', 2, now() + interval '1 minute'),
		('g', 'order.paid', 'o4', 's', 'u4', 0, `+blockedUntil+`)`); err != nil {
		t.Fatal(err)
	}
	w := &Worker{Pool: pool, Log: slog.New(slog.DiscardHandler), RetryMin: time.Hour, RetryMax: 4 * time.Hour, MaxAttempts: 3}
	w.init()
	ev := func(id string, attempts int) delivery {
		return delivery{event: contract.WebhookEvent{ID: id, At: time.Now()}, attempts: attempts}
	}
	w.record([]outcome{
		{d: ev("a", 1), status: 204, at: time.Now()},
		{d: ev("c", 2), status: 503, err: errors.New("receiver answered 503")},
		{d: ev("d", 3), err: &url.Error{Op: "Post", URL: "http://10.1.2.3:6379/",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}},
		{d: ev("f", 1), status: 200, at: time.Now()},
	})

	type row struct {
		state    string
		status   *int
		lastErr  *string
		dueInSec float64
	}
	get := func(id string) row {
		t.Helper()
		var r row
		if err := pool.QueryRow(ctx, `SELECT state, last_status, last_error,
			LEAST(EXTRACT(EPOCH FROM next_at - now()), 1e9)::float8 FROM webhook_deliveries WHERE id = $1`, id).
			Scan(&r.state, &r.status, &r.lastErr, &r.dueInSec); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := get("a"); r.state != "delivered" || r.status == nil || *r.status != 204 || r.lastErr != nil {
		t.Errorf("a: %+v, want delivered with status 204", r)
	}
	if r := get("b"); r.state != "pending" || r.dueInSec > 1 {
		t.Errorf("b: %+v, want pending and due now (released by a's delivery)", r)
	}
	// The retry after attempt 2 waits in [1h, 2h] (RetryMin doubled, jittered to d/2..d).
	if r := get("c"); r.state != "pending" || r.status == nil || *r.status != 503 || r.lastErr == nil || *r.lastErr != "status 503" ||
		r.dueInSec < 3590 || r.dueInSec > 7200 {
		t.Errorf("c: %+v, want pending, 503 recorded, retry in 1-2 hours", r)
	}
	// The outcome, not the dial error: no address or port in what viewers see.
	if r := get("d"); r.state != "dead" || r.status != nil || r.lastErr == nil || *r.lastErr != "refused" {
		t.Errorf("d: %+v, want dead with the outcome \"refused\" and no status", r)
	}
	if r := get("f"); r.state != "pending" || r.status != nil {
		t.Errorf("f: %+v, want untouched (its lease was lost: the new claim delivers it)", r)
	}
	if r := get("g"); r.dueInSec < 1e8 {
		t.Errorf("g: %+v, want still blocked behind f", r)
	}
}
