//go:build integration

package draw

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// Flagged entrants enter through the edge's script like anyone (an entry id, state entered),
// and the close leaves them out: the fixed entries, the ranking and every wave hold only the
// others, and a flagged entry reads "lost" once the draw is drawn.
func TestFlaggedEntrantsAreEnteredAndNeverWin(t *testing.T) {
	now := time.Now()
	f := newFixture(t, map[string]int{"M": 10}, now.Add(time.Hour), now.Add(time.Hour), "10m")
	t.Cleanup(func() { f.rdb.Del(f.ctx, contract.DrawFlaggedKey(f.sale), lua.DrawSpentKey(f.sale)) })
	flagged := map[string]bool{}
	for i := range 30 {
		user := fmt.Sprintf("u%02d", i)
		flag := i%2 == 0
		flagged[user] = flag
		rep, err := lua.DrawEnterCall{Sale: f.sale, User: user, Variant: "M", Flag: flag}.Run(f.ctx, f.rdb)
		if err != nil || rep.Code != 0 || rep.State != "entered" || rep.EntryID == "" {
			t.Fatalf("%s's entry: %+v %v", user, rep, err)
		}
	}
	if n := f.rdb.SCard(f.ctx, contract.DrawFlaggedKey(f.sale)).Val(); n != 15 {
		t.Fatalf("%d flagged entrants recorded, want 15", n)
	}
	if err := f.runner.Run(f.ctx, f.sale, time.Second); err != nil {
		t.Fatal(err)
	}
	st, err := f.runner.Status(f.ctx, f.pool, f.sale)
	if err != nil || st.State != StateDrawn || st.Entries != 15 {
		t.Fatalf("status after the draw: %+v %v", st, err)
	}
	entries := f.rdb.HGetAll(f.ctx, contract.DrawEntriesKey(f.sale)).Val()
	ranked := 0
	for user, v := range entries {
		parts := strings.Split(v, ":")
		switch {
		case flagged[user] && len(parts) != 2:
			t.Fatalf("flagged %s was ranked: %q", user, v)
		case !flagged[user] && len(parts) != 3:
			t.Fatalf("%s was not ranked: %q", user, v)
		case !flagged[user]:
			ranked++
		}
	}
	if ranked != 15 {
		t.Fatalf("%d entrants ranked, want the 15 not flagged", ranked)
	}
	// Wave 1 gives the 10 units to 10 of the others.
	if got := f.events(contract.EventDrawWon); got != 10 {
		t.Fatalf("%d draw.won, want 10", got)
	}
	rows, err := f.pool.Query(f.ctx, `SELECT user_id FROM webhook_deliveries WHERE sale_id = $1 AND type = 'draw.won'`, f.sale)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var u string
		_ = rows.Scan(&u)
		if flagged[u] {
			t.Fatalf("flagged %s won", u)
		}
	}
	rows.Close()
	for user, flag := range flagged {
		rep, err := lua.DrawStatusCall{Sale: f.sale, User: user}.Run(f.ctx, f.rdb)
		if err != nil || rep.Code != 0 {
			t.Fatalf("%s's status: %+v %v", user, rep, err)
		}
		if flag && rep.State != "lost" {
			t.Fatalf("flagged %s reads %q after the draw, want lost", user, rep.State)
		}
		if !flag && rep.State != "won" && rep.State != "waiting" {
			t.Fatalf("%s reads %q after the draw", user, rep.State)
		}
	}
}
