package helm

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// renderErr is `helm template` with vals, for values it must refuse.
func renderErr(vals map[string]any) error {
	_, err := helmTemplate(vals)
	return err
}

// A wrong type or an unknown (misspelled) key fails `helm lint` and the install, naming it.
func TestTheValuesSchemaRefusesAWrongTypeOrAnUnknownKey(t *testing.T) {
	for _, tc := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"gateway": map[string]any{"replicas": "three"}}, "replicas"},
		{map[string]any{"gateway": map[string]any{"replcas": 3}}, "replcas"},
		{map[string]any{"postgres": map[string]any{"sslmode": "verify-fully"}}, "sslmode"},
		{map[string]any{"metrics": map[string]any{"monitor": map[string]any{"enabled": "yes"}}}, "enabled"},
		{map[string]any{"gateway": map[string]any{"env": map[string]any{"SECKILL_X": 1}}}, "SECKILL_X"},
	} {
		_, errs := helmLint(tc.vals)
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("helm lint with %v: %v, want an error naming %s", tc.vals, errs, tc.want)
		}
		if err := renderErr(tc.vals); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template with %v: %v", tc.vals, err)
		}
	}
}

// The Prometheus Operator's monitors are off by default; on, one per part scrapes its metrics
// port (the gateways every second, for the cockpit), as ServiceMonitors or PodMonitors.
func TestServiceAndPodMonitorsAreBehindAToggle(t *testing.T) {
	if r := template(t, nil); len(r.svcMonitors)+len(r.podMonitors) != 0 {
		t.Fatalf("monitors by default: %v %v", keys(r.svcMonitors), keys(r.podMonitors))
	}
	r := template(t, map[string]any{"metrics": map[string]any{"monitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prom"}}}})
	gm, bm := r.svcMonitors["rel-seckill-gateway"], r.svcMonitors["rel-seckill-backend"]
	if gm == nil || bm == nil || len(r.svcMonitors) != 2 {
		t.Fatalf("service monitors %v", keys(r.svcMonitors))
	}
	for _, tc := range []struct {
		name, svc, port, interval string
	}{{"gateway", "rel-seckill-gateway-metrics", "metrics", "1s"}, {"backend", "rel-seckill-admin", "admin", "5s"}} {
		m := r.svcMonitors["rel-seckill-"+tc.name]
		if m.Labels["release"] != "kube-prom" || len(m.Spec.Endpoints) != 1 || m.Spec.Endpoints[0].Port != tc.port ||
			string(m.Spec.Endpoints[0].Interval) != tc.interval || m.Spec.Endpoints[0].Path != "/metrics" ||
			!reflect2(m.Spec.NamespaceSelector.MatchNames, []string{"shop"}) {
			t.Errorf("%s monitor %+v", tc.name, m.Spec)
		}
		// It selects the Service that has the port, and that Service has it.
		svc := r.services[tc.svc]
		if svc == nil || !subset(m.Spec.Selector.MatchLabels, svc.Labels) || !hasPort(svc, tc.port) {
			t.Errorf("%s monitor selects %v; the Service %s has labels %v", tc.name, m.Spec.Selector.MatchLabels, tc.svc, svc.Labels)
		}
	}
	r = template(t, map[string]any{"metrics": map[string]any{"monitor": map[string]any{"enabled": true, "kind": "PodMonitor"}}})
	if len(r.svcMonitors) != 0 || len(r.podMonitors) != 2 {
		t.Fatalf("kind PodMonitor: %v %v", keys(r.svcMonitors), keys(r.podMonitors))
	}
	pm := r.podMonitors["rel-seckill-gateway"]
	if !subset(pm.Spec.Selector.MatchLabels, r.deployments["rel-seckill-gateway"].Spec.Template.Labels) ||
		len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port == nil || *pm.Spec.PodMetricsEndpoints[0].Port != "metrics" {
		t.Errorf("gateway PodMonitor %+v", pm.Spec)
	}
}

// An Ingress and an HTTPRoute are optional; either sends its hosts' paths to the buyers' Service.
func TestIngressAndHTTPRouteAreOptional(t *testing.T) {
	if r := template(t, nil); len(r.ingresses)+len(r.httpRoutes) != 0 {
		t.Fatalf("by default: %v %v", keys(r.ingresses), keys(r.httpRoutes))
	}
	r := template(t, map[string]any{
		"ingress": map[string]any{"enabled": true, "className": "nginx", "hosts": []any{map[string]any{"host": "drop.example",
			"paths": []any{map[string]any{"path": "/", "pathType": "Prefix"}}}}, "tls": []any{map[string]any{"secretName": "drop-tls", "hosts": []any{"drop.example"}}}},
		"httpRoute": map[string]any{"enabled": true, "parentRefs": []any{map[string]any{"name": "edge", "namespace": "gw"}}, "hostnames": []any{"drop.example"}},
	})
	ing := r.ingresses["rel-seckill-gateway"]
	if ing == nil || *ing.Spec.IngressClassName != "nginx" || len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "drop.example" ||
		ing.Spec.TLS[0].SecretName != "drop-tls" {
		t.Fatalf("ingress %+v", ing)
	}
	b := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service
	if b.Name != "rel-seckill-gateway" || b.Port.Name != "http" || r.services[b.Name] == nil || !hasPort(r.services[b.Name], "http") {
		t.Errorf("ingress backend %+v", b)
	}
	hr := r.httpRoutes["rel-seckill-gateway"]
	if hr == nil || len(hr.Spec.ParentRefs) != 1 || hr.Spec.ParentRefs[0].Name != "edge" || len(hr.Spec.Hostnames) != 1 || hr.Spec.Hostnames[0] != "drop.example" {
		t.Fatalf("httproute %+v", hr)
	}
	br := hr.Spec.Rules[0].BackendRefs[0]
	if br.Name != "rel-seckill-gateway" || br.Port == nil || int32(*br.Port) != r.services["rel-seckill-gateway"].Spec.Ports[0].Port ||
		*hr.Spec.Rules[0].Matches[0].Path.Value != "/" {
		t.Errorf("httproute rule %+v", hr.Spec.Rules[0])
	}
}

// Readiness asks the gateway's seckill_ready endpoint (Redis answering, with a grace for a
// blip), a startup probe gives a new pod time to load, liveness asks only that the process
// answers.
func TestTheGatewayIsReadyWhenItCanDecideAndHasAStartupProbe(t *testing.T) {
	r := template(t, nil)
	c := r.deployments["rel-seckill-gateway"].Spec.Template.Spec.Containers[0]
	if p := c.ReadinessProbe; p == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness %+v", p)
	}
	if p := c.StartupProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.PeriodSeconds*p.FailureThreshold < 120 {
		t.Errorf("startup %+v, want /readyz for at least 120 s", p)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness %+v", p)
	}
	// The Caddyfile serves the readiness path (SECKILL_READY_PATH, the probe's) with seckill_ready.
	cf := r.configMaps["rel-seckill-caddyfile"].Data["Caddyfile"]
	if !regexp.MustCompile(`(?m)^\s*handle \{\$SECKILL_READY_PATH:/readyz\} \{\n\s*seckill_ready\b`).MatchString(cf) {
		t.Error("the rendered Caddyfile has no `handle {$SECKILL_READY_PATH:/readyz} { seckill_ready }`")
	}
	for name, want := range map[string]string{"SECKILL_READY_PATH": "/readyz", "SECKILL_HEALTH_PATH": "/healthz"} {
		if v, ok := env(c, name); !ok || v.Value != want {
			t.Errorf("%s = %+v, want %s: the Caddyfile serves the probes' paths", name, v, want)
		}
	}
}

// The URL space is the shop's: the prefix, the order status route and the probes' paths move
// together in the pod's environment, which the Caddyfile reads; the allow list of origins is
// off unless listed; a path or an origin the gateway would refuse fails the values' schema.
func TestTheURLSpaceValuesMoveTheGatewaysRoutes(t *testing.T) {
	c := template(t, nil).deployments["rel-seckill-gateway"].Spec.Template.Spec.Containers[0]
	for name, want := range map[string]string{"SECKILL_PREFIX": "/seckill", "SECKILL_ORDERS_PREFIX": "/orders"} {
		if v, ok := env(c, name); !ok || v.Value != want {
			t.Errorf("default %s = %+v, want %s", name, v, want)
		}
	}
	if v, ok := env(c, "SECKILL_ALLOWED_ORIGINS"); ok {
		t.Errorf("SECKILL_ALLOWED_ORIGINS set by default: %+v", v)
	}
	c = template(t, map[string]any{"gateway": map[string]any{
		"urlSpace": map[string]any{"prefix": "/shop-api/drop", "ordersPrefix": "/shop-api/drop/orders",
			"allowedOrigins": []any{"https://www.shop.example", "https://m.shop.example"}},
		"probes": map[string]any{"readinessPath": "/edge-ready", "livenessPath": "/edge-live"},
	}}).deployments["rel-seckill-gateway"].Spec.Template.Spec.Containers[0]
	for name, want := range map[string]string{"SECKILL_PREFIX": "/shop-api/drop", "SECKILL_ORDERS_PREFIX": "/shop-api/drop/orders",
		"SECKILL_ALLOWED_ORIGINS": "https://www.shop.example https://m.shop.example",
		"SECKILL_READY_PATH":      "/edge-ready", "SECKILL_HEALTH_PATH": "/edge-live"} {
		if v, ok := env(c, name); !ok || v.Value != want {
			t.Errorf("%s = %+v, want %s", name, v, want)
		}
	}
	if c.ReadinessProbe.HTTPGet.Path != "/edge-ready" || c.LivenessProbe.HTTPGet.Path != "/edge-live" {
		t.Errorf("probes %s %s", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}
	for _, bad := range []map[string]any{
		{"urlSpace": map[string]any{"prefix": "/seckill/"}},
		{"urlSpace": map[string]any{"prefix": "seckill"}},
		{"urlSpace": map[string]any{"ordersPrefix": "/a//b"}},
		{"urlSpace": map[string]any{"allowedOrigins": []any{"*"}}},
		{"urlSpace": map[string]any{"allowedOrigins": []any{"https://shop.example/app"}}},
		{"probes": map[string]any{"livenessPath": "healthz"}},
	} {
		if err := renderErr(map[string]any{"gateway": bad}); err == nil {
			t.Errorf("values %v passed the schema", bad)
		}
	}
}

// By default the gateways spread over zones and nodes without ever blocking a scale-up; given
// constraints replace the defaults.
func TestTheGatewaysSpreadOverZonesAndNodes(t *testing.T) {
	r := template(t, nil)
	spec := r.deployments["rel-seckill-gateway"].Spec.Template
	var got []string
	for _, c := range spec.Spec.TopologySpreadConstraints {
		got = append(got, c.TopologyKey)
		if c.MaxSkew != 1 || c.WhenUnsatisfiable != corev1.ScheduleAnyway || c.LabelSelector == nil || !subset(c.LabelSelector.MatchLabels, spec.Labels) ||
			len(c.LabelSelector.MatchLabels) < 3 {
			t.Errorf("constraint %+v", c)
		}
	}
	sort.Strings(got)
	if !reflect2(got, []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"}) {
		t.Errorf("spread over %v", got)
	}
	own := []any{map[string]any{"topologyKey": "kubernetes.io/hostname", "maxSkew": 2, "whenUnsatisfiable": "DoNotSchedule",
		"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/component": "gateway"}}}}
	r = template(t, map[string]any{"gateway": map[string]any{"topologySpreadConstraints": own}})
	if c := r.deployments["rel-seckill-gateway"].Spec.Template.Spec.TopologySpreadConstraints; len(c) != 1 || c[0].MaxSkew != 2 {
		t.Errorf("own constraints %+v", c)
	}
	r = template(t, map[string]any{"gateway": map[string]any{"topologySpread": map[string]any{"enabled": false}}})
	if c := r.deployments["rel-seckill-gateway"].Spec.Template.Spec.TopologySpreadConstraints; len(c) != 0 {
		t.Errorf("spread off: %+v", c)
	}
}

// The autoscaler's metrics and behaviour come from the values.
func TestTheAutoscalersMetricsAndBehaviourAreOverridable(t *testing.T) {
	r := template(t, nil)
	b := r.hpas["rel-seckill-gateway"].Spec.Behavior
	if b == nil || *b.ScaleUp.StabilizationWindowSeconds != 0 || *b.ScaleDown.StabilizationWindowSeconds != 600 || b.ScaleUp.Policies[0].Value != 100 {
		t.Errorf("default behaviour %+v", b)
	}
	r = template(t, map[string]any{"gateway": map[string]any{"autoscaling": map[string]any{
		"metrics": []any{map[string]any{"type": "Pods", "pods": map[string]any{
			"metric": map[string]any{"name": "http_requests_per_second"}, "target": map[string]any{"type": "AverageValue", "averageValue": "8k"}}}},
		"behavior": map[string]any{"scaleDown": map[string]any{"stabilizationWindowSeconds": 120}},
	}}})
	h := r.hpas["rel-seckill-gateway"].Spec
	if len(h.Metrics) != 1 || h.Metrics[0].Pods == nil || h.Metrics[0].Pods.Metric.Name != "http_requests_per_second" {
		t.Errorf("metrics %+v", h.Metrics)
	}
	if h.Behavior == nil || *h.Behavior.ScaleDown.StabilizationWindowSeconds != 120 {
		t.Errorf("behaviour %+v", h.Behavior)
	}
}

// envIndex is the position of the variable name in c's env, -1 when absent.
func envIndex(c corev1.Container, name string) int {
	for i, e := range c.Env {
		if e.Name == name {
			return i
		}
	}
	return -1
}

// The cockpit reads the gateways' decisions through Prometheus's federation endpoint and the
// broker's depths from RabbitMQ's management API, its password from the backend's Secret.
func TestTheCockpitIsWiredToTheGatewaysMetricsAndRabbitMQ(t *testing.T) {
	r := template(t, nil)
	c := r.deployments["rel-seckill-backend"].Spec.Template.Spec.Containers[0]
	if v, _ := env(c, "SECKILL_GATEWAY_METRICS"); v.Value != "http://prometheus-operated.monitoring.svc:9090/federate?match%5B%5D=seckill_gate_decisions_total" {
		t.Errorf("SECKILL_GATEWAY_METRICS %q", v.Value)
	}
	pw, _ := env(c, "SECKILL_AMQP_MGMT_PASSWORD")
	if pw.ValueFrom == nil || pw.ValueFrom.SecretKeyRef.Name != "seckill-backend" || pw.ValueFrom.SecretKeyRef.Key != "amqp-mgmt-password" ||
		pw.ValueFrom.SecretKeyRef.Optional == nil || !*pw.ValueFrom.SecretKeyRef.Optional {
		t.Errorf("SECKILL_AMQP_MGMT_PASSWORD %+v", pw)
	}
	if v, _ := env(c, "SECKILL_AMQP_MGMT_URL"); v.Value != "http://seckill-monitor:$(SECKILL_AMQP_MGMT_PASSWORD)@rabbitmq.data.svc.cluster.local:15672" {
		t.Errorf("SECKILL_AMQP_MGMT_URL %q", v.Value)
	}
	// Kubernetes expands $(VAR) only from variables defined before.
	if envIndex(c, "SECKILL_AMQP_MGMT_PASSWORD") > envIndex(c, "SECKILL_AMQP_MGMT_URL") {
		t.Error("the management password is defined after the URL that uses it")
	}
	r = template(t, map[string]any{"cockpit": map[string]any{"gatewayMetrics": "http://gw-a:2020/metrics,http://gw-b:2020/metrics",
		"rabbitmqManagement": map[string]any{"enabled": false}}})
	c = r.deployments["rel-seckill-backend"].Spec.Template.Spec.Containers[0]
	if v, _ := env(c, "SECKILL_GATEWAY_METRICS"); v.Value != "http://gw-a:2020/metrics,http://gw-b:2020/metrics" {
		t.Errorf("own SECKILL_GATEWAY_METRICS %q", v.Value)
	}
	if _, ok := env(c, "SECKILL_AMQP_MGMT_URL"); ok {
		t.Error("the management API is wired while turned off")
	}
}

// Tracing is off by default (no OTEL_* variable); on, both parts get the exporter, sampler and
// a service name of their own.
func TestTracingValuesSetTheOTELVariables(t *testing.T) {
	for _, d := range template(t, nil).deployments {
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if strings.HasPrefix(e.Name, "OTEL_") {
				t.Errorf("%s has %s with tracing off", d.Name, e.Name)
			}
		}
	}
	r := template(t, map[string]any{"tracing": map[string]any{"enabled": true, "endpoint": "http://otel.monitoring:4318",
		"samplerArg": "0.1", "extraEnv": map[string]any{"OTEL_BSP_MAX_QUEUE_SIZE": "4096"}}})
	for name, svc := range map[string]string{"rel-seckill-gateway": "seckill-gateway", "rel-seckill-backend": "seckill-backend"} {
		c := r.deployments[name].Spec.Template.Spec.Containers[0]
		for k, want := range map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel.monitoring:4318",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1",
			"OTEL_SERVICE_NAME": svc, "OTEL_BSP_MAX_QUEUE_SIZE": "4096"} {
			if v, _ := env(c, k); v.Value != want {
				t.Errorf("%s %s = %q, want %q", name, k, v.Value, want)
			}
		}
		if v, _ := env(c, "OTEL_RESOURCE_ATTRIBUTES"); !strings.Contains(v.Value, "k8s.pod.name=$(POD_NAME)") || envIndex(c, "POD_NAME") > envIndex(c, "OTEL_RESOURCE_ATTRIBUTES") {
			t.Errorf("%s OTEL_RESOURCE_ATTRIBUTES %q (POD_NAME at %d)", name, v.Value, envIndex(c, "POD_NAME"))
		}
	}
}

// schemaLeaves is every value path of the schema, down to the values typed as a whole (a
// Kubernetes type, a free map).
func schemaLeaves(prefix string, s map[string]any, out *[]string) {
	props, ok := s["properties"].(map[string]any)
	if !ok {
		*out = append(*out, prefix)
		return
	}
	for k, v := range props {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		schemaLeaves(p, v.(map[string]any), out)
	}
}

// The chart's README has a row for every value the schema knows.
func TestTheChartREADMEListsEveryValue(t *testing.T) {
	raw, err := os.ReadFile("seckill/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	var leaves []string
	schemaLeaves("", schema, &leaves)
	readme, err := os.ReadFile("seckill/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(leaves) < 50 {
		t.Fatalf("only %d values in the schema", len(leaves))
	}
	for _, l := range leaves {
		if !strings.Contains(string(readme), "| `"+l+"` |") {
			t.Errorf("the chart's README has no row for `%s`", l)
		}
	}
}

func hasPort(s *corev1.Service, name string) bool {
	for _, p := range s.Spec.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

func reflect2(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// The PrometheusRule is off by default; on, it carries every alert of deploy/prometheus/alerts.yml
// with its expression, labels and annotations as they are (Helm does not template the file).
func TestThePrometheusRuleCarriesTheAlerts(t *testing.T) {
	if r := template(t, nil); len(r.rules) != 0 {
		t.Fatalf("rules by default: %v", keys(r.rules))
	}
	r := template(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prom"}}}})
	pr := r.rules["rel-seckill"]
	if pr == nil || pr.Labels["release"] != "kube-prom" {
		t.Fatalf("rules %v", keys(r.rules))
	}
	raw, err := os.ReadFile("../prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert, Expr string
				Annotations map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, g := range file.Groups {
		for _, rule := range g.Rules {
			want = append(want, rule.Alert+"\x00"+rule.Expr+"\x00"+rule.Annotations["summary"])
		}
	}
	for _, g := range pr.Spec.Groups {
		for _, rule := range g.Rules {
			got = append(got, rule.Alert+"\x00"+rule.Expr.String()+"\x00"+rule.Annotations["summary"])
		}
	}
	if len(want) < 9 || !reflect2(got, want) {
		t.Errorf("the PrometheusRule's alerts differ from deploy/prometheus/alerts.yml:\n got %q\nwant %q", got, want)
	}
}
