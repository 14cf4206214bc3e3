//go:build integration

package webhook_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/egress"
	"github.com/seckilledge/seckill/internal/testenv"
)

type publicDNS struct{}

func (publicDNS) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
}

// A sale's webhook_url is where the delivery worker connects on an admin's word: it must not be
// the backend's own network (loopback services, the cloud's metadata, private ranges). The
// refusal is a 400 bad_request naming the field; SECKILL_WEBHOOK_ALLOW_CIDRS lifts it for the
// prefixes it lists, never for metadata and link-local addresses.
func TestAWebhookURLPointingInsideIsRefusedAtCreate(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	hooks := &webhook.Worker{Pool: e.Pool, Log: servicetest.QuietLog(), Secrets: []string{servicetest.HookSecretNew}}
	e.Rebuild(func(o *backend.Options) { o.Webhooks = hooks })
	_, admin := e.Servers(false)
	now := time.Now()
	create := func(hook string) (int, contract.Refusal) {
		t.Helper()
		spec := backend.SaleSpec{ID: testenv.ID("guard"), Stock: 1, StartsAt: now, EndsAt: now.Add(time.Hour), WebhookURL: hook}
		b, _ := json.Marshal(spec)
		var ref contract.Refusal
		code := servicetest.DoJSON(t, "POST", admin.URL+"/admin/sales", servicetest.AdminAuth, string(b), &ref)
		return code, ref
	}
	for _, hook := range []string{
		"http://localhost:8082/admin/sales", // resolves to loopback
		"http://127.0.0.1:6379/",
		"http://[::1]:5432/",
		"http://[::ffff:127.0.0.1]/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00:ec2::254]/latest/meta-data/",
		"http://10.0.0.7/hooks",
		"http://192.168.1.1/hooks",
		"http://172.16.0.1/hooks",
		"http://[fc00::1]/hooks",
		"http://[fe80::1%25eth0]/hooks",
		"http://100.64.0.1/hooks",
		"http://0.0.0.0:8081/",
		"http://224.0.0.1/",
	} {
		code, ref := create(hook)
		if code != 400 || ref.Code != contract.CodeBadRequest || !strings.HasPrefix(ref.Message, "webhook_url: ") ||
			!strings.Contains(ref.Message, "webhooks go to the shop") {
			t.Errorf("%s: %d %+v, want 400 bad_request naming webhook_url", hook, code, ref)
		}
	}
	// A name is refused for what it resolves to; its address is not echoed back.
	if _, ref := create("http://localhost:8082/"); strings.Contains(ref.Message, "127.0.0.1") || strings.Contains(ref.Message, "::1") {
		t.Errorf("the refusal shows what localhost resolves to: %q", ref.Message)
	}
	if code, ref := create("https://93.184.215.14/hooks"); code != 201 {
		t.Fatalf("a public receiver: %d %+v", code, ref)
	}
	hooks.Allow = servicetest.AllowLoopback
	for _, hook := range []string{"http://localhost:8082/hooks", "http://127.0.0.1:3000/webhooks", "http://[::ffff:127.0.0.1]:3000/webhooks"} {
		if code, ref := create(hook); code != 201 {
			t.Fatalf("with SECKILL_WEBHOOK_ALLOW_CIDRS=127.0.0.1/32, %s: %d %+v", hook, code, ref)
		}
	}
	// The list admits what it lists, and no allow list admits metadata or link-local.
	hooks.Allow = egress.AllowInside
	for _, hook := range []string{"http://127.0.0.2/", "http://[::1]:5432/", "http://10.0.0.7/hooks"} {
		if code, ref := create(hook); code != 201 {
			t.Errorf("allowing 0.0.0.0/0 and ::/0, %s: %d %+v", hook, code, ref)
		}
	}
	for _, hook := range []string{"http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/latest/meta-data/",
		"http://[fd00:ec2::254]/latest/meta-data/", "http://100.100.100.200/latest/meta-data/", "http://169.254.10.1/",
		"http://[fe80::1%25eth0]/hooks"} {
		if code, ref := create(hook); code != 400 || !strings.HasPrefix(ref.Message, "webhook_url: ") {
			t.Errorf("allowing 0.0.0.0/0 and ::/0, %s: %d %+v, want 400", hook, code, ref)
		}
	}
	hooks.Allow = servicetest.AllowLoopback
	if code, ref := create("http://[::ffff:127.0.0.2]:8082/"); code != 400 {
		t.Errorf("127.0.0.1/32 allowed, ::ffff:127.0.0.2: %d %+v, want 400", code, ref)
	}
}

// The create-time check saw a name resolve outside; by the time of delivery it resolves to
// loopback (DNS rebinding). The worker checks the address it actually dials, so the receiver on
// 127.0.0.1 never hears a request, and the delivery list shows only "blocked": no address, port
// or dial error a scan could read.
func TestAWebhookDialToLoopbackIsBlockedEvenAfterDNSChanges(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	r := servicetest.NewReceiver(t)
	u, _ := url.Parse(r.Srv.URL)
	hook := "http://localhost:" + u.Port() + "/hooks"
	h := e.StartHooksWith(&webhook.Worker{Timeout: time.Second, MaxAttempts: 2, Resolver: publicDNS{}})
	if len(h.Allow) != 0 {
		t.Fatal("the worker allows private receivers")
	}
	_, admin := e.Servers(false)
	sale := testenv.ID("rebind")
	now := time.Now()
	b, _ := json.Marshal(backend.SaleSpec{ID: sale, Stock: 2, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), WebhookURL: hook})
	var ref contract.Refusal
	if code := servicetest.DoJSON(t, "POST", admin.URL+"/admin/sales", servicetest.AdminAuth, string(b), &ref); code != 201 {
		t.Fatalf("create (the name resolved outside): %d %+v", code, ref)
	}
	if _, err := e.Svc.Sales.Preheat(ctx, sale); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Redis.Del(context.Background(), contract.MetaKey(sale), contract.BuyersKey(sale)) })
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(ctx, e.Accept(sale, 1)); err != nil {
		t.Fatal(err)
	}
	h.Wake()
	testenv.WaitFor(t, 20*time.Second, "the event parked dead", func() bool {
		return e.DBInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND state = 'dead'`, sale) == 1
	})
	r.Mu.Lock()
	requests := r.Requests
	r.Mu.Unlock()
	if requests != 0 {
		t.Fatalf("the receiver on loopback got %d requests", requests)
	}
	var list struct{ Deliveries []webhook.DeliveryView }
	viewer := map[string]string{"Authorization": "Bearer " + servicetest.TestViewerToken}
	if code := servicetest.DoJSON(t, "GET", admin.URL+"/admin/webhooks?sale="+sale, viewer, "", &list); code != 200 || len(list.Deliveries) != 1 {
		t.Fatalf("list: %d %+v", code, list)
	}
	d := list.Deliveries[0]
	if d.LastError == nil || *d.LastError != "blocked" || d.LastStatus != nil {
		t.Fatalf("delivery %+v (last_error %v), want last_error \"blocked\" and no status", d, deref(d.LastError))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
