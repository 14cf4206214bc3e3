//go:build integration

package webhook

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/contract"
)

// EnqueueDraw records a batch of draw events once (a second run of the same step adds
// nothing), only where a URL will take them, an entrant's later event blocked behind his
// undelivered one; the worker claims them as draw events with the contract's body.
func TestDrawEventsAreRecordedOnceInOrderPerEntrantAndClaimedAsDrawEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := backendtest.DB(t)
	if _, err := pool.Exec(ctx, `INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at) VALUES ('s1', 2, 2, now(), now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	until := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	won := DrawEvent{Type: contract.EventDrawWon, UserID: "alice", EntryID: "0000000a", Variant: "42", Wave: 1, ClaimUntil: until}
	lost := DrawEvent{Type: contract.EventDrawLost, UserID: "bob", EntryID: "0000000b", Variant: "43"}
	expired := DrawEvent{Type: contract.EventDrawExpired, UserID: "alice", EntryID: "0000000a", Variant: "42", Wave: 1, ClaimUntil: until}
	enqueue := func(defaultURL bool, es ...DrawEvent) {
		t.Helper()
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return EnqueueDraw(ctx, tx, "s1", es, defaultURL) }); err != nil {
			t.Fatal(err)
		}
	}
	count := func() (n int) {
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&n)
		return n
	}
	enqueue(false, won, lost) // no URL for the sale, no default: nothing to deliver to
	if n := count(); n != 0 {
		t.Fatalf("%d events recorded without any URL", n)
	}
	enqueue(true, won, lost)
	enqueue(true, won, lost) // the same step again
	if n := count(); n != 2 {
		t.Fatalf("%d events after the same batch twice, want 2", n)
	}
	enqueue(true, expired)
	var blocked bool
	if err := pool.QueryRow(ctx, `SELECT next_at = `+blockedUntil+` FROM webhook_deliveries WHERE id = $1`, DrawEventID("s1", expired)).Scan(&blocked); err != nil || !blocked {
		t.Fatalf("alice's expiry is not blocked behind her undelivered win: %v %v", blocked, err)
	}

	w := &Worker{Pool: pool, Log: slog.New(slog.DiscardHandler)}
	w.init()
	ds, err := w.claim(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 {
		t.Fatalf("claimed %d events, want the win and the loss (the expiry waits)", len(ds))
	}
	for _, d := range ds {
		b, err := d.body()
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		_ = json.Unmarshal(b, &got)
		var ev contract.DrawEvent
		if err := json.Unmarshal(b, &ev); err != nil || d.draw == nil {
			t.Fatalf("%s: %v", b, err)
		}
		switch ev.Type {
		case contract.EventDrawWon:
			if ev.ID != "draw.won:s1:0000000a:1" || ev.UserID != "alice" || ev.EntryID != "0000000a" || ev.Variant != "42" || ev.Wave != 1 ||
				ev.ClaimUntil == nil || !ev.ClaimUntil.Equal(until) || ev.SaleID != "s1" || ev.Version != contract.WebhookEventVersion || len(got) != 10 {
				t.Fatalf("won: %s", b)
			}
		case contract.EventDrawLost:
			if ev.ID != "draw.lost:s1:0000000b:0" || ev.UserID != "bob" || ev.Variant != "43" || got["wave"] != nil || got["claim_until"] != nil || ev.Version != contract.WebhookEventVersion || len(got) != 8 {
				t.Fatalf("lost: %s", b)
			}
		default:
			t.Fatalf("claimed %s", b)
		}
	}
}
