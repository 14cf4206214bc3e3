//go:build integration

package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// The cockpit's draw panel against the real routes: a draw sale created, preheated and
// entered the way the gateway enters it shows its live state and entries per size from GET
// /admin/sales/{id}/draw; "Run the draw", confirmed, POSTs it as the signed-in admin through the
// page's bridge, and the panel then shows the waves the draw really made, with a winner's
// order counted as a claim. The run is in the audit trail under alice's name. A POST without the
// page's header does not reach the route: the draw stays open and nothing is audited. A draw
// without variants names its one size "–" rather than leave the cell blank.
// Serial (no t.Parallel): it sets the environment the cockpit reads (t.Setenv).
func TestCockpitDrawPanelShowsARealDrawAndRunsItWithThePagesProtections(t *testing.T) {
	e := servicetest.New(t)
	t.Setenv("SECKILL_GATEWAY_METRICS", "")
	srv := e.ControlServer() // the tokens of alice and vera; the draw routes are mounted
	ctx := context.Background()
	sale, starts := e.DrawSaleThroughTheAPI(srv.URL, map[string]int{"40": 2, "41": 3, "42": 1})
	// Ten live entries: five for 40, two for 41, three for 42. One more entrant of 41
	// withdraws, so 41 counts only the entries still standing (n:41 of the draw hash).
	for i, v := range []string{"40", "40", "40", "40", "40", "41", "41", "42", "42", "42"} {
		e.EnterDraw(sale, fmt.Sprintf("u%d", i), v, false)
	}
	e.EnterDraw(sale, "quitter", "41", false)
	e.EnterDraw(sale, "quitter", "", true)
	// A draw without variants enters everyone under the empty variant.
	single, _ := e.DrawSaleThroughTheAPI(srv.URL, map[string]int{"": 1})
	e.EnterDraw(single, "solo1", "", false)
	e.EnterDraw(single, "solo2", "", false)
	plain := e.Sale(3) // not a draw: no panel
	// A draw whose committed seed is gone from Redis: its panel says it is stopped, and why.
	lost, _ := e.DrawSaleThroughTheAPI(srv.URL, map[string]int{"": 1})
	e.Redis.HDel(ctx, contract.DrawKey(lost), "seed")

	b := browser(t)
	signIn(t, b, srv.URL, sale)
	card := `#sale-` + sale
	sizes := fmt.Sprintf(`[...document.querySelectorAll('%s [data-d="sizes"] tr')].map(r => r.textContent).join("|")`, card)
	waitJS(t, b, "the draw panel", fmt.Sprintf(`!document.querySelector(%q).hidden`, card+` [data-d="panel"]`))
	waitJS(t, b, "the draw's state", textIs(card+` [data-d="state"]`, "open"))
	// size, entries, won, claimed: nothing is won before the draw.
	waitJS(t, b, "entries per size", sizes+` === "40500|41200|42300"`)
	waitJS(t, b, "the entry count and commitment", fmt.Sprintf(`document.querySelector('%s [data-d="summary"]').textContent.startsWith("10 entries · commitment ")`, card))
	waitJS(t, b, "the randomness of a draw without a beacon", textIs(card+` [data-d="beacon"]`, "randomness: commit-reveal only (no public beacon)"))
	waitJS(t, b, "no waves yet", fmt.Sprintf(`document.querySelectorAll('%s [data-d="waves"] tr').length === 0`, card))
	waitJS(t, b, "the run button", fmt.Sprintf(`!document.querySelector('%s button[data-act="draw"]').hidden`, card))
	waitJS(t, b, "the size of a draw without variants", fmt.Sprintf(`[...document.querySelectorAll('#sale-%s [data-d="sizes"] tr')].map(r => r.textContent).join("|") === "–200"`, single))
	waitJS(t, b, "a stopped draw saying why", fmt.Sprintf(`((document.querySelector('#sale-%s [data-d="note"]')||{}).textContent||"").startsWith("stopped: the seed of the published commitment is not in Redis")`, lost))
	waitJS(t, b, "no stop on a draw that holds its seed", fmt.Sprintf(`document.querySelector('%s [data-d="note"]').dataset.stopped === ""`, card))
	waitJS(t, b, "no panel on a plain sale", fmt.Sprintf(`document.querySelector('#sale-%s') && document.querySelector('#sale-%s [data-d="panel"]').hidden && document.querySelector('#sale-%s button[data-act="draw"]').hidden`, plain, plain, plain))

	// The page's protections: a POST without X-Seckill-UI, from the page itself and with its
	// session, is refused before the route (the Origin check is the cockpit's own tests').
	st, err := chromedp.Run(b, chromedp.Evaluate[int](`fetch("/admin/ui/api/sales/`+sale+`/draw", {method: "POST", credentials: "same-origin"}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil || st != http.StatusForbidden {
		t.Fatalf("a POST without X-Seckill-UI: %d %v", st, err)
	}
	vera := map[string]string{"Authorization": "Bearer " + servicetest.ViewerToken}
	var ds admin.DrawStatus
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/sales/"+sale+"/draw", vera, "", &ds); code != http.StatusOK || ds.State != "open" {
		t.Fatalf("the draw ran without the page's protections: %d %+v", code, ds)
	}
	if n := e.DBInt(`SELECT count(*) FROM audit_log WHERE sale_id = $1`, sale); n != 0 {
		t.Fatalf("%d audit rows before the draw ran", n)
	}

	if err := chromedp.Do(b,
		chromedp.Click(chromedp.CSS(card+` button[data-act="draw"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
	); err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, "the drawn state", textIs(card+` [data-d="state"]`, "drawn"))
	waitJS(t, b, "the run button gone", fmt.Sprintf(`document.querySelector('%s button[data-act="draw"]').hidden`, card))

	// The draw as the backend holds it: wave 1 of each size gives min(entries, stock) places,
	// to buy within the claim window from the start of the purchase window.
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/sales/"+sale+"/draw", vera, "", &ds); code != http.StatusOK || ds.State != "drawn" ||
		ds.Entries != 10 || len(ds.Root) != 64 || len(ds.Waves) != 3 {
		t.Fatalf("the draw after the button: %d %+v", code, ds)
	}
	for i, want := range []admin.DrawWaveStatus{{Variant: "40", Wave: 1, Hi: 2}, {Variant: "41", Wave: 1, Hi: 2}, {Variant: "42", Wave: 1, Hi: 1}} {
		if w := ds.Waves[i]; w.Variant != want.Variant || w.Wave != want.Wave || w.Lo != 0 || w.Hi != want.Hi || !w.ClaimUntil.Equal(starts.Add(10*time.Minute)) {
			t.Fatalf("wave %d: %+v, want %+v", i, w, want)
		}
	}
	waitJS(t, b, "the root", fmt.Sprintf(`document.querySelector('%s [data-d="summary"]').textContent.includes("root %s…")`, card, ds.Root[:12]))
	waitJS(t, b, "a row per wave", fmt.Sprintf(`document.querySelectorAll('%s [data-d="waves"] tr').length === 3`, card))
	// size, wave, ranks, winners, claimed, then the times.
	for _, w := range ds.Waves {
		want := fmt.Sprintf("%s%d1–%d%d0", w.Variant, w.Wave, w.Hi, w.Hi)
		waitJS(t, b, "wave "+w.Variant, fmt.Sprintf(`((document.querySelector('%s [data-wave="%s:%d"]')||{}).textContent||"").startsWith(%q)`, card, w.Variant, w.Wave, want))
	}
	waitJS(t, b, "won per size", sizes+` === "40520|41220|42310"`)

	// The first of 40 buys: his order reaches Postgres (written here as the consumer would),
	// and the panel, which reads the draw every few seconds, counts it as a claim.
	var winner string
	if err := e.Pool.QueryRow(ctx, `SELECT user_id FROM draw_entries WHERE sale_id = $1 AND variant = '40' AND pos = 0`, sale).Scan(&winner); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Pool.Exec(ctx, `INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at, variant_id) VALUES ($1, $2, $3, 'created', now(), '40')`,
		backendtest.OrderIDAt(t, time.Now()), sale, winner); err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, "the claim per size", sizes+` === "40521|41220|42310"`)
	waitJS(t, b, "the claim in wave 1 of 40", fmt.Sprintf(`((document.querySelector('%s [data-wave="40:1"]')||{}).textContent||"").startsWith("4011–221")`, card))

	// The audit trail: GET /admin/audit?sale= and the page's own list both name alice.
	var trail struct{ Entries []admin.AuditEntry }
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/audit?sale="+sale, vera, "", &trail); code != http.StatusOK || len(trail.Entries) != 1 {
		t.Fatalf("audit of the draw: %d %+v", code, trail)
	}
	var before, after struct {
		State   string
		Entries int
		Waves   int
	}
	a := trail.Entries[0]
	if json.Unmarshal(a.Before, &before) != nil || json.Unmarshal(a.After, &after) != nil || a.Action != "draw" || a.Who != "alice" ||
		a.Role != "admin" || before.State != "open" || before.Entries != 10 || after.State != "drawn" || after.Waves != 3 || a.RequestID == "" {
		t.Fatalf("audit entry of the draw: %+v (before %s, after %s)", a, a.Before, a.After)
	}
	waitJS(t, b, "the draw in the page's audit trail", fmt.Sprintf(`[...document.querySelectorAll('#audit tr')].some(r => r.textContent.includes('alice') && r.textContent.includes('draw') && r.textContent.includes(%q))`, sale))
}
