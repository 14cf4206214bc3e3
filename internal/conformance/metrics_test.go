package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	// Caddy's standard modules, as in the gateway binary: admin /metrics among them.
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/internal/testenv"
)

// familiesGolden is what the gateway and the backend export, by metric family: the dashboard's
// and the alert rules' tests (deploy/grafana) check every query against it.
const familiesGolden = "../../deploy/grafana/testdata/families.json"

// families lists what a registry can export, by family name, with the label names of each
// (sorted): from the collectors' descriptions, so a vector with no child yet counts too.
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
		ls := []string{}
		if l := labels.FindStringSubmatch(s); l != nil && l[1] != "" {
			ls = strings.Split(l[1], ",")
		}
		slices.Sort(ls)
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

// The metric families a gateway with every handler and the backend export, with their labels,
// are exactly deploy/grafana/testdata/families.json, the list the dashboard's and the alert
// rules' queries are checked against. After a deliberate change of the metrics, UPDATE_GOLDEN=1
// rewrites it.
func TestTheExportedMetricFamiliesAreTheDashboardsList(t *testing.T) {
	exported := gatewayFamilies(t)
	for name, labels := range families(backend.NewMetricsRegistry()) {
		exported[name] = labels
	}
	got, err := json.MarshalIndent(exported, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(familiesGolden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(familiesGolden)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	var listed map[string][]string
	if err := json.Unmarshal(want, &listed); err != nil {
		t.Fatalf("%s: %v", familiesGolden, err)
	}
	for name, labels := range exported {
		if l, ok := listed[name]; !ok {
			t.Errorf("%s (labels %v) is exported but not listed in %s", name, labels, familiesGolden)
		} else if !slices.Equal(l, labels) {
			t.Errorf("%s: exported with labels %v, listed with %v", name, labels, l)
		}
	}
	for name := range listed {
		if _, ok := exported[name]; !ok {
			t.Errorf("%s is listed in %s but not exported", name, familiesGolden)
		}
	}
	t.Errorf("%s differs from what the gateway and the backend export (UPDATE_GOLDEN=1 rewrites it)", familiesGolden)
}
