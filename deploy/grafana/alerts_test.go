package grafana

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	alertsFile     = "../prometheus/alerts.yml"
	alertTestsFile = "../prometheus/alerts_test.yml"
)

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	return rf
}

// The alerts a drop needs are all there, each query names only series the product exports,
// and each alert has its runbook in docs/operator.md.
func TestEveryAlertUsesMetricsTheProductExportsAndHasARunbook(t *testing.T) {
	rf := loadRules(t)
	exported := exportedFamilies(t)
	doc, err := os.ReadFile("../../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			have[r.Alert] = true
			checkQuery(t, "alert "+r.Alert, r.Expr, exported)
			anchor := strings.ToLower(r.Alert)
			if r.Annotations["runbook_url"] != "docs/operator.md#"+anchor {
				t.Errorf("alert %s: runbook_url %q", r.Alert, r.Annotations["runbook_url"])
			}
			if !regexp.MustCompile(`(?m)^#### ` + r.Alert + `$`).Match(doc) {
				t.Errorf("alert %s has no runbook section (#### %s) in docs/operator.md", r.Alert, r.Alert)
			}
		}
	}
	for _, want := range []string{"SeckillRelayBacklog", "SeckillOrderLag", "SeckillOrdersDeadLettered", "SeckillWebhooksFailing",
		"SeckillBrokerDown", "SeckillRedisDown", "SeckillShedding", "SeckillJWKSStale", "SeckillDrawWaitingForBeacon"} {
		if !have[want] {
			t.Errorf("no alert %s", want)
		}
	}
}

// promtool checks the rules and runs their unit tests: each alert fires on synthetic series of
// the metrics it reads and stays quiet on healthy ones. promtool is Debian's prometheus package
// (scripts/stack.sh installs it); without it the test fails.
func TestTheAlertRulesFireOnTheirSeries(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is missing: scripts/stack.sh start installs it (Debian's prometheus package)")
	}
	for _, args := range [][]string{{"check", "rules", alertsFile}, {"test", "rules", alertTestsFile}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Every alert is shown firing at least once in the unit tests.
	raw, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(raw, &tests); err != nil {
		t.Fatal(err)
	}
	fired := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired[a.Alertname] = true
			}
		}
	}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if !fired[r.Alert] {
				t.Errorf("alert %s is never shown firing in %s", r.Alert, alertTestsFile)
			}
		}
	}
}
