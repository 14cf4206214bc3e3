//go:build integration

package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	clientjs "github.com/seckilledge/seckill/clients/js"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// chromiumPath finds Debian's headless browser. Missing, the test fails: scripts/stack.sh
// install_missing installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: install it (apt-get install -y chromium, or scripts/stack.sh install_missing)")
	return ""
}

// browserProfile is one Chromium with a user-data-dir of its own: another profile is another
// device, whose IndexedDB (and so whose key) the first never sees.
func browserProfile(t *testing.T, bin string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// devicePage is a page of the gateway's origin that loads the published client
// (clients/js/seckill.js, served at /seckill.js) as window.seckill.
const devicePage = `<!doctype html><meta charset="utf-8"><title>device</title>
<script type="module">import * as s from "/seckill.js"; window.seckill = s; document.title = "ready";</script>`

// browserJSON is boundJSON with the page and the client served.
func browserJSON(c gatewayConfig, binding string) []byte {
	var cfg map[string]any
	_ = json.Unmarshal(boundJSON(c, binding), &cfg)
	srv := cfg["apps"].(map[string]any)["http"].(map[string]any)["servers"].(map[string]any)["gw"].(map[string]any)
	static := func(path, ctype, body string) any {
		return map[string]any{
			"match": []any{map[string]any{"path": []string{path}}},
			"handle": []any{map[string]any{"handler": "static_response", "body": body,
				"headers": map[string]any{"Content-Type": []string{ctype}}}},
		}
	}
	srv["routes"] = append([]any{static("/device.html", "text/html; charset=utf-8", devicePage),
		static("/seckill.js", "text/javascript; charset=utf-8", clientjs.Source)}, srv["routes"].([]any)...)
	b, _ := json.Marshal(cfg)
	return b
}

// inPage runs an async function body in the page (after it loaded the client) and decodes its
// JSON-able result into out.
func inPage(t *testing.T, ctx context.Context, body string, out any) {
	t.Helper()
	js := "(async () => { const { Client, DeviceKey, SeckillError } = window.seckill; return JSON.stringify(await (async () => { " + body + " })()); })()"
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("in the page: %v\n%s", err, body)
	}
	if err := json.Unmarshal([]byte(v), out); err != nil {
		t.Fatalf("the page's answer %q: %v", v, err)
	}
}

// TestADeviceBoundTokenCopiedToAnotherBrowserProfileIsRefused: with device_binding required,
// a real Chromium page takes a token bound to its non-extractable key (kept in IndexedDB) and
// buys with it; a token of the same user copied into a second profile (another device: its
// own key) buys nothing there, with the key or without one.
func TestADeviceBoundTokenCopiedToAnotherBrowserProfileIsRefused(t *testing.T) {
	bin := chromiumPath(t)
	rdb := testenv.Redis(t)
	c := boundConfig(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", c.Port)
	handlertest.StartCaddy(t, browserJSON(c, "required"), base)
	sale := newSale(t, rdb, 10, -time.Minute, time.Hour)

	open := func(ctx context.Context) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Navigate(base+"/device.html")); err != nil {
			t.Fatalf("loading the page: %v", err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.title === "ready"`)); err != nil {
			t.Fatalf("the page did not load the client: %v", err)
		}
	}
	client := `const c = new Client({ headers: { "X-User-ID": "u1" }, deviceKey: await DeviceKey.open() });`
	first, second := browserProfile(t, bin), browserProfile(t, bin)
	open(first)

	var issued struct {
		Token, Thumbprint string
		Exported          bool
	}
	inPage(t, first, client+`
		const { token } = await c.token(`+jsString(sale)+`);
		let exported = true;
		try { await crypto.subtle.exportKey("jwk", (await new Promise((ok, ko) => {
			const r = indexedDB.open("seckill"); r.onerror = ko;
			r.onsuccess = () => { const g = r.result.transaction("device-keys").objectStore("device-keys").get("default"); g.onsuccess = () => ok(g.result); g.onerror = ko; };
		})).privateKey); } catch { exported = false; }
		return { Token: token, Thumbprint: await c.deviceKey.thumbprint(), Exported: exported };`, &issued)
	if !strings.HasPrefix(issued.Token, "2.") {
		t.Fatalf("the page's token %q is not bound (2.)", issued.Token)
	}
	if issued.Exported {
		t.Fatal("the device's private key was exportable from the page")
	}
	// The key outlives the page: a reload finds the same one in IndexedDB.
	open(first)
	var again string
	inPage(t, first, `return await (await DeviceKey.open()).thumbprint();`, &again)
	if again != issued.Thumbprint {
		t.Fatalf("after a reload the key's thumbprint is %s, was %s: not kept in IndexedDB", again, issued.Thumbprint)
	}

	// The token, copied into another profile: with that profile's key; with no key (the
	// client, told proof_required, opens the profile's own key and asks once more); and as a
	// bare bearer token (the request sent without the client's DPoP step).
	open(second)
	var refusals []string
	inPage(t, second, client+`
		const out = [];
		const token = `+jsString(issued.Token)+`;
		for (const key of [c.deviceKey, undefined]) {
			c.deviceKey = key;
			try { await c.buy(`+jsString(sale)+`, { token }); out.push("accepted"); }
			catch (e) { out.push(e instanceof SeckillError ? e.status + " " + e.code : String(e)); }
		}
		try {
			await c.request("POST", "/seckill/" + `+jsString(sale)+` + "/buy", { headers: { "X-Seckill-Token": token } });
			out.push("accepted");
		} catch (e) { out.push(e instanceof SeckillError ? e.status + " " + e.code : String(e)); }
		return out;`, &refusals)
	want := []string{"403 " + contract.CodeProofKeyMismatch, "403 " + contract.CodeProofKeyMismatch, "401 " + contract.CodeProofRequired}
	if strings.Join(refusals, ",") != strings.Join(want, ",") {
		t.Fatalf("the copied token in another profile: %v, want %v", refusals, want)
	}
	if got := stockOf(t, rdb, sale); got != 10 {
		t.Fatalf("stock %d after the copies were refused, want 10", got)
	}

	// The device that took it buys.
	var order string
	inPage(t, first, client+`return (await c.buy(`+jsString(sale)+`, { token: `+jsString(issued.Token)+` })).order_id;`, &order)
	if order == "" {
		t.Fatal("the device's own purchase returned no order id")
	}
	if got := stockOf(t, rdb, sale); got != 9 {
		t.Fatalf("stock %d, want 9", got)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
