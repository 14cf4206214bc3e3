// Package grafana holds the provisioned Grafana dashboard of docker-compose.yml; its tests
// hold every panel, and every alert rule of deploy/prometheus, to metrics the product really
// exports, and fire each alert on synthetic series (promtool).
package grafana

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	// Caddy's standard modules, as in the gateway binary: admin /metrics among them.
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	"github.com/prometheus/client_golang/prometheus"

	// Every seckill Caddy module, as the gateway binary has them.
	_ "github.com/seckilledge/seckill"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/internal/testenv"
)

type dashboard struct {
	Panels []struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// families lists what a registry can export, by family name, with the label names of each:
// from the collectors' descriptions, so a vector with no child yet counts too.
func families(reg *prometheus.Registry) map[string][]string {
	ch := make(chan *prometheus.Desc, 256)
	go func() { reg.Describe(ch); close(ch) }()
	out := map[string][]string{}
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	labels := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	for d := range ch {
		s := d.String()
		m := name.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		var ls []string
		if l := labels.FindStringSubmatch(s); l != nil && l[1] != "" {
			ls = strings.Split(l[1], ",")
		}
		out[m[1]] = ls
	}
	return out
}

// gatewayFamilies loads an in-process gateway with every seckill handler (throttle, token,
// gate with its relay, identity, room, draw, readiness) and returns its registry's families,
// after checking that its admin endpoint serves /metrics as Prometheus scrapes it.
func gatewayFamilies(t *testing.T) map[string][]string {
	t.Helper()
	admin, port := testenv.FreePort(t), testenv.FreePort(t)
	cfg := fmt.Sprintf(`{
		"admin": {"listen": "127.0.0.1:%d"},
		"logging": {"logs": {"default": {"level": "ERROR"}}},
		"apps": {
			"seckill": {"redis": {"addrs": [%q]}, "amqp": {"url": %q}, "token_keys": [{"id": "k1", "secret": "dashboard-test-secret-0123456789"}], "relay": {"served_only": true}},
			"http": {"servers": {"gw": {
				"listen": ["127.0.0.1:%d"],
				"automatic_https": {"disable": true},
				"routes": [
					{"handle": [{"handler": "seckill_throttle", "zones": [{"name": %q, "key": "{http.request.header.X-User-ID}", "limit": 5, "window": 1000000000}]}]},
					{"match": [{"path": ["/seckill/*/token"]}], "handle": [{"handler": "seckill_token", "user": "{http.request.header.X-User-ID}"}]},
					{"match": [{"path": ["/seckill/*/buy"]}], "handle": [{"handler": "seckill_gate", "user": "{http.request.header.X-User-ID}"}]},
					{"match": [{"path": ["/me"]}], "handle": [{"handler": "seckill_identity", "jwks_url": "http://127.0.0.1:1/jwks.json", "jwks_allow_http": true, "issuer": "https://shop.example", "audience": "seckill"}]},
					{"match": [{"path": ["/seckill/*/room"]}], "handle": [{"handler": "seckill_room", "user": "{http.request.header.X-User-ID}"}]},
					{"match": [{"path": ["/seckill/*/draw"]}], "handle": [{"handler": "seckill_draw", "user": "{http.request.header.X-User-ID}"}]},
					{"match": [{"path": ["/readyz"]}], "handle": [{"handler": "seckill_ready"}]}
				]
			}}}
		}
	}`, admin, testenv.RedisAddr(), testenv.AMQPURL(), port, testenv.ID("dash"))
	if err := caddy.Load([]byte(cfg), true); err != nil {
		t.Fatalf("load the gateway: %v", err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", admin))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "seckill_") {
		t.Fatalf("the gateway's /metrics: %d, no seckill_ series", resp.StatusCode)
	}
	ctx := caddy.ActiveContext()
	return families(ctx.GetMetricsRegistry())
}

var (
	metricRef = regexp.MustCompile(`\b(seckill|caddy|go|process)_[a-zA-Z0-9_:]*`)
	byClause  = regexp.MustCompile(`by \(([^)]*)\)`)
	matchers  = regexp.MustCompile(`\{([^}]*)\}`)
	matchName = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)`)
)

// Every query of every panel names metrics that a running gateway or the backend exports, and
// groups or filters only by labels those metrics have.
func TestEveryDashboardQueryUsesMetricsTheProductExports(t *testing.T) {
	raw, err := os.ReadFile("dashboards/seckill.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	exported := exportedFamilies(t)
	queries := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			checkQuery(t, "panel "+strconv.Quote(p.Title), tg.Expr, exported)
		}
	}
	if queries < 10 {
		t.Fatalf("only %d queries in the dashboard", queries)
	}
	names := make([]string, 0, len(exported))
	for n := range exported {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d queries checked against %d exported families", queries, len(names))
}

// exportedFamilies is what a gateway with every handler and the backend export.
func exportedFamilies(t *testing.T) map[string][]string {
	t.Helper()
	exported := gatewayFamilies(t)
	for name, labels := range families(backend.NewMetricsRegistry()) {
		exported[name] = labels
	}
	return exported
}

// targetLabels are the labels a scrape adds to every series: the static and Kubernetes
// service discovery of deploy/prometheus.yml and the Helm chart (its scrape jobs and monitors).
var targetLabels = []string{"le", "instance", "job", "namespace"}

// checkQuery fails the test when expr names a metric neither the gateway nor the backend
// exports, or groups or filters by a label none of its metrics (nor the scrape) has.
func checkQuery(t *testing.T, where, expr string, exported map[string][]string) {
	t.Helper()
	names := metricRef.FindAllString(expr, -1)
	if len(names) == 0 {
		t.Errorf("%s: query %q names no metric", where, expr)
	}
	allowed := map[string]bool{}
	for _, l := range targetLabels {
		allowed[l] = true
	}
	for _, n := range names {
		fam := n
		if _, ok := exported[fam]; !ok {
			fam = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
		}
		labels, ok := exported[fam]
		if !ok {
			t.Errorf("%s: %s is exported by neither the gateway nor the backend", where, n)
		}
		for _, l := range labels {
			allowed[l] = true
		}
	}
	var used []string
	for _, m := range byClause.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			used = append(used, strings.TrimSpace(l))
		}
	}
	for _, m := range matchers.FindAllStringSubmatch(expr, -1) {
		for _, mm := range matchName.FindAllStringSubmatch(m[1], -1) {
			used = append(used, mm[1])
		}
	}
	for _, l := range used {
		if l != "" && !allowed[l] {
			t.Errorf("%s: label %q is not a label of %v", where, l, names)
		}
	}
}
