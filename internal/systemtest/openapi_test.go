//go:build integration

package systemtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/drandtest"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/openapicheck"
	"github.com/seckilledge/seckill/internal/proc"
	"github.com/seckilledge/seckill/internal/testenv"
)

// binaries is the one build of cmd/caddy and cmd/seckill-backend the stacks of this package
// share (harness.Binaries).
var binaries harness.Binaries

func TestMain(m *testing.M) { os.Exit(binaries.Run(m)) }

// checked is an HTTP client that validates every request it sends and every answer it gets
// against docs/openapi.yaml, and fails t on each difference (internal/openapicheck): every
// whole-system test's exchanges with the gateways and the backend go through it.
func checked(t testing.TB) *http.Client {
	t.Helper()
	doc, err := openapicheck.Default()
	if err != nil {
		t.Fatal(err)
	}
	return openapicheck.Client(doc, t)
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// tour is the whole stack as processes (the root Caddyfile's :8080 site, one backend) and a
// checked client; each call is validated against docs/openapi.yaml.
type tour struct {
	t                       *testing.T
	c                       *http.Client
	gw, orders, admin       string
	adminTok, viewTok, shop string
	redis                   string // the stack's Redis (host:port)
}

// reply is one decoded answer.
type reply struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte // the body as it came (a page, a text)
}

func (r reply) code() string { s, _ := r.Body["code"].(string); return s }
func (r reply) str(k string) string {
	s, _ := r.Body[k].(string)
	return s
}

// do sends one request; hdr holds headers (X-User-ID, tokens, tickets).
func (tr *tour) do(method, url string, hdr map[string]string, body string) reply {
	tr.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		tr.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := tr.c.Do(req)
	if err != nil {
		tr.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// want fails the test unless r has the status (and, for a refusal, the code).
func (tr *tour) want(what string, r reply, status int, code string) reply {
	tr.t.Helper()
	if r.Status != status || r.code() != code {
		tr.t.Fatalf("%s: got %d %q %v, want %d %q", what, r.Status, r.code(), r.Body, status, code)
	}
	return r
}

func (tr *tour) bearer(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok}
}

func user(u string, more ...string) map[string]string {
	h := map[string]string{"X-User-ID": u}
	for i := 0; i+1 < len(more); i += 2 {
		h[more[i]] = more[i+1]
	}
	return h
}

// solve finds the counter of a proof of work: SHA-256("<challenge>:<counter>") with at least
// bits leading zero bits.
func solve(challenge string, difficulty int) string {
	for n := 0; ; n++ {
		s := strconv.Itoa(n)
		sum := sha256.Sum256([]byte(challenge + ":" + s))
		z := 0
		for _, b := range sum {
			if b == 0 {
				z += 8
				continue
			}
			z += bits.LeadingZeros8(b)
			break
		}
		if z >= difficulty {
			return s
		}
	}
}

// pace keeps one user's calls under the root Caddyfile's user zone (5 a second, then a ban).
func pace() { time.Sleep(250 * time.Millisecond) }

// Every route of docs/openapi.yaml, driven against the real gateway (the root Caddyfile) and
// backend processes with the real Redis, RabbitMQ and Postgres, through a client that
// validates each request and answer against the document: a sale with a waiting room and
// proof of work from entry to payment, a draw from entry to proof, every admin route, and the
// refusals on the way. It fails on any difference between the document and the answers, and
// on any operation of the document that the tour did not exercise.
func TestEveryRouteAnswersAsDocsOpenAPIYamlSays(t *testing.T) {
	testenv.NeedsServices(t, "Redis, RabbitMQ and Postgres")
	doc, err := openapicheck.Default()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := binaries.Dir("../..")
	if err != nil {
		t.Fatal(err)
	}
	tr := &tour{t: t, c: checked(t), adminTok: randomHex(t, 24), viewTok: randomHex(t, 24), shop: randomHex(t, 24)}
	s, err := harness.Start(context.Background(), harness.Options{
		Name: "openapi", Root: "../..", BinDir: bin, LogDir: t.TempDir(),
		AdminToken: tr.adminTok, TokenKey: randomHex(t, 32), PrivateRedis: true,
		AMQPURL: testenv.AMQPURL(), MgmtURL: testenv.AMQPMgmtURL(), PGAdminURL: testenv.PGAdminURL(),
		Env: []string{"SECKILL_ADMIN_TOKENS=look:" + tr.viewTok + ":viewer,till:" + tr.shop + ":shop",
			// The fairness report's routes answer with a signing key: the demo's does.
			"SECKILL_REPORT_KEY=demo"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*proc.Server{s.Gateways[0].Server, s.Backends[0].Server} {
				t.Logf("%s's log:\n%s", p.Name, proc.LogTail(p.Log))
			}
		}
		s.Close()
	})
	tr.gw, tr.orders, tr.admin, tr.redis = s.Gateways[0].URL, "http://"+s.Backends[0].Upstream, s.Backends[0].URL, s.RedisAddr

	tr.ops()
	roomSale := tr.adminRoutes()
	tr.roomAndPurchase(roomSale)
	tr.drawSale()

	// Every operation of the document was exercised (the live page's are a browser's: its
	// own tests drive them; the baselines are off unless SECKILL_BASELINES=1).
	skip := map[string]bool{"cockpit": true, "cockpitLogin": true, "cockpitLogout": true, "cockpitEvents": true,
		"cockpitRead": true, "cockpitWrite": true, "cockpitPatch": true,
		"baselinePessimistic": true, "baselineOptimistic": true}
	seen := doc.Seen()
	var missed []string
	for _, op := range doc.Operations() {
		if !skip[op.ID] && len(seen[op.ID]) == 0 {
			missed = append(missed, op.Method+" "+op.Path+" ("+op.ID+")")
		}
	}
	if len(missed) > 0 {
		t.Errorf("operations of docs/openapi.yaml no test exercised:\n  %s", strings.Join(missed, "\n  "))
	}
	var ids []string
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t.Logf("checked %s: %s", id, strings.Join(seen[id], ", "))
	}
}

// report publishes the ended sale's fairness report and reads it through the gateway: the
// signed JSON, the page a browser gets, the evidence and the keys; and the refusals of a sale
// whose report is not there.
func (tr *tour) report(ended string) {
	adm := tr.bearer(tr.adminTok)
	live := testenv.ID("oar")
	now := time.Now().UTC()
	tr.want("create a live sale", tr.do("POST", tr.admin+"/admin/sales", adm, fmt.Sprintf(`{"id":%q,"stock":1,"starts_at":%q,"ends_at":%q}`,
		live, now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))), 201, "")
	tr.want("publish a live sale's report", tr.do("POST", tr.admin+"/admin/sales/"+live+"/report", adm, ""), 409, "not_ended")
	tr.want("publish as a viewer", tr.do("POST", tr.admin+"/admin/sales/"+ended+"/report", tr.bearer(tr.viewTok), ""), 403, "forbidden")
	tr.want("publish no sale's report", tr.do("POST", tr.admin+"/admin/sales/"+testenv.ID("none")+"/report", adm, ""), 404, "unknown_sale")
	kid := tr.want("publish", tr.do("POST", tr.admin+"/admin/sales/"+ended+"/report", adm, ""), 200, "").Body["signature"].(map[string]any)["kid"]
	tr.want("publish again", tr.do("POST", tr.admin+"/admin/sales/"+ended+"/report", adm, ""), 200, "")
	signed := tr.want("report", tr.do("GET", tr.gw+"/seckill/"+ended+"/report", nil, ""), 200, "")
	if got := signed.Body["signature"].(map[string]any)["kid"]; got != kid {
		tr.t.Errorf("the report served is signed by %v, the one published by %v", got, kid)
	}
	page := tr.want("report page", tr.do("GET", tr.gw+"/seckill/"+ended+"/report", map[string]string{"Accept": "text/html", "Accept-Language": "fr-FR"}, ""), 200, "")
	if !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(page.Raw), `<html lang="fr"`) ||
		!strings.Contains(string(page.Raw), fmt.Sprint(kid)) {
		tr.t.Errorf("the report's page: %v\n%.300s", page.Header, page.Raw)
	}
	tr.want("report as JSON for a browser", tr.do("GET", tr.gw+"/seckill/"+ended+"/report?format=json", map[string]string{"Accept": "text/html"}, ""), 200, "")
	tr.want("report of a live sale", tr.do("GET", tr.gw+"/seckill/"+live+"/report", nil, ""), 404, "not_published")
	tr.want("report of no sale", tr.do("GET", tr.gw+"/seckill/"+testenv.ID("none")+"/report", nil, ""), 404, "unknown_sale")
	if ev := tr.want("evidence", tr.do("GET", tr.gw+"/seckill/"+ended+"/report/evidence", nil, ""), 200, ""); !strings.Contains(string(ev.Raw), ":paid:") {
		tr.t.Errorf("the evidence holds no paid order:\n%s", ev.Raw)
	}
	tr.want("evidence of a live sale", tr.do("GET", tr.gw+"/seckill/"+live+"/report/evidence", nil, ""), 404, "not_published")
	keys := tr.want("report keys", tr.do("GET", tr.gw+"/.well-known/seckill-report-keys", nil, ""), 200, "")
	if ks, _ := keys.Body["keys"].([]any); len(ks) == 0 || ks[0].(map[string]any)["kid"] != kid || ks[0].(map[string]any)["demo"] != true {
		tr.t.Errorf("the key set %v does not list the demo key %v first", keys.Body, kid)
	}
}

func (tr *tour) ops() {
	for _, base := range []string{tr.gw, tr.orders, tr.admin} {
		tr.want("healthz", tr.do("GET", base+"/healthz", nil, ""), 200, "")
	}
	tr.want("metrics", tr.do("GET", tr.admin+"/metrics", nil, ""), 200, "")
	tr.want("no such gateway route", tr.do("GET", tr.gw+"/nowhere", nil, ""), 404, "not_found")
	tr.want("no such admin route", tr.do("GET", tr.admin+"/admin/nowhere", tr.bearer(tr.adminTok), ""), 404, "not_found")
}

// adminRoutes creates the sales the tour uses and runs every control; it returns the room sale.
func (tr *tour) adminRoutes() string {
	now := time.Now().UTC()
	rfc := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	adm := tr.bearer(tr.adminTok)
	plain := testenv.ID("oa")
	spec := fmt.Sprintf(`{"id":%q,"stock":3,"starts_at":%q,"ends_at":%q,"pay_within":"15m"}`, plain, rfc(-time.Minute), rfc(time.Hour))
	tr.want("create without a token", tr.do("POST", tr.admin+"/admin/sales", nil, spec), 401, "unauthenticated")
	tr.want("create as a viewer", tr.do("POST", tr.admin+"/admin/sales", tr.bearer(tr.viewTok), spec), 403, "forbidden")
	tr.want("create", tr.do("POST", tr.admin+"/admin/sales", adm, spec), 201, "")
	tr.want("create again", tr.do("POST", tr.admin+"/admin/sales", adm, spec), 409, "sale_exists")
	tr.want("create a bad spec", tr.do("POST", tr.admin+"/admin/sales", adm, `{"id":"x","stock":1,"Stock":2}`), 400, "bad_request")
	tr.want("status before preheat", tr.do("GET", tr.admin+"/admin/sales/"+plain, tr.bearer(tr.viewTok), ""), 200, "")
	tr.want("status of no sale", tr.do("GET", tr.admin+"/admin/sales/"+testenv.ID("none"), adm, ""), 404, "unknown_sale")
	tr.want("preheat", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/preheat", adm, ""), 200, "")
	tr.want("list", tr.do("GET", tr.admin+"/admin/sales", tr.bearer(tr.viewTok), ""), 200, "")

	// The purchase path of a sale without a room: token, buy, order, payment.
	u := testenv.ID("buyer")
	tr.want("buy without a token", tr.do("POST", tr.gw+"/seckill/"+plain+"/buy", user(u), ""), 403, "invalid_token")
	pace()
	tok := tr.want("token", tr.do("POST", tr.gw+"/seckill/"+plain+"/token", user(u), ""), 200, "").str("token")
	pace()
	order := tr.want("buy", tr.do("POST", tr.gw+"/seckill/"+plain+"/buy", user(u, "X-Seckill-Token", tok), ""), 202, "").str("order_id")
	pace()
	tr.want("buy again with the used token", tr.do("POST", tr.gw+"/seckill/"+plain+"/buy", user(u, "X-Seckill-Token", tok), ""), 409, "already_bought")
	pace()
	tr.want("token after buying", tr.do("POST", tr.gw+"/seckill/"+plain+"/token", user(u), ""), 409, "already_bought")
	tr.want("token with no user", tr.do("POST", tr.gw+"/seckill/"+plain+"/token", nil, ""), 401, "unauthenticated")
	tr.want("token of no sale", tr.do("POST", tr.gw+"/seckill/"+testenv.ID("none")+"/token", user(testenv.ID("u")), ""), 404, "unknown_sale")
	tr.want("a forged token", tr.do("POST", tr.gw+"/seckill/"+plain+"/buy", user(testenv.ID("u"), "X-Seckill-Token", "forged"), ""), 403, "invalid_token")
	tr.want("a bad body", tr.do("POST", tr.gw+"/seckill/"+plain+"/buy", user(testenv.ID("u"), "X-Seckill-Token", tok), `{"quantity":0,"extra":1}`), 400, "bad_request")
	tr.want("the buy route takes POST only", tr.do("GET", tr.gw+"/seckill/"+plain+"/buy", user(testenv.ID("u")), ""), 404, "not_found")
	var st string
	testenv.WaitFor(tr.t, 20*time.Second, "the order in Postgres", func() bool {
		r := tr.want("order", tr.do("GET", tr.gw+"/orders/"+order, user(u), ""), 200, "")
		st = r.str("status")
		if st == "queued" {
			time.Sleep(500 * time.Millisecond) // the orders_user zone: 20 in 10 s
		}
		return st != "queued"
	})
	tr.want("order at the order listener", tr.do("GET", tr.orders+"/orders/"+order, user(u), ""), 200, "")
	tr.want("another user's order", tr.do("GET", tr.gw+"/orders/"+order, user(testenv.ID("u")), ""), 404, "unknown_order")
	tr.want("the retired pay route", tr.do("POST", tr.gw+"/orders/"+order+"/pay", user(u), ""), 404, "not_found")
	tr.want("an order path not in canonical form", tr.do("GET", tr.gw+"/orders/a/../"+order, user(u), ""), 400, "bad_request")
	tr.want("pay as admin", tr.do("POST", tr.admin+"/shop/orders/"+order+"/paid", adm, ""), 403, "forbidden")
	tr.want("pay", tr.do("POST", tr.admin+"/shop/orders/"+order+"/paid", tr.bearer(tr.shop), ""), 200, "")
	tr.want("pay again", tr.do("POST", tr.admin+"/shop/orders/"+order+"/paid", tr.bearer(tr.shop), ""), 200, "")
	tr.want("pay no order", tr.do("POST", tr.admin+"/shop/orders/"+testenv.ID("o")+"/paid", tr.bearer(tr.shop), ""), 404, "unknown_order")

	// The controls, each as the gateway sees it.
	tr.want("pause", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/pause", adm, ""), 200, "")
	tr.want("pause again", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/pause", adm, ""), 409, "already_paused")
	testenv.WaitFor(tr.t, 5*time.Second, "the gateway to say paused", func() bool {
		return tr.do("POST", tr.gw+"/seckill/"+plain+"/token", user(testenv.ID("u")), "").code() == "paused"
	})
	tr.want("resume", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/resume", adm, ""), 200, "")
	tr.want("resume again", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/resume", adm, ""), 409, "not_paused")
	tr.want("stock", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/stock", adm, `{"add":2,"request_id":"oa-add-1"}`), 200, "")
	tr.want("stock replayed", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/stock", adm, `{"add":2,"request_id":"oa-add-1"}`), 200, "")
	tr.want("stock request id reused", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/stock", adm, `{"add":3,"request_id":"oa-add-1"}`), 409, "request_id_reused")
	tr.want("stock too much removed", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/stock", adm, `{"add":-100,"request_id":"oa-rm-1"}`), 409, "insufficient_stock")
	tr.want("stock with a variant on a sale without", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/stock", adm, `{"add":1,"request_id":"oa-v-1","variant":"red"}`), 400, "bad_request")
	tr.want("move the end", tr.do("PATCH", tr.admin+"/admin/sales/"+plain, adm, `{"ends_at":"`+rfc(2*time.Hour)+`"}`), 200, "")
	tr.want("move the end into the past", tr.do("PATCH", tr.admin+"/admin/sales/"+plain, adm, `{"ends_at":"`+rfc(-2*time.Hour)+`"}`), 400, "bad_request")
	tr.want("reconcile", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/reconcile", adm, ""), 200, "")
	tr.want("rebalance an unsharded sale", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/rebalance", adm, ""), 409, "not_sharded")
	tr.want("audit", tr.do("GET", tr.admin+"/admin/audit?sale="+plain, tr.bearer(tr.viewTok), ""), 200, "")
	tr.want("audit bad limit", tr.do("GET", tr.admin+"/admin/audit?limit=0", adm, ""), 400, "bad_request")
	tr.want("webhooks", tr.do("GET", tr.admin+"/admin/webhooks?state=dead", tr.bearer(tr.viewTok), ""), 200, "")
	tr.want("replay no webhook", tr.do("POST", tr.admin+"/admin/webhooks/"+testenv.ID("w")+"/replay", adm, ""), 404, "unknown_webhook")
	tr.want("draw of a sale without one", tr.do("GET", tr.admin+"/admin/sales/"+plain+"/draw", adm, ""), 404, "unknown_sale")
	tr.want("end", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/end", adm, ""), 200, "")
	tr.want("end again", tr.do("POST", tr.admin+"/admin/sales/"+plain+"/end", adm, ""), 409, "sale_ended")
	testenv.WaitFor(tr.t, 5*time.Second, "the gateway to say ended", func() bool {
		return tr.do("POST", tr.gw+"/seckill/"+plain+"/token", user(testenv.ID("u")), "").code() == "ended"
	})

	tr.report(plain)

	// A sharded sale with variants: a rebalance that runs.
	sharded := testenv.ID("oav")
	tr.want("create sharded", tr.do("POST", tr.admin+"/admin/sales", adm, fmt.Sprintf(
		`{"id":%q,"starts_at":%q,"ends_at":%q,"shards":2,"variants":[{"id":"red","stock":4},{"id":"blue","stock":2}],"per_user_limit":2}`,
		sharded, rfc(-time.Minute), rfc(time.Hour))), 201, "")
	tr.want("preheat sharded", tr.do("POST", tr.admin+"/admin/sales/"+sharded+"/preheat", adm, ""), 200, "")
	tr.want("stock without the variant", tr.do("POST", tr.admin+"/admin/sales/"+sharded+"/stock", adm, `{"add":1,"request_id":"oa-sv-1"}`), 409, "variant_sale")
	tr.want("stock of a variant", tr.do("POST", tr.admin+"/admin/sales/"+sharded+"/stock", adm, `{"add":1,"request_id":"oa-sv-2","variant":"red"}`), 200, "")
	tr.want("rebalance", tr.do("POST", tr.admin+"/admin/sales/"+sharded+"/rebalance", adm, ""), 200, "")
	tr.want("status sharded", tr.do("GET", tr.admin+"/admin/sales/"+sharded, adm, ""), 200, "")
	v := testenv.ID("u")
	tok = tr.want("token sharded", tr.do("POST", tr.gw+"/seckill/"+sharded+"/token", user(v), ""), 200, "").str("token")
	pace()
	tr.want("buy two red", tr.do("POST", tr.gw+"/seckill/"+sharded+"/buy", user(v, "X-Seckill-Token", tok), `{"variant":"red","quantity":2}`), 202, "")
	pace()
	tok = tr.want("token again", tr.do("POST", tr.gw+"/seckill/"+sharded+"/token", user(v), ""), 200, "").str("token")
	pace()
	tr.want("a third unit", tr.do("POST", tr.gw+"/seckill/"+sharded+"/buy", user(v, "X-Seckill-Token", tok), `{"variant":"red"}`), 409, "limit_reached")
	w := testenv.ID("u")
	tok = tr.want("token other", tr.do("POST", tr.gw+"/seckill/"+sharded+"/token", user(w), ""), 200, "").str("token")
	pace()
	// Each shard holds one blue unit: two are more than the buyer's shard has.
	tr.want("two blue sold out", tr.do("POST", tr.gw+"/seckill/"+sharded+"/buy", user(w, "X-Seckill-Token", tok), `{"variant":"blue","quantity":2}`), 409, "sold_out")

	// The room's sale: proof of work, a fast room, a short session.
	room := testenv.ID("oar")
	tr.want("create room sale", tr.do("POST", tr.admin+"/admin/sales", adm, fmt.Sprintf(
		`{"id":%q,"stock":2,"starts_at":%q,"ends_at":%q,"room":{"rate":100,"oversubscribe":1,"session":"1m","prequeue":"0s","difficulty":[4,4],"max_waiters":50}}`,
		room, rfc(-time.Minute), rfc(time.Hour))), 201, "")
	tr.want("preheat room sale", tr.do("POST", tr.admin+"/admin/sales/"+room+"/preheat", adm, ""), 200, "")
	tr.want("invitations without an invitation lane", tr.do("POST", tr.admin+"/admin/sales/"+room+"/invitations", adm, `{"count":2,"uses":1}`), 409, "no_invitation_lane")
	// A sale whose room has lanes: its invitation lane's codes are issued once.
	laned := testenv.ID("oal")
	tr.want("create a sale with lanes", tr.do("POST", tr.admin+"/admin/sales", adm, fmt.Sprintf(
		`{"id":%q,"stock":2,"starts_at":%q,"ends_at":%q,"room":{"rate":100,"oversubscribe":1,"session":"1m","prequeue":"0s","lanes":[{"name":"invited","kind":"invitation","share":0.5},{"name":"public","kind":"public","share":0.5}]}}`,
		laned, rfc(-time.Minute), rfc(time.Hour))), 201, "")
	tr.want("preheat the sale with lanes", tr.do("POST", tr.admin+"/admin/sales/"+laned+"/preheat", adm, ""), 200, "")
	tr.want("invitations", tr.do("POST", tr.admin+"/admin/sales/"+laned+"/invitations", adm, `{"count":2,"uses":1}`), 201, "")
	tr.want("invitations of no sale", tr.do("POST", tr.admin+"/admin/sales/"+testenv.ID("none")+"/invitations", adm, `{"count":2,"uses":1}`), 404, "unknown_sale")
	return room
}

// roomAndPurchase drives a sale's waiting room: room state, challenge, entry with proof of
// work, polls to admission, token and purchase, leave.
func (tr *tour) roomAndPurchase(sale string) {
	base := tr.gw + "/seckill/" + sale
	tr.want("room", tr.do("GET", base+"/room", nil, ""), 200, "")
	tr.want("room of no sale", tr.do("GET", tr.gw+"/seckill/"+testenv.ID("none")+"/room", nil, ""), 404, "unknown_sale")
	tr.want("room takes GET", tr.do("DELETE", base+"/room", nil, ""), 405, "bad_request")
	tr.want("prequeue before the end", tr.do("GET", base+"/room/prequeue", nil, ""), 403, "not_ended")

	u := testenv.ID("w")
	tr.want("token before the room", tr.do("POST", base+"/token", user(u), ""), 403, "not_admitted")
	pace()
	tr.want("enter without proof", tr.do("POST", base+"/queue", user(u), ""), 403, "invalid_challenge")
	pace()
	ch := tr.want("challenge", tr.do("GET", base+"/challenge", user(u), ""), 200, "")
	pace()
	sol := solve(ch.str("challenge"), int(ch.Body["difficulty"].(float64)))
	in := tr.want("enter", tr.do("POST", base+"/queue", user(u, "X-Seckill-Challenge", ch.str("challenge"), "X-Seckill-Solution", sol), ""), 200, "")
	ticket := in.str("ticket")
	pace()
	tr.want("poll", tr.do("GET", base+"/queue", user(u, "X-Seckill-Ticket", ticket), ""), 200, "")
	pace()
	tr.want("enter with the same proof again", tr.do("POST", base+"/queue", user(u, "X-Seckill-Challenge", ch.str("challenge"), "X-Seckill-Solution", sol), ""), 403, "invalid_challenge")
	pace()
	tr.want("poll with a forged ticket", tr.do("GET", base+"/queue", user(u, "X-Seckill-Ticket", "forged"), ""), 403, "invalid_ticket")
	state := in.str("state")
	for i := 0; state != "admitted" && i < 30; i++ {
		time.Sleep(time.Second)
		r := tr.want("poll", tr.do("GET", base+"/queue", user(u, "X-Seckill-Ticket", ticket), ""), 200, "")
		if t := r.str("ticket"); t != "" {
			ticket = t
		}
		state = r.str("state")
	}
	if state != "admitted" {
		tr.t.Fatalf("never admitted (state %q)", state)
	}
	pace()
	tr.want("leave once admitted", tr.do("DELETE", base+"/queue", user(u, "X-Seckill-Ticket", ticket), ""), 409, "not_waiting")
	pace()
	tok := tr.want("token once admitted", tr.do("POST", base+"/token", user(u), ""), 200, "").str("token")
	pace()
	tr.want("buy once admitted", tr.do("POST", base+"/buy", user(u, "X-Seckill-Token", tok), ""), 202, "")

	// Two more: the one unit left admits one of them (oversubscribe 1), the other waits and
	// leaves.
	var waiting reply
	var waiter string
	for i := 0; i < 2; i++ {
		v := testenv.ID("w")
		ch = tr.want("challenge", tr.do("GET", base+"/challenge", user(v), ""), 200, "")
		pace()
		sol = solve(ch.str("challenge"), int(ch.Body["difficulty"].(float64)))
		in = tr.want("enter", tr.do("POST", base+"/queue", user(v, "X-Seckill-Challenge", ch.str("challenge"), "X-Seckill-Solution", sol), ""), 200, "")
		if in.str("state") == "waiting" {
			waiting, waiter = in, v
		}
	}
	if waiter == "" {
		tr.t.Fatal("nobody waits behind one unit with two live admissions")
	}
	pace()
	tr.want("leave", tr.do("DELETE", base+"/queue", user(waiter, "X-Seckill-Ticket", waiting.str("ticket")), ""), 200, "")

	// After the end: the prequeue and the seed are public.
	adm := tr.bearer(tr.adminTok)
	tr.want("end room sale", tr.do("POST", tr.admin+"/admin/sales/"+sale+"/end", adm, ""), 200, "")
	testenv.WaitFor(tr.t, 5*time.Second, "the prequeue once ended", func() bool {
		return tr.do("GET", base+"/room/prequeue?limit=10", nil, "").Status == 200
	})
	tr.want("room once ended", tr.do("GET", base+"/room", nil, ""), 200, "")
}

// drawSale drives a draw: entries, a change, a withdrawal, the run, the result, the entries,
// the proofs and the fates.
func (tr *tour) drawSale() {
	now := time.Now().UTC()
	rfc := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	adm := tr.bearer(tr.adminTok)
	sale := testenv.ID("oad")
	tr.want("create draw sale", tr.do("POST", tr.admin+"/admin/sales", adm, fmt.Sprintf(
		`{"id":%q,"starts_at":%q,"ends_at":%q,"variants":[{"id":"m","stock":1},{"id":"l","stock":1}],"draw":{"opens_at":%q,"closes_at":%q,"claim_within":"10m","difficulty":[0,0]}}`,
		sale, rfc(10*time.Minute), rfc(time.Hour), rfc(-time.Minute), rfc(10*time.Minute))), 201, "")
	tr.want("admin draw before preheat", tr.do("POST", tr.admin+"/admin/sales/"+sale+"/draw", adm, ""), 409, "not_preheated")
	tr.want("preheat draw sale", tr.do("POST", tr.admin+"/admin/sales/"+sale+"/preheat", adm, ""), 200, "")
	base := tr.gw + "/seckill/" + sale
	a, b, c := testenv.ID("d"), testenv.ID("d"), testenv.ID("d")
	tr.want("draw challenge", tr.do("GET", base+"/draw/challenge", user(a), ""), 200, "")
	pace()
	tr.want("challenge of a draw sale", tr.do("GET", base+"/challenge", user(a), ""), 200, "")
	pace()
	tr.want("enter", tr.do("POST", base+"/draw", user(a), `{"variant":"m"}`), 200, "")
	pace()
	tr.want("change", tr.do("POST", base+"/draw", user(a), `{"variant":"l"}`), 200, "")
	pace()
	tr.want("entry", tr.do("GET", base+"/draw", user(a), ""), 200, "")
	pace()
	tr.want("withdraw", tr.do("DELETE", base+"/draw", user(a), ""), 200, "")
	pace()
	tr.want("enter again", tr.do("POST", base+"/draw", user(a), `{"variant":"m"}`), 200, "")
	tr.want("enter an unknown size", tr.do("POST", base+"/draw", user(b), `{"variant":"xxl"}`), 400, "bad_request")
	pace()
	tr.want("enter b", tr.do("POST", base+"/draw", user(b), `{"variant":"m"}`), 200, "")
	tr.want("entry of no one", tr.do("GET", base+"/draw", user(c), ""), 404, "not_entered")
	tr.want("withdraw of no one", tr.do("DELETE", base+"/draw", user(c), ""), 404, "not_entered")
	tr.want("result while open", tr.do("GET", base+"/draw/result", nil, ""), 200, "")
	tr.want("entries while open", tr.do("GET", base+"/draw/entries", nil, ""), 409, "not_closed")
	tr.want("proof while open", tr.do("GET", base+"/draw/proof", user(a), ""), 409, "not_closed")
	tr.want("admin draw status", tr.do("GET", tr.admin+"/admin/sales/"+sale+"/draw", tr.bearer(tr.viewTok), ""), 200, "")
	tr.want("run the draw", tr.do("POST", tr.admin+"/admin/sales/"+sale+"/draw", adm, ""), 200, "")
	pace()
	tr.want("enter after the close", tr.do("POST", base+"/draw", user(c), `{"variant":"m"}`), 403, "closed")
	tr.want("result once drawn", tr.do("GET", base+"/draw/result", nil, ""), 200, "")
	tr.want("entries", tr.do("GET", base+"/draw/entries?limit=1", nil, ""), 200, "")
	tr.want("entries with a bad after", tr.do("GET", base+"/draw/entries?after=XYZ", nil, ""), 400, "bad_request")
	tr.want("proof", tr.do("GET", base+"/draw/proof", user(a), ""), 200, "")
	tr.want("proof of no one", tr.do("GET", base+"/draw/proof", user(c), ""), 404, "not_entered")
	pace()
	tr.want("fate", tr.do("GET", base+"/draw", user(a), ""), 200, "")
	// The purchase window opens at starts_at, after the close: not yet.
	pace()
	tr.want("token before the purchase window", tr.do("POST", base+"/token", user(a), ""), 403, "not_started")
	tr.want("draw of no sale", tr.do("GET", tr.gw+"/seckill/"+testenv.ID("none")+"/draw/result", nil, ""), 404, "unknown_sale")
	tr.lostSeed()
	// Quicknet's chain hash with another chain's (valid) key.
	stand := drandtest.New("openapi tour", 3*time.Second, time.Unix(draw.Quicknet.GenesisTime, 0))
	defer stand.Close()
	tr.want("a draw naming quicknet's hash with another key", tr.do("POST", tr.admin+"/admin/sales", adm, fmt.Sprintf(
		`{"id":%q,"starts_at":%q,"ends_at":%q,"stock":1,"draw":{"opens_at":%q,"closes_at":%q,"claim_within":"10m","beacon":{"chain_hash":%q,"public_key":%q,"period":3,"genesis_time":%d}}}`,
		testenv.ID("oaq"), rfc(10*time.Minute), rfc(time.Hour), rfc(-time.Minute), rfc(10*time.Minute),
		draw.Quicknet.ChainHash, stand.Chain.PublicKey, draw.Quicknet.GenesisTime)), 400, "beacon_chain_mismatch")
}

// lostSeed drives a draw whose committed seed is deleted from Redis after its preheat: the
// preheat again and the run are 409 seed_lost, the status says it is stopped.
func (tr *tour) lostSeed() {
	now := time.Now().UTC()
	rfc := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	adm := tr.bearer(tr.adminTok)
	sale := testenv.ID("oal")
	tr.want("create the draw that loses its seed", tr.do("POST", tr.admin+"/admin/sales", adm, fmt.Sprintf(
		`{"id":%q,"starts_at":%q,"ends_at":%q,"stock":1,"draw":{"opens_at":%q,"closes_at":%q,"claim_within":"10m"}}`,
		sale, rfc(10*time.Minute), rfc(time.Hour), rfc(-time.Minute), rfc(10*time.Minute))), 201, "")
	tr.want("preheat it", tr.do("POST", tr.admin+"/admin/sales/"+sale+"/preheat", adm, ""), 200, "")
	rdb := redis.NewClient(&redis.Options{Addr: tr.redis})
	defer rdb.Close()
	if err := rdb.HDel(context.Background(), contract.DrawKey(sale), "seed").Err(); err != nil {
		tr.t.Fatal(err)
	}
	tr.want("preheat a draw whose seed is lost", tr.do("POST", tr.admin+"/admin/sales/"+sale+"/preheat", adm, ""), 409, "seed_lost")
	if r := tr.do("GET", tr.admin+"/admin/sales/"+sale+"/draw", adm, ""); r.Status != 200 || r.str("stopped") == "" {
		tr.t.Errorf("the status of a draw whose seed is lost: %d %v, want 200 with stopped", r.Status, r.Body)
	}
	tr.want("run a draw whose seed is lost", tr.do("POST", tr.admin+"/admin/sales/"+sale+"/draw", adm, ""), 409, "seed_lost")
}
