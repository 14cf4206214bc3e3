package grafana

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type importable struct {
	Panels []struct {
		Type       string         `json:"type"`
		Title      string         `json:"title"`
		Datasource *datasourceRef `json:"datasource"`
		Targets    []struct {
			Datasource *datasourceRef `json:"datasource"`
			Expr       string         `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string         `json:"name"`
			Type       string         `json:"type"`
			Query      any            `json:"query"`
			Datasource *datasourceRef `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// The dashboard imports into any Grafana: its panels and variables use the datasource the
// importer picks (a variable), never a pinned uid; namespace, instance and sale variables scope
// every query; the variables' own queries name exported series and labels.
func TestTheDashboardImportsIntoAnyGrafana(t *testing.T) {
	raw, err := os.ReadFile("dashboards/seckill.json")
	if err != nil {
		t.Fatal(err)
	}
	var d importable
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	exported := exportedFamilies(t)
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "query" {
			if v.Datasource == nil || v.Datasource.UID != "${datasource}" {
				t.Errorf("variable %s: datasource %+v, want ${datasource}", v.Name, v.Datasource)
			}
			q, _ := v.Query.(map[string]any)
			m := labelValues.FindStringSubmatch(strings.TrimSpace(q["query"].(string)))
			if m == nil {
				t.Errorf("variable %s: query %v is not label_values(<series>, <label>)", v.Name, v.Query)
				continue
			}
			checkQuery(t, "variable "+v.Name, "sum by ("+m[2]+") ("+m[1]+")", exported)
		}
	}
	want := map[string]string{"datasource": "datasource", "namespace": "query", "instance": "query", "sale": "query"}
	for name, typ := range want {
		if vars[name] != typ {
			t.Errorf("variable %s is %q, want a %s variable", name, vars[name], typ)
		}
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: a query pins datasource %q", p.Title, tg.Datasource.UID)
			}
			for _, sel := range regexp.MustCompile(`\b(seckill_[a-z0-9_]+)(\{[^}]*\})?`).FindAllStringSubmatch(tg.Expr, -1) {
				if !strings.Contains(sel[2], `namespace=~"$namespace"`) {
					t.Errorf("panel %q: %s is not scoped to $namespace", p.Title, sel[1])
				}
				if !strings.HasPrefix(sel[1], "seckill_backend_") && !strings.Contains(sel[2], `instance=~"$instance"`) {
					t.Errorf("panel %q: the gateways' %s is not scoped to $instance", p.Title, sel[1])
				}
			}
		}
	}
	if strings.Contains(string(raw), `"uid": "seckill-prometheus"`) {
		t.Error("the dashboard still names the compose file's datasource uid")
	}
}

// The room (waiters, admission rate, polls from memory, no-shows), the draw (entries, waves,
// claims) and identity (verdicts, JWKS age) each have panels.
func TestTheDashboardShowsTheRoomTheDrawAndIdentity(t *testing.T) {
	raw, err := os.ReadFile("dashboards/seckill.json")
	if err != nil {
		t.Fatal(err)
	}
	var d importable
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	queried := map[string]bool{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, n := range metricRef.FindAllString(tg.Expr, -1) {
				queried[n] = true
			}
			if strings.Contains(tg.Expr, `endpoint="enter"`) && strings.Contains(tg.Expr, "seckill_draw_requests_total") {
				queried["draw entries"] = true
			}
		}
	}
	for what, series := range map[string]string{
		"the room's waiters": "seckill_room_queue_depth", "the room's admission rate": "seckill_room_admission_rate",
		"polls from memory": "seckill_room_polls_from_memory_total", "no-shows": "seckill_room_lapsed_total",
		"draw entries": "draw entries", "draw waves": "seckill_backend_draw_waves_opened_total",
		"claims": "seckill_gate_decisions_total", "identity verdicts": "seckill_identity_jwt_requests_total",
		"JWKS age": "seckill_identity_jwks_age_seconds",
	} {
		if !queried[series] {
			t.Errorf("no panel shows %s (%s)", what, series)
		}
	}
}
