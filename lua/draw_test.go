//go:build integration

package lua

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

const (
	seedA = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	seedB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

// This file's tests stay serial (no t.Parallel, unlike the rest of the package): they wait
// for real time to pass (an expiry, a claim window) and then read what the script did.

func TestDrawSetupKeepsTheFirstSeedAndPreheatWritesADrawSaleOnlyWithIt(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("d")
	now := time.Now()
	pre := PreheatCall{Sale: sale, Stock: 0, Starts: now.Add(time.Hour), Ends: now.Add(2 * time.Hour), Retention: time.Hour,
		Variants: []Variant{{ID: "s", Stock: 3}}, Draw: true}
	if _, _, err := pre.Run(ctx, rdb); err == nil || !strings.Contains(err.Error(), "draw_setup.lua first") {
		t.Fatalf("preheat of a draw sale without its draw: %v", err)
	}
	if rdb.Exists(ctx, contract.MetaKey(sale)).Val() != 0 {
		t.Fatal("a draw sale was written without its draw")
	}
	setup := DrawSetupCall{Sale: sale, Seed: seedA, Commitment: strings.Repeat("a", 64), Opens: now, Closes: now.Add(time.Hour),
		Claim: time.Minute, DMin: 0, DMax: 4, Until: now.Add(3 * time.Hour)}
	if created, c, err := setup.Run(ctx, rdb); err != nil || !created || c != strings.Repeat("a", 64) {
		t.Fatalf("first setup: %v %q %v", created, c, err)
	}
	again := setup
	again.Seed, again.Commitment, again.Claim = seedB, strings.Repeat("b", 64), 2*time.Minute
	if created, c, err := again.Run(ctx, rdb); err != nil || created || c != strings.Repeat("a", 64) {
		t.Fatalf("second setup: %v %q %v, want the first commitment kept", created, c, err)
	}
	h := rdb.HGetAll(ctx, contract.DrawKey(sale)).Val()
	if h["seed"] != seedA || h["claim_ms"] != "120000" || h["state"] != "open" || h["seq"] != "0" || h["dmax"] != "4" {
		t.Fatalf("draw hash %v", h)
	}
	bad := setup
	bad.Claim = 10 * time.Millisecond
	if _, _, err := bad.Run(ctx, rdb); err == nil {
		t.Fatal("a claim under a second accepted")
	}
	limited := pre
	limited.Limit = 2
	if _, _, err := limited.Run(ctx, rdb); err == nil {
		t.Fatal("a draw sale with a limit of 2 accepted")
	}
	if _, _, err := pre.Run(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if rdb.HGet(ctx, contract.MetaKey(sale), "draw").Val() != "1" {
		t.Fatal("meta draw not set")
	}
	if ttl := rdb.PTTL(ctx, contract.DrawKey(sale)).Val(); ttl < 2*time.Hour || ttl > 3*time.Hour+time.Minute {
		t.Fatalf("draw hash PTTL %v, want the meta key's", ttl)
	}
	room := PreheatCall{Sale: sale, Starts: pre.Starts, Ends: pre.Ends, Retention: time.Hour, Room: true}
	rdb.HSet(ctx, contract.RoomKey(sale), "seed", seedA)
	if _, _, err := room.Run(ctx, rdb); err == nil {
		t.Fatal("a draw sale given a room")
	}
}

func TestDrawCloseClosesOnceAndEarly(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("d")
	if _, _, err := (DrawCloseCall{Sale: sale}).Run(ctx, rdb); err == nil {
		t.Fatal("closed a draw that was never set up")
	}
	now := time.Now()
	setup := DrawSetupCall{Sale: sale, Seed: seedA, Commitment: strings.Repeat("a", 64), Opens: now.Add(-time.Hour), Closes: now.Add(time.Hour),
		Claim: time.Minute, Until: now.Add(3 * time.Hour)}
	if _, _, err := setup.Run(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	state, closed, err := DrawCloseCall{Sale: sale}.Run(ctx, rdb)
	if err != nil || state != "closed" || closed.After(time.Now().Add(time.Second)) || closed.Before(now.Add(-time.Second)) {
		t.Fatalf("early close: %s %v %v, want closed now", state, closed, err)
	}
	time.Sleep(5 * time.Millisecond)
	state2, closed2, err := DrawCloseCall{Sale: sale}.Run(ctx, rdb)
	if err != nil || state2 != "closed" || !closed2.Equal(closed) {
		t.Fatalf("second close moved the close: %v -> %v (%v)", closed, closed2, err)
	}
	// A later preheat does not reopen it.
	if _, _, err := setup.Run(ctx, rdb); err != nil || rdb.HGet(ctx, contract.DrawKey(sale), "closes_ms").Val() != strconv.FormatInt(closed.UnixMilli(), 10) {
		t.Fatalf("preheat after the close moved closes_ms: %v", err)
	}
}

func TestDrawWaveOpensNextWavesFromTheUnsoldUnitsAndStopsAtTheEnd(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("d")
	now := time.Now()
	meta, draw := contract.MetaKey(sale), contract.DrawKey(sale)
	rdb.HSet(ctx, meta, "starts_ms", now.Add(-time.Minute).UnixMilli(), "ends_ms", now.Add(time.Hour).UnixMilli(), "v:s", 3, "stock", 3)
	rdb.HSet(ctx, draw, "claim_ms", 60_000)
	call := DrawWaveCall{Sale: sale, Variant: "s"}
	if _, err := call.Run(ctx, rdb); err == nil {
		t.Fatal("a wave opened before the draw counted the variant")
	}
	rdb.HSet(ctx, draw, "n:s", 7)
	w, err := call.Run(ctx, rdb)
	if err != nil || w.Action != DrawWaveOpened || w.Wave != 1 || w.Lo != 0 || w.Hi != 3 || w.ClaimUntil.Before(now.Add(59*time.Second)) {
		t.Fatalf("wave 1: %+v %v", w, err)
	}
	if w2, _ := call.Run(ctx, rdb); w2.Action != DrawWaveRunning || w2.Wave != 1 {
		t.Fatalf("while wave 1 runs: %+v", w2)
	}
	// One unit sold; wave 1's window ends.
	rdb.HIncrBy(ctx, meta, "v:s", -1)
	rdb.HSet(ctx, meta, "w:s", "1:0:3:1")
	w, err = call.Run(ctx, rdb)
	if err != nil || w.Action != DrawWaveOpened || w.Wave != 2 || w.Lo != 3 || w.Hi != 5 || w.EndedWave != 1 || w.EndedHi != 3 {
		t.Fatalf("wave 2: %+v %v", w, err)
	}
	// Nobody buys; wave 3 would give 2 units to the last 2 entries [5, 7); then none is left.
	rdb.HSet(ctx, meta, "w:s", "2:3:5:1")
	if w, _ = call.Run(ctx, rdb); w.Wave != 3 || w.Lo != 5 || w.Hi != 7 {
		t.Fatalf("wave 3: %+v", w)
	}
	rdb.HSet(ctx, meta, "w:s", "3:5:7:1")
	if w, _ = call.Run(ctx, rdb); w.Action != DrawWaveDone || w.EndedWave != 3 || rdb.HGet(ctx, meta, "wd:s").Val() != "1" {
		t.Fatalf("no entry left: %+v, want done", w)
	}
	if w, _ = call.Run(ctx, rdb); w.Action != DrawWaveWasDone {
		t.Fatalf("after done: %+v", w)
	}
	// A sale that ends: the claim window is capped at its end, and the variant is done then.
	other := DrawWaveCall{Sale: sale, Variant: "t"}
	// The end is far enough away that the wave opens before it on a loaded machine.
	end := time.UnixMilli(time.Now().Add(3 * time.Second).UnixMilli())
	rdb.HSet(ctx, meta, "v:t", 5, "ends_ms", end.UnixMilli())
	rdb.HSet(ctx, draw, "n:t", 9)
	w, err = other.Run(ctx, rdb)
	if err != nil || w.Action != DrawWaveOpened || w.ClaimUntil.After(end) {
		t.Fatalf("wave 1 near the end: %+v %v, want claim_until capped at the end", w, err)
	}
	time.Sleep(time.Until(end) + 50*time.Millisecond)
	if w, _ = other.Run(ctx, rdb); w.Action != DrawWaveDone {
		t.Fatalf("at the end: %+v, want done", w)
	}
}
