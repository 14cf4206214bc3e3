//go:build integration

package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/npmtools"
	"github.com/seckilledge/seckill/internal/testenv"
)

// delivered is one request as the shop received it: the headers and the raw body.
type delivered struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// verifyWithNode checks every delivery with the Standard Webhooks npm library, as a Node shop
// does (`new Webhook(secret).verify(body, headers)`), under each secret; and that a changed
// body is refused. It returns the events the library decoded.
const verifyWithNode = `
const { Webhook } = require("standardwebhooks");
const fs = require("node:fs");
const deliveries = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const secrets = process.argv.slice(2);
let out = [];
for (const d of deliveries) {
  for (const s of secrets) {
    const ev = new Webhook(s).verify(d.body, d.headers);
    if (ev.id !== d.headers["webhook-id"]) throw new Error("webhook-id " + d.headers["webhook-id"] + " is not the body's id " + ev.id);
    out.push(ev);
    let refused = false;
    try { new Webhook(s).verify(d.body.replace('"version":1', '"version":2'), d.headers); } catch { refused = true; }
    if (!refused) throw new Error("a changed body verified");
  }
}
process.stdout.write(JSON.stringify(out));
`

// Real deliveries of the backend, mid-rotation (two secrets), verify with the Standard
// Webhooks libraries: npm's standardwebhooks (run by Node) and the specification's Go library,
// under the "whsec_" form of each secret. Every body carries its version. (PyPI's library is
// not checked here: this machine reaches the npm registry and the Go proxy only.)
func TestRealDeliveriesVerifyWithTheStandardWebhooksLibraries(t *testing.T) {
	t.Parallel()
	_, node := npmtools.Need(t, "tsc") // the tools' installation; standardwebhooks is beside tsc
	if _, err := os.Stat(filepath.Join(npmtools.Modules(), "standardwebhooks", "package.json")); err != nil {
		t.Fatalf("the standardwebhooks npm library is not installed (bash scripts/stack.sh test-tools): %v", err)
	}
	e := servicetest.New(t)
	var mu sync.Mutex
	var got []delivered
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(400)
			return
		}
		h := map[string]string{}
		for _, k := range []string{contract.StandardIDHeader, contract.StandardTimestampHeader, contract.StandardSignatureHeader} {
			h[k] = r.Header.Get(k)
		}
		mu.Lock()
		got = append(got, delivered{Headers: h, Body: string(body)})
		mu.Unlock()
		w.WriteHeader(204)
	}))
	t.Cleanup(srv.Close)
	e.StartHooks("", time.Second, 5)
	ctx := context.Background()
	_, admin := e.Servers(false)
	sale := testenv.ID("stdhook")
	now := time.Now()
	spec := backend.SaleSpec{ID: sale, Stock: 3, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), WebhookURL: srv.URL + "/hooks"}
	b, _ := json.Marshal(spec)
	if code := servicetest.DoJSON(t, "POST", admin.URL+"/admin/sales", servicetest.AdminAuth, string(b), nil); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if _, err := e.Svc.Sales.Preheat(ctx, sale); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Redis.Del(context.Background(), contract.MetaKey(sale), contract.BuyersKey(sale)) })
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(ctx, e.Accept(sale, 3)); err != nil {
		t.Fatal(err)
	}
	var paid string
	if err := e.Pool.QueryRow(ctx, `SELECT order_id FROM orders WHERE sale_id = $1 LIMIT 1`, sale).Scan(&paid); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Shop.MarkPaid(ctx, paid); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 20*time.Second, "4 events delivered", func() bool {
		return e.DBInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND state = 'delivered'`, sale) == 4
	})
	mu.Lock()
	deliveries := append([]delivered{}, got...)
	mu.Unlock()
	if len(deliveries) != 4 {
		t.Fatalf("%d requests for 4 events", len(deliveries))
	}

	var whsecs []string
	for _, s := range []string{servicetest.HookSecretNew, servicetest.HookSecretOld} {
		w, err := contract.StandardWebhookSecret(s)
		if err != nil {
			t.Fatal(err)
		}
		whsecs = append(whsecs, w)
	}
	for _, d := range deliveries {
		var ev contract.WebhookEvent
		if err := json.Unmarshal([]byte(d.Body), &ev); err != nil || ev.Version != contract.WebhookEventVersion {
			t.Errorf("body %s: version %d, want %d (%v)", d.Body, ev.Version, contract.WebhookEventVersion, err)
		}
		h := http.Header{}
		for k, v := range d.Headers {
			h.Set(k, v)
		}
		for _, w := range whsecs {
			lib, err := standardwebhooks.NewWebhook(w)
			if err != nil {
				t.Fatal(err)
			}
			if err := lib.Verify([]byte(d.Body), h); err != nil {
				t.Errorf("the Go library refuses a delivery: %v\n%+v", err, d)
			}
		}
	}

	file := filepath.Join(t.TempDir(), "deliveries.json")
	b, _ = json.Marshal(deliveries)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, append([]string{"-e", verifyWithNode, file}, whsecs...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+npmtools.Modules())
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("standardwebhooks (npm) refused a real delivery: %v\n%s", err, msg)
	}
	var decoded []contract.WebhookEvent
	if err := json.Unmarshal(out, &decoded); err != nil || len(decoded) != 2*len(deliveries) {
		t.Fatalf("the npm library returned %d events for %d deliveries x 2 secrets (%v): %s", len(decoded), len(deliveries), err, out)
	}
	types := map[string]int{}
	for _, ev := range decoded {
		types[ev.Type]++
	}
	if types[contract.EventOrderCreated] != 6 || types[contract.EventOrderPaid] != 2 {
		t.Errorf("event types as the npm library read them: %v", types)
	}
	if !strings.HasPrefix(whsecs[0], contract.StandardSecretPrefix) {
		t.Errorf("StandardWebhookSecret %q lacks the whsec_ prefix", whsecs[0])
	}
}
