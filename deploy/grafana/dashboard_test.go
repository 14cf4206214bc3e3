// Package grafana holds the provisioned Grafana dashboard of docker-compose.yml; its tests
// hold every panel, and every alert rule of deploy/prometheus, to metrics the product really
// exports, and fire each alert on synthetic series (promtool).
package grafana

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
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

// exportedFamilies is what a gateway with every handler and the backend export, by family
// name, with the label names of each: testdata/families.json, which internal/conformance
// holds to what a running gateway and the backend's registry really export (and rewrites
// with UPDATE_GOLDEN=1).
func exportedFamilies(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile("testdata/families.json")
	if err != nil {
		t.Fatal(err)
	}
	var exported map[string][]string
	if err := json.Unmarshal(raw, &exported); err != nil {
		t.Fatalf("testdata/families.json: %v", err)
	}
	if len(exported) == 0 {
		t.Fatal("testdata/families.json lists no family")
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
