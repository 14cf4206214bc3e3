//go:build integration

package ui_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/draw"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/bench/drawcheck"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/drandtest"
)

// A draw whose beacon round is late, in Chromium against the real routes and the
// backend's own draw loop: a draw sale names a stand-in drand chain that withholds the round
// the draw needs. The entries go in and close at closes_at; the loop closes the draw, asks the
// beacon for its round every tick and is refused (503), and the cockpit's draw panel says so:
// closed, "waiting for beacon round N (due ...)" with the failure, no waves, while the public
// result has the root but no seed, no signature and no waves. The stand-in releases the round:
// the loop draws with it, the panel shows the round's randomness and the waves, and the
// published draw (fetched and saved as `seckill-bench verify-draw -save` does, checked from the
// file as `-file` does) passes every step of drawcheck, the round's BLS signature and the
// effective seed included, and a winner's proof with it. A copy whose round signature is
// another round's fails.
// Serial (no t.Parallel): it sets the environment the cockpit reads (t.Setenv).
func TestCockpitShowsADrawWaitingForALateBeaconRoundThenTheDrawVerifies(t *testing.T) {
	e := servicetest.New(t)
	t.Setenv("SECKILL_GATEWAY_METRICS", "")
	beacon := drandtest.New("late beacon "+t.Name(), time.Second, time.Now().Add(-time.Hour))
	t.Cleanup(beacon.Close)
	e.Rebuild(func(o *backend.Options) { o.Drand, o.Beacon = &draw.Drand{URLs: []string{beacon.URL}}, &beacon.Chain })
	srv := e.ControlServer()
	public := httptest.NewServer(e.Svc.OrderHandler()) // the draw's public reads, as the gateway proxies them
	t.Cleanup(public.Close)

	// The entries close a few seconds from now; the round the draw names is the first after
	// that, and the stand-in withholds it before anyone can ask.
	closes := time.Now().UTC().Truncate(time.Second).Add(5 * time.Second)
	round := beacon.Chain.RoundAfter(closes)
	beacon.Withhold(round)
	sale, _ := e.DrawSaleClosingAt(srv.URL, map[string]int{"40": 2, "41": 1}, closes)
	for i, v := range []string{"40", "40", "40", "41", "41", "40", "41"} {
		e.EnterDraw(sale, fmt.Sprintf("u%d", i), v, false)
	}
	vera := map[string]string{"Authorization": "Bearer " + servicetest.ViewerToken}
	var ds admin.DrawStatus
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/sales/"+sale+"/draw", vera, "", &ds); code != http.StatusOK || ds.State != "open" ||
		ds.Beacon == nil || ds.Beacon.Round != round || ds.Beacon.ChainHash != beacon.Chain.ChainHash {
		t.Fatalf("the draw before its close does not name the stand-in's round %d: %d %+v", round, code, ds)
	}

	// The backend's draw loop, as Run starts it, ticking faster than the cockpit reads.
	ctx, stop := context.WithCancel(context.Background())
	var loop sync.WaitGroup
	loop.Add(1)
	go func() { defer loop.Done(); e.Svc.Draws.RunLoop(ctx, 200*time.Millisecond) }()
	t.Cleanup(func() { stop(); loop.Wait() })

	b := browser(t)
	signIn(t, b, srv.URL, sale)
	card := `#sale-` + sale
	beaconLine := card + ` [data-d="beacon"]`
	waitJS(t, b, "the draw panel", fmt.Sprintf(`!document.querySelector(%q).hidden`, card+` [data-d="panel"]`))

	// Closed, and waiting visibly: the round named, its due time, and why it is not drawn yet.
	waitJS(t, b, "the closed draw", textIs(card+` [data-d="state"]`, "closed"))
	waitJS(t, b, "the wait for the late round", fmt.Sprintf(`(() => { const p = document.querySelector(%q);
		return p.dataset.waiting === "1" && p.textContent.includes(%q) && p.textContent.includes(%q) && p.textContent.includes("HTTP 503"); })()`,
		beaconLine, fmt.Sprintf("waiting for beacon round %d (due %s)", round, beacon.Chain.RoundTime(round).UTC().Format(time.RFC3339)), beacon.URL))
	waitJS(t, b, "the root while waiting", fmt.Sprintf(`document.querySelector('%s [data-d="summary"]').textContent.startsWith("7 entries · root ")`, card))
	// The loop keeps asking: the wait is retried, not given up on, and never ranked without it.
	for deadline := time.Now().Add(10 * time.Second); beacon.Requests.Load() < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("the loop asked the beacon %d times in 10s while the round was withheld", beacon.Requests.Load())
		}
		time.Sleep(50 * time.Millisecond) // polling an observable count, with a deadline
	}
	noResult := func(when string) {
		t.Helper()
		waitJS(t, b, "no waves "+when, fmt.Sprintf(`document.querySelectorAll('%s [data-d="waves"] tr').length === 0`, card))
		var res drawcheck.Result
		if code := servicetest.DoJSON(t, "GET", public.URL+"/seckill/"+sale+"/draw/result", nil, "", &res); code != http.StatusOK || res.State != "closed" ||
			res.Seed != "" || len(res.Waves) != 0 || res.EffectiveSeed != "" || res.Beacon == nil || res.Beacon.Round != round || res.Beacon.Signature != "" || len(res.EntriesRoot) != 64 {
			t.Fatalf("the public result %s: %d %+v", when, code, res)
		}
		if n := e.DBInt(`SELECT count(*) FROM draws WHERE sale_id = $1 AND (seed IS NOT NULL OR beacon_signature IS NOT NULL)`, sale); n != 0 {
			t.Fatalf("the seed or a round was kept %s", when)
		}
		if n := e.DBInt(`SELECT count(*) FROM draw_waves WHERE sale_id = $1`, sale); n != 0 {
			t.Fatalf("%d waves %s", n, when)
		}
	}
	noResult("while the round is withheld")
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/sales/"+sale+"/draw", vera, "", &ds); code != http.StatusOK || ds.State != "closed" ||
		!strings.Contains(ds.Waiting, fmt.Sprintf("waiting for beacon round %d", round)) || !strings.Contains(ds.Waiting, "HTTP 503") {
		t.Fatalf("the admin view while waiting: %d %+v", code, ds)
	}

	// The round arrives: the loop's next tick draws with it.
	beacon.Release(round)
	sig := beacon.Sign(round)
	raw, _ := hex.DecodeString(sig)
	rnd := sha256.Sum256(raw)
	waitJS(t, b, "the drawn draw", textIs(card+` [data-d="state"]`, "drawn"))
	waitJS(t, b, "the round's randomness, no more waiting", fmt.Sprintf(`(() => { const p = document.querySelector(%q);
		return p.dataset.waiting === "" && p.textContent.includes(%q) && !p.textContent.includes("waiting"); })()`,
		beaconLine, fmt.Sprintf("drand round %d of chain %s… · round randomness %s…", round, beacon.Chain.ChainHash[:12], hex.EncodeToString(rnd[:])[:12])))
	waitJS(t, b, "a row per wave", fmt.Sprintf(`document.querySelectorAll('%s [data-d="waves"] tr').length === 2`, card))
	waitJS(t, b, "won per size", fmt.Sprintf(`[...document.querySelectorAll('%s [data-d="sizes"] tr')].map(r => r.textContent).join("|") === "40420|41310"`, card))

	// The published draw, fetched page by page from the public reads and saved, then checked
	// from the file: verify-draw's own calls.
	client := drawcheck.Client{Base: public.URL, PageSize: 3}
	f, err := client.Fetch(context.Background(), sale)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "draw.json")
	if err := drawcheck.WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	saved, err := drawcheck.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := saved.ParsedResult()
	if err != nil {
		t.Fatal(err)
	}
	if res.Beacon == nil || res.Beacon.Signature != sig || res.Beacon.Randomness != hex.EncodeToString(rnd[:]) || len(saved.Entries) != 7 {
		t.Fatalf("the published round is not the stand-in's: %+v, %d entries", res.Beacon, len(saved.Entries))
	}
	var winner string
	if err := e.Pool.QueryRow(context.Background(), `SELECT user_id FROM draw_entries WHERE sale_id = $1 AND variant = '41' AND pos = 0`, sale).Scan(&winner); err != nil {
		t.Fatal(err)
	}
	rep := drawcheck.Check(saved.Sale, res, saved.Entries)
	p, err := client.FetchProof(context.Background(), sale, winner)
	if err != nil {
		t.Fatal(err)
	}
	drawcheck.CheckProof(rep, winner, "", p, res, saved.Entries)
	report := rep.String()
	for _, want := range []string{
		fmt.Sprintf("PASS  beacon round %d is published at", round),
		fmt.Sprintf("PASS  beacon round %d: its BLS signature verifies under the chain's public key; randomness SHA-256(signature) = %s", round, hex.EncodeToString(rnd[:])),
		"PASS  the ranking's seed is HMAC-SHA256(seed, ",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if !rep.OK() || strings.Contains(report, "FAIL") {
		t.Fatalf("the published draw does not verify:\n%s", report)
	}

	// The same file with another round's signature (a valid one of the chain, for round+1)
	// and the randomness made to match it: the round's check fails, and so does the draw.
	var doc map[string]any
	if err := json.Unmarshal(saved.Result, &doc); err != nil {
		t.Fatal(err)
	}
	other := beacon.Sign(round + 1)
	rawOther, _ := hex.DecodeString(other)
	rndOther := sha256.Sum256(rawOther)
	bm := doc["beacon"].(map[string]any)
	bm["signature"], bm["randomness"] = other, hex.EncodeToString(rndOther[:])
	if saved.Result, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	tampered, err := saved.ParsedResult()
	if err != nil {
		t.Fatal(err)
	}
	rep = drawcheck.Check(saved.Sale, tampered, saved.Entries)
	if rep.OK() || !strings.Contains(rep.String(), fmt.Sprintf("FAIL  beacon round %d: ", round)) {
		t.Fatalf("a wrong round signature passed:\n%s", rep)
	}
}
