//go:build integration

package lua

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The draw's waitlist (docs/draw.md, "The waitlist"): a winner's released unit raises the
// current wave's upper rank by one at once. The next rank buys it through the gate (each
// gateway runs gate.lua: what one sees, all see), the releasing winner cannot take it back, a
// retried compensation raises nothing more, and with no rank left the unit only goes back to
// its variant's stock.
func TestADrawWaitlistGivesAReleasedUnitToTheNextRankAtOnce(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := claimSale(t, rdb, Variant{ID: "M", Stock: 2}, Variant{ID: "L", Stock: 1})
	t.Cleanup(func() { rdb.Del(context.Background(), contract.DrawRaisesKey(sale)) })
	claimMs := int64(60_000)
	if err := rdb.HSet(ctx, contract.DrawKey(sale), "waitlist", 1, "claim_ms", claimMs, "n:M", 3, "n:L", 1).Err(); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(5 * time.Second)
	claimWave(t, rdb, sale, "M", 1, 0, 2, until)
	claimWave(t, rdb, sale, "L", 1, 0, 1, until)
	claimEntry(t, rdb, sale, "ann", "00000001:M:0")
	claimEntry(t, rdb, sale, "bob", "00000002:M:1")
	claimEntry(t, rdb, sale, "cat", "00000003:M:2") // waiting: the next rank of M
	claimEntry(t, rdb, sale, "dan", "00000004:L:0")

	for _, u := range []string{"ann", "bob"} {
		if res := buyItem(t, rdb, sale, u, "o-"+u, "M", 0); code(res) != 0 {
			t.Fatalf("winner %s: %v", u, res)
		}
	}
	if res := buyItem(t, rdb, sale, "cat", "o-cat", "M", 0); !notWon(res) {
		t.Fatalf("the next rank before any release: %v, want not_admitted (draw)", res)
	}
	// ann's order is not paid in time: the backend compensates it, twice (a retry).
	for i := 0; i < 2; i++ {
		done, _, err := CompensateCall{Sale: sale, OrderID: "o-ann", User: "ann", Variant: "M"}.Run(ctx, rdb)
		if err != nil || done != (i == 0) {
			t.Fatalf("compensation %d: done %v, %v", i, done, err)
		}
	}
	w := rdb.HGet(ctx, contract.MetaKey(sale), "w:M").Val()
	p := strings.Split(w, ":")
	if len(p) != 4 || p[0] != "1" || p[1] != "0" || p[2] != "3" {
		t.Fatalf("w:M = %q after one release (retried), want wave 1 [0, 3)", w)
	}
	if lg := rdb.LRange(ctx, contract.DrawRaisesKey(sale), 0, -1).Val(); len(lg) != 1 || !strings.HasPrefix(lg[0], "1:2:") || !strings.HasSuffix(lg[0], ":M:o-ann") {
		t.Fatalf("raises log %q, want one raise of wave 1 giving position 2 for o-ann", lg)
	}
	if got := rdb.HGet(ctx, contract.DrawEntriesKey(sale), "ann").Val(); got != "00000001:M:0:r" {
		t.Fatalf("ann's entry %q, want it marked released", got)
	}
	// The window now ends no earlier than claim_ms after the raise (wave 1 was to end in 5 s).
	st, err := (DrawStatusCall{Sale: sale, User: "cat"}).Run(ctx, rdb)
	if err != nil || st.State != "won" || st.ClaimUntilMS < until.UnixMilli()+claimMs/2 {
		t.Fatalf("cat's status: %+v %v, want won until about a claim window from now", st, err)
	}
	if st, err := (DrawStatusCall{Sale: sale, User: "ann"}).Run(ctx, rdb); err != nil || st.State != "expired" {
		t.Fatalf("ann's status: %+v %v, want expired", st, err)
	}
	if res := buyItem(t, rdb, sale, "ann", "o-ann-2", "M", 0); !notWon(res) {
		t.Fatalf("the releasing winner again: %v, want not_admitted (draw)", res)
	}
	if res := buyItem(t, rdb, sale, "cat", "o-cat", "M", 0); code(res) != 0 {
		t.Fatalf("the raised rank: %v, want sold", res)
	}
	if got := rdb.HGet(ctx, contract.MetaKey(sale), "v:M").Val(); got != "0" {
		t.Fatalf("v:M = %s, want 0", got)
	}

	// L: dan is its only entrant; his release finds no rank left: the unit goes back to L.
	if res := buyItem(t, rdb, sale, "dan", "o-dan", "L", 0); code(res) != 0 {
		t.Fatalf("dan: %v", res)
	}
	if done, _, err := (CompensateCall{Sale: sale, OrderID: "o-dan", User: "dan", Variant: "L"}).Run(ctx, rdb); err != nil || !done {
		t.Fatalf("compensation of dan: %v %v", done, err)
	}
	if w := rdb.HGet(ctx, contract.MetaKey(sale), "w:L").Val(); !strings.HasPrefix(w, "1:0:1:") {
		t.Fatalf("w:L = %q, want unraised", w)
	}
	if got := rdb.HGet(ctx, contract.MetaKey(sale), "v:L").Val(); got != "1" {
		t.Fatalf("v:L = %s, want the unit back", got)
	}
	if n := rdb.LLen(ctx, contract.DrawRaisesKey(sale)).Val(); n != 1 {
		t.Fatalf("%d raises, want 1", n)
	}
}

// reserved_clamp.lua: the waitlist's reserve never above the units its log holds, nor the
// stock, nor below 0; freed units reopen a sold-out sale.
func TestTheReserveClampKeepsTheWaitlistReserveWithinTheLogAndTheStock(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("rc")
	meta, olog := contract.MetaKey(sale), contract.RoomOfferLogKey(sale)
	t.Cleanup(func() { rdb.Del(context.Background(), meta, olog) })
	if _, _, ok, err := (ReservedClampCall{Sale: sale}).Run(ctx, rdb); err != nil || ok {
		t.Fatalf("a sale without a reserve: ok %v %v", ok, err)
	}
	rdb.RPush(ctx, olog, "v:1:1:o1", "v:2:1:o2", "v:3:1:o3", "o:4:9:ann", "b:5:9:ann", "g:6:1:-")
	for _, c := range []struct {
		stock, reserved, want int64
	}{
		{10, 5, 1},  // the log holds 3 - 1 bought - 1 given back = 1
		{10, 1, 1},  // agrees
		{10, 0, 0},  // below: a purchase not logged yet; never raised
		{0, 1, 0},   // above the stock
		{10, -2, 0}, // below 0
	} {
		rdb.HSet(ctx, meta, "stock", c.stock, "reserved", c.reserved, "state", "sold_out")
		before, after, ok, err := (ReservedClampCall{Sale: sale}).Run(ctx, rdb)
		if err != nil || !ok || before != c.reserved || after != c.want {
			t.Fatalf("stock %d reserved %d: %d -> %d (%v %v), want %d", c.stock, c.reserved, before, after, ok, err, c.want)
		}
		if got := rdb.HGet(ctx, meta, "reserved").Val(); got != fmt.Sprint(c.want) {
			t.Fatalf("meta reserved %s, want %d", got, c.want)
		}
		if st := rdb.HGet(ctx, meta, "state").Val(); (c.want < c.reserved && c.stock-c.want > 0) != (st == "open") {
			t.Fatalf("stock %d reserved %d -> %d: state %s", c.stock, c.reserved, c.want, st)
		}
	}
}
