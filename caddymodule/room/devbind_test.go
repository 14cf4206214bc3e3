//go:build integration

package room

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/dpop/dpoptest"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// TestABoundTicketIsPolledOnlyWithAProofOfItsKey: with device_binding required, the room's
// entry needs a proof, its ticket is sealed with the proof key's thumbprint, and a poll or a
// leave of that ticket needs a fresh proof of the same key over it (against the real Redis).
var boundRoomGateway = gateway(gatewayConfig{Room: map[string]any{"device_binding": "required"}})

func TestABoundTicketIsPolledOnlyWithAProofOfItsKey(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	base := boundRoomGateway.Base(t)
	r := newRoom(t, rdb, 5, -time.Second, time.Hour, roomArgs{Rate: "1", Oversubscribe: "1", SessionMS: "60000", DifficultyMin: "0", DifficultyMax: "0"})
	queue := base + "/seckill/" + r.Sale + "/queue"
	device, thief := dpoptest.NewKey(t), dpoptest.NewKey(t)

	if a := enter(t, base, r.Sale, "u1", nil); a.Status != http.StatusUnauthorized || a.Code != contract.CodeProofRequired {
		t.Fatalf("entry without a proof: %d %s, want 401 proof_required", a.Status, a.Raw)
	}
	a := enter(t, base, r.Sale, "u1", map[string]string{dpop.Header: device.Proof(t, "POST", queue, "")})
	if a.Status != http.StatusOK || !strings.HasPrefix(a.Ticket, "b.") {
		t.Fatalf("entry with a proof: %d %s, want 200 and a bound (b.) ticket", a.Status, a.Raw)
	}
	ticket := a.Ticket
	pollWith := func(proofs ...string) reply {
		h := map[string]string{sealed.HeaderTicket: ticket}
		if len(proofs) > 0 {
			h[dpop.Header] = proofs[0]
		}
		return do(t, http.MethodGet, queue, "u1", h)
	}
	for _, c := range []struct {
		name   string
		proofs []string
		status int
		code   string
	}{
		{"no proof (the ticket copied alone)", nil, http.StatusUnauthorized, contract.CodeProofRequired},
		{"another device's key", []string{thief.Proof(t, "GET", queue, ticket)}, http.StatusForbidden, contract.CodeProofKeyMismatch},
		{"a proof for the entry", []string{device.Proof(t, "POST", queue, ticket)}, http.StatusUnauthorized, contract.CodeProofWrongTarget},
		{"a proof over no ticket", []string{device.Proof(t, "GET", queue, "")}, http.StatusUnauthorized, contract.CodeInvalidProof},
		{"a proof too old", []string{device.Sign(t, dpoptest.Claims{HTM: "GET", HTU: queue, IAT: time.Now().Add(-time.Hour).Unix(), JTI: dpoptest.NewJTI(t), ATH: dpop.TokenHash(ticket)})}, http.StatusUnauthorized, contract.CodeProofExpired},
	} {
		if got := pollWith(c.proofs...); got.Status != c.status || got.Code != c.code {
			t.Errorf("poll, %s: %d %s, want %d %s", c.name, got.Status, got.Raw, c.status, c.code)
		}
	}
	if got := pollWith(device.Proof(t, "GET", queue, ticket)); got.Status != http.StatusOK || got.State == "" {
		t.Fatalf("poll with the device's proof: %d %s, want 200 with a state", got.Status, got.Raw)
	} else if got.Ticket != "" && !strings.HasPrefix(got.Ticket, "b.") {
		t.Fatalf("a poll handed out an unbound ticket %q", got.Ticket)
	}
	// A bearer ticket (the room bound nothing when it was sealed) is refused under required.
	sealer, err := sealed.NewSealer(sealed.Key{ID: "k1", Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	bearer := sealer.Ticket(r.Sale, "u1", time.Now().Add(time.Hour))
	if got := do(t, http.MethodGet, queue, "u1", map[string]string{sealed.HeaderTicket: bearer, dpop.Header: device.Proof(t, "GET", queue, bearer)}); got.Code != contract.CodeUnboundToken {
		t.Fatalf("a bearer ticket under required: %d %s, want unbound_token", got.Status, got.Raw)
	}
	if got := do(t, http.MethodDelete, queue, "u1", map[string]string{sealed.HeaderTicket: ticket, dpop.Header: thief.Proof(t, "DELETE", queue, ticket)}); got.Code != contract.CodeProofKeyMismatch {
		t.Fatalf("leave with another key: %d %s, want proof_key_mismatch", got.Status, got.Raw)
	}
	// With the device's proof the room itself answers (u1 was admitted at once: not_waiting).
	if got := do(t, http.MethodDelete, queue, "u1", map[string]string{sealed.HeaderTicket: ticket, dpop.Header: device.Proof(t, "DELETE", queue, ticket)}); got.Status != http.StatusOK && got.Code != core.CodeNotWaiting {
		t.Fatalf("leave with the device's proof: %d %s, want the room's answer", got.Status, got.Raw)
	}
}

// devicePage loads the published client (clients/js/seckill.js, served at /seckill.js).
const devicePage = `<!doctype html><meta charset="utf-8"><title>device</title>
<script type="module">import * as s from "/seckill.js"; window.seckill = s; document.title = "ready";</script>`

// TestTheRoomAndThePurchaseWithRequiredBindingInARealBrowser: in Chromium, the client enters
// the room with its device key, polls until admitted, takes a token and buys, every step with
// a proof; the ticket and the token, copied into a second browser profile (another device's
// IndexedDB, so another key), poll and buy nothing there.
func TestTheRoomAndThePurchaseWithRequiredBindingInARealBrowser(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	base := requiredGateway.Base(t)
	r := newRoom(t, rdb, 5, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000", DifficultyMin: "0", DifficultyMax: "0"})

	profile := func() context.Context {
		ctx := pagetest.Context(t, 90*time.Second)
		if _, err := chromedp.Run(ctx, chromedp.Navigate(base+"/device.html")); err != nil {
			t.Fatalf("loading the page: %v", err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.title === "ready"`)); err != nil {
			t.Fatalf("the page did not load the client: %v", err)
		}
		return ctx
	}
	run := func(ctx context.Context, body string, out any) {
		t.Helper()
		js := `(async () => { const { Client, DeviceKey, SeckillError } = window.seckill;
			const c = new Client({ headers: { "X-User-ID": "alice" }, deviceKey: await DeviceKey.open(), sleep: (ms) => new Promise((ok) => setTimeout(ok, Math.min(ms, 200))) });
			const sale = ` + jsQuote(r.Sale) + `;
			const refusal = async (f) => { try { await f(); return "accepted"; } catch (e) { return e instanceof SeckillError ? e.status + " " + e.code : String(e); } };
			return JSON.stringify(await (async () => { ` + body + ` })()); })()`
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("in the page: %v\n%s", err, body)
		}
		if err := json.Unmarshal([]byte(v), out); err != nil {
			t.Fatalf("the page's answer %q: %v", v, err)
		}
	}
	first, second := profile(), profile()

	var got struct{ Ticket, State, Token string }
	run(first, `
		const place = await c.enter(sale);
		const admitted = await c.waitForAdmission(sale, place);
		const { token } = await c.token(sale);
		return { Ticket: place.ticket, State: admitted.state, Token: token };`, &got)
	if got.State != "admitted" || !strings.HasPrefix(got.Ticket, "b.") || !strings.HasPrefix(got.Token, "2.") {
		t.Fatalf("the device's room and token: %+v, want admitted, a bound ticket and a bound token", got)
	}

	var copied []string
	run(second, `return [
		await refusal(() => c.poll(sale, `+jsQuote(got.Ticket)+`)),
		await refusal(() => c.buy(sale, { token: `+jsQuote(got.Token)+` })),
	];`, &copied)
	want := []string{"403 " + contract.CodeProofKeyMismatch, "403 " + contract.CodeProofKeyMismatch}
	if strings.Join(copied, ",") != strings.Join(want, ",") {
		t.Fatalf("the ticket and token copied into another profile: %v, want %v", copied, want)
	}

	var bought []string
	run(first, `return [await refusal(() => c.buy(sale, { token: `+jsQuote(got.Token)+` }))];`, &bought)
	if len(bought) != 1 || bought[0] != "accepted" {
		t.Fatalf("the device's purchase: %v, want accepted", bought)
	}
}

func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestTheWaitingPageEntersAndBuysUnderRequiredBinding: the waiting page as shipped, unchanged,
// in Chromium against a room, a token issuer and a gate that all require device binding: its
// client is refused proof_required at the entry, opens the device's key and enters with a
// proof, polls with proofs until admitted, and the Buy button takes a bound token and buys.
func TestTheWaitingPageEntersAndBuysUnderRequiredBinding(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	base := requiredGateway.Base(t)
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000", DifficultyMin: "0", DifficultyMax: "0"})
	ctx := pagetest.Context(t, time.Minute)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(base+"/seckill/"+r.Sale+"/queue?user=alice")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.getElementById("sk-buy").hidden`)); err != nil {
		t.Fatalf("the Buy button never showed: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.ID("sk-buy"))); err != nil {
		t.Fatalf("click Buy: %v", err)
	}
	order, err := chromedp.Run(ctx, chromedp.Poll[string](`(document.getElementById("sk-order").textContent.length >= 6) && document.getElementById("sk-order").textContent`))
	if err != nil {
		note, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("sk-problem")))
		t.Fatalf("no order after Buy: %v (note %q)", err, note)
	}
	if got, _ := rdb.HGet(context.Background(), contract.BuyersKey(r.Sale), "alice").Result(); got == "" || got != order {
		t.Fatalf("the buyers hash says %q, the page %q", got, order)
	}
	// Every step was bound: the page's key is in its IndexedDB and the place's ticket is a bound one.
	ticketBound, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise((ok) => { const r = indexedDB.open("seckill"); r.onsuccess = () => { const g = r.result.transaction("device-keys").objectStore("device-keys").get("default"); g.onsuccess = () => ok(!!g.result && g.result.privateKey.extractable === false); }; r.onerror = () => ok(false); })`, chromedp.EvalAwaitPromise))
	if err != nil || !ticketBound {
		t.Fatalf("the page holds no non-extractable device key in IndexedDB (%v)", err)
	}
}
