//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// An operator's draw, through the real backend: a draw sale preheated with seckillctl, entered
// with draw_enter.lua (the gateway's own call), shown while open (live entries per size, the
// commitment, no root yet), refused to a viewer's run, run by an admin (the waves the draw
// made: wave 1 of each size gives min(entries, stock) places), shown again as JSON in the
// backend's own shape, and found in the audit trail.
func TestSeckillctlShowsAndRunsADraw(t *testing.T) {
	srv, svc := backendServer(t)
	ctx := context.Background()
	sale := testenv.ID("ctld")
	t.Cleanup(func() {
		// The sale's keys all share its hash tag; the draw adds some (entries, spent nonces)
		// beside the meta, so they are found by it rather than listed.
		keys, _ := svc.Sales.Redis.Keys(ctx, "seckill:"+contract.SaleTag(sale)+"*").Result()
		if len(keys) > 0 {
			svc.Sales.Redis.Del(ctx, keys...)
		}
		svc.Sales.Redis.SRem(ctx, contract.SalesIndexKey, sale)
	})
	now := time.Now()
	if _, err := svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: sale, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour),
		Variants: []backend.VariantSpec{{ID: "a", Stock: 2}, {ID: "b", Stock: 1}},
		Draw:     &admin.DrawSpec{OpensAt: now.Add(-time.Hour), ClosesAt: now.Add(time.Hour), ClaimWithin: "5m"}}); err != nil {
		t.Fatal(err)
	}
	mustCtl(t, srv, "preheat", sale)
	for i, v := range []string{"a", "a", "a", "b", "b"} {
		rep, err := lua.DrawEnterCall{Sale: sale, User: fmt.Sprintf("u%d", i), Variant: v}.Run(ctx, svc.Sales.Redis)
		if err != nil || rep.Code != 0 {
			t.Fatalf("draw_enter.lua for u%d: code %d, %v", i, rep.Code, err)
		}
	}

	// Showing is a viewer's right; the root is published only at the close.
	code, out, errs := ctl(t, srv, viewerToken, "draw", "show", sale)
	flat := strings.Join(strings.Fields(out), " ")
	if code != 0 {
		t.Fatalf("draw show as a viewer: exit %d %s", code, errs)
	}
	for _, want := range []string{"sale " + sale, "state open", "entries 5", "entries root - (published at the close)", "randomness commit-reveal only (no public beacon)", "VARIANT ENTRIES a 3 b 2"} {
		if !strings.Contains(flat, want) {
			t.Fatalf("draw show while open: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "WAVE") {
		t.Fatalf("draw show while open lists waves:\n%s", out)
	}
	if code, _, errs := ctl(t, srv, viewerToken, "draw", "run", sale); code != 1 || !strings.Contains(errs, "403 forbidden") {
		t.Fatalf("a viewer's draw run: exit %d %s", code, errs)
	}

	out = mustCtl(t, srv, "draw", "run", sale)
	flat = strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"draw run " + sale + ": done", "state drawn", "entries 5",
		"VARIANT WAVE RANKS WINNERS CLAIMED", "a 1 1-2 2 0", "b 1 1-1 1 0"} {
		if !strings.Contains(flat, want) {
			t.Fatalf("draw run: no %q in\n%s", want, out)
		}
	}
	var st admin.DrawStatus
	if err := json.Unmarshal([]byte(mustCtl(t, srv, "draw", "show", sale, "-o", "json")), &st); err != nil || st.SaleID != sale ||
		st.State != "drawn" || st.Entries != 5 || st.EntriesByVariant["a"] != 3 || len(st.Root) != 64 || len(st.SeedCommitment) != 64 || len(st.Waves) != 2 {
		t.Fatalf("draw show -o json: %+v %v", st, err)
	}
	out = mustCtl(t, srv, "draw", "show", sale)
	for _, want := range []string{st.Root, st.SeedCommitment} {
		if !strings.Contains(out, want) {
			t.Fatalf("draw show after the draw: no %q in\n%s", want, out)
		}
	}
	out = mustCtl(t, srv, "audit", "-sale", sale)
	if !strings.Contains(out, "carol") || !strings.Contains(out, "draw") {
		t.Fatalf("the audit trail lacks carol's draw:\n%s", out)
	}

	// A draw without variants enters everyone under the empty variant, which the tables name
	// "-" rather than leave blank.
	single := testenv.ID("ctls")
	t.Cleanup(func() {
		keys, _ := svc.Sales.Redis.Keys(ctx, "seckill:"+contract.SaleTag(single)+"*").Result()
		if len(keys) > 0 {
			svc.Sales.Redis.Del(ctx, keys...)
		}
		svc.Sales.Redis.SRem(ctx, contract.SalesIndexKey, single)
	})
	if _, err := svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: single, Stock: 1, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour),
		Draw: &admin.DrawSpec{OpensAt: now.Add(-time.Hour), ClosesAt: now.Add(time.Hour), ClaimWithin: "5m"}}); err != nil {
		t.Fatal(err)
	}
	mustCtl(t, srv, "preheat", single)
	if rep, err := (lua.DrawEnterCall{Sale: single, User: "solo"}).Run(ctx, svc.Sales.Redis); err != nil || rep.Code != 0 {
		t.Fatalf("draw_enter.lua without a variant: code %d, %v", rep.Code, err)
	}
	if out := strings.Join(strings.Fields(mustCtl(t, srv, "draw", "run", single)), " "); !strings.Contains(out, "VARIANT ENTRIES - 1") ||
		!strings.Contains(out, "CLAIM UNTIL - 1 1-1 1 0") {
		t.Fatalf("the draw of a sale without variants:\n%s", out)
	}

	plain := testenv.ID("ctlp")
	t.Cleanup(func() {
		svc.Sales.Redis.Del(ctx, contract.MetaKey(plain))
		svc.Sales.Redis.SRem(ctx, contract.SalesIndexKey, plain)
	})
	if _, err := svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: plain, Stock: 1, StartsAt: now, EndsAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"nosuch", plain} {
		if code, _, errs := ctl(t, srv, adminToken, "draw", "show", id); code != 1 || !strings.Contains(errs, "404 unknown_sale") {
			t.Fatalf("draw show of %s (no draw): exit %d %s", id, code, errs)
		}
	}
	for _, args := range [][]string{{"draw"}, {"draw", "delete", sale}, {"draw", "run"}, {"draw", "show", "a", "b"}} {
		if code, _, _ := ctl(t, srv, adminToken, args...); code != 2 {
			t.Fatalf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}
