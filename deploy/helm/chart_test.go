// Package helm checks deploy/helm/seckill, the Helm chart: `helm lint` and `helm template`
// run in the test from Helm's own Go module, and every rendered manifest is decoded strictly
// (an unknown or misspelled field fails) into the Kubernetes API's Go types.
package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "seckill"

// rendered is one release's manifests, decoded.
type rendered struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	pdbs        map[string]*policyv1.PodDisruptionBudget
	hpas        map[string]*autoscalingv2.HorizontalPodAutoscaler
	configMaps  map[string]*corev1.ConfigMap
	netpols     map[string]*networkingv1.NetworkPolicy
	ingresses   map[string]*networkingv1.Ingress
	httpRoutes  map[string]*gatewayv1.HTTPRoute
	svcMonitors map[string]*monitoringv1.ServiceMonitor
	podMonitors map[string]*monitoringv1.PodMonitor
	rules       map[string]*monitoringv1.PrometheusRule
}

// template is `helm template rel ./seckill -n shop` with vals over values.yaml, decoded.
func template(t *testing.T, vals map[string]any) rendered {
	t.Helper()
	manifest, err := helmTemplate(vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	r, err := decode(manifest)
	if err != nil {
		t.Fatalf("%v\n%s", err, manifest)
	}
	return r
}

// decode splits a manifest stream and decodes each document strictly into its kind's type.
func decode(manifest string) (rendered, error) {
	r := rendered{deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		configMaps: map[string]*corev1.ConfigMap{}, netpols: map[string]*networkingv1.NetworkPolicy{},
		ingresses: map[string]*networkingv1.Ingress{}, httpRoutes: map[string]*gatewayv1.HTTPRoute{},
		svcMonitors: map[string]*monitoringv1.ServiceMonitor{}, podMonitors: map[string]*monitoringv1.PodMonitor{},
		rules: map[string]*monitoringv1.PrometheusRule{}}
	for _, doc := range strings.Split(manifest, "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return r, fmt.Errorf("not YAML: %w\n%s", err, doc)
		}
		if string(js) == "null" {
			continue // a document of comments only
		}
		var meta struct{ Kind, APIVersion string }
		if err := json.Unmarshal(js, &meta); err != nil {
			return r, err
		}
		var obj interface{ GetName() string }
		switch meta.APIVersion + " " + meta.Kind {
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "policy/v1 PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "autoscaling/v2 HorizontalPodAutoscaler":
			obj = &autoscalingv2.HorizontalPodAutoscaler{}
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "networking.k8s.io/v1 NetworkPolicy":
			obj = &networkingv1.NetworkPolicy{}
		case "networking.k8s.io/v1 Ingress":
			obj = &networkingv1.Ingress{}
		case "gateway.networking.k8s.io/v1 HTTPRoute":
			obj = &gatewayv1.HTTPRoute{}
		case "monitoring.coreos.com/v1 ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		case "monitoring.coreos.com/v1 PodMonitor":
			obj = &monitoringv1.PodMonitor{}
		case "monitoring.coreos.com/v1 PrometheusRule":
			obj = &monitoringv1.PrometheusRule{}
		default:
			return r, fmt.Errorf("a %s %s: the test knows no such kind", meta.APIVersion, meta.Kind)
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			return r, fmt.Errorf("%s: %w\n%s", meta.Kind, err, doc)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			r.deployments[o.Name] = o
		case *corev1.Service:
			r.services[o.Name] = o
		case *policyv1.PodDisruptionBudget:
			r.pdbs[o.Name] = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpas[o.Name] = o
		case *corev1.ConfigMap:
			r.configMaps[o.Name] = o
		case *networkingv1.NetworkPolicy:
			r.netpols[o.Name] = o
		case *networkingv1.Ingress:
			r.ingresses[o.Name] = o
		case *gatewayv1.HTTPRoute:
			r.httpRoutes[o.Name] = o
		case *monitoringv1.ServiceMonitor:
			r.svcMonitors[o.Name] = o
		case *monitoringv1.PodMonitor:
			r.podMonitors[o.Name] = o
		case *monitoringv1.PrometheusRule:
			r.rules[o.Name] = o
		}
	}
	return r, nil
}

// helm lint passes on the chart, with its values and with the autoscaler off.
func TestTheChartLints(t *testing.T) {
	for _, vals := range []map[string]any{nil, {"gateway": map[string]any{"autoscaling": map[string]any{"enabled": false}}}} {
		msgs, errs := helmLint(vals)
		for _, m := range msgs {
			t.Logf("lint: %s", m)
		}
		if len(errs) > 0 {
			t.Fatalf("helm lint: %v", errs)
		}
	}
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// The default release: N gateways behind a Service, scaled on CPU, at most one down in a
// drain, ready on /healthz; the backend with both listeners; every secret from the Secrets the
// values name, none in the manifests; the Caddyfile the production one with a metrics site;
// the scrape config and the dashboard as ConfigMaps.
func TestTheDefaultReleaseIsNGatewaysAndTheBackend(t *testing.T) {
	r := template(t, nil)
	gw := r.deployments["rel-seckill-gateway"]
	if gw == nil {
		t.Fatalf("no gateway Deployment; have %v", keys(r.deployments))
	}
	if gw.Spec.Replicas != nil {
		t.Errorf("with the autoscaler on, the Deployment must leave replicas to it (has %d)", *gw.Spec.Replicas)
	}
	hpa := r.hpas["rel-seckill-gateway"]
	if hpa == nil || hpa.Spec.ScaleTargetRef.Name != gw.Name || hpa.Spec.MaxReplicas != 30 || *hpa.Spec.MinReplicas != 3 {
		t.Fatalf("HPA %+v", hpa)
	}
	if m := hpa.Spec.Metrics; len(m) != 1 || m[0].Resource.Name != corev1.ResourceCPU || *m[0].Resource.Target.AverageUtilization != 60 {
		t.Errorf("HPA metrics %+v, want CPU at 60%%", m)
	}
	pdb := r.pdbs["rel-seckill-gateway"]
	if pdb == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Fatalf("PDB %+v", pdb)
	}
	sel := gw.Spec.Selector.MatchLabels
	for k, v := range sel {
		if gw.Spec.Template.Labels[k] != v || pdb.Spec.Selector.MatchLabels[k] != v || r.services["rel-seckill-gateway"].Spec.Selector[k] != v {
			t.Errorf("selector %s=%s does not match the pods, the PDB and the Service alike", k, v)
		}
	}
	c := gw.Spec.Template.Spec.Containers[0]
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != "http" {
		t.Errorf("gateway readiness %+v, want GET /readyz on http", p)
	}
	if v, _ := env(c, "SECKILL_BACKEND"); v.Value != "rel-seckill-orders:8081" || r.services["rel-seckill-orders"] == nil {
		t.Errorf("SECKILL_BACKEND %q; orders service %v", v.Value, r.services["rel-seckill-orders"] != nil)
	}
	for name, key := range map[string]string{"SECKILL_TOKEN_KEY": "token-key", "SECKILL_AMQP_PASSWORD": "amqp-password", "SECKILL_REDIS_PASSWORD": "redis-password"} {
		v, ok := env(c, name)
		if !ok || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil || v.ValueFrom.SecretKeyRef.Name != "seckill-gateway" || v.ValueFrom.SecretKeyRef.Key != key || v.Value != "" {
			t.Errorf("gateway %s = %+v, want secret seckill-gateway key %s", name, v, key)
		}
	}
	if v, _ := env(c, "SECKILL_AMQP_URL"); v.Value != "amqp://seckill-gateway:$(SECKILL_AMQP_PASSWORD)@rabbitmq.data.svc.cluster.local:5672/" {
		t.Errorf("gateway SECKILL_AMQP_URL %q", v.Value)
	}

	be := r.deployments["rel-seckill-backend"]
	if be == nil || *be.Spec.Replicas != 2 {
		t.Fatalf("backend %+v", be)
	}
	bc := be.Spec.Template.Spec.Containers[0]
	for name, key := range map[string]string{"SECKILL_PG_PASSWORD": "pg-password", "SECKILL_AMQP_PASSWORD": "amqp-password", "SECKILL_ADMIN_TOKENS": "admin-tokens", "SECKILL_WEBHOOK_SECRETS": "webhook-secrets"} {
		v, ok := env(bc, name)
		if !ok || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil || v.ValueFrom.SecretKeyRef.Name != "seckill-backend" || v.ValueFrom.SecretKeyRef.Key != key {
			t.Errorf("backend %s = %+v, want secret seckill-backend key %s", name, v, key)
		}
	}
	if v, _ := env(bc, "SECKILL_PG_URL"); v.Value != "postgres://seckill:$(SECKILL_PG_PASSWORD)@postgres.data.svc.cluster.local:5432/seckill?sslmode=verify-full" {
		t.Errorf("SECKILL_PG_URL %q", v.Value)
	}
	if v, _ := env(bc, "SECKILL_ADMIN_HOSTS"); !strings.Contains(v.Value, "rel-seckill-admin:8082") || r.services["rel-seckill-admin"] == nil {
		t.Errorf("SECKILL_ADMIN_HOSTS %q", v.Value)
	}
	if r.pdbs["rel-seckill-backend"] == nil {
		t.Error("no backend PDB")
	}

	prod, err := os.ReadFile(filepath.Join("..", "Caddyfile.production"))
	if err != nil {
		t.Fatal(err)
	}
	cf := r.configMaps["rel-seckill-caddyfile"].Data["Caddyfile"]
	if !strings.HasPrefix(cf, strings.TrimRight(string(prod), "\n")) || !strings.Contains(cf, ":2020 {\n\tmetrics\n}") {
		t.Errorf("the Caddyfile is not deploy/Caddyfile.production plus the metrics site:\n%s", cf[max(0, len(cf)-300):])
	}
	if gw.Spec.Template.Annotations["checksum/caddyfile"] == "" {
		t.Error("no checksum of the Caddyfile: a changed one would not roll the gateways")
	}
	prom := r.configMaps["rel-seckill-prometheus"].Data["prometheus.yml"]
	var pc struct {
		ScrapeConfigs []struct {
			JobName string `json:"job_name"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(prom), &pc); err != nil || len(pc.ScrapeConfigs) != 2 {
		t.Errorf("prometheus.yml: %v, %d jobs\n%s", err, len(pc.ScrapeConfigs), prom)
	}
	dash := r.configMaps["rel-seckill-grafana-dashboard"]
	if dash == nil || dash.Labels["grafana_dashboard"] != "1" || !json.Valid([]byte(dash.Data["seckill.json"])) {
		t.Errorf("dashboard ConfigMap %v", dash != nil)
	}
}

// A release with the autoscaler off has the gateways' count fixed, a Caddyfile of the values'
// own is used as given, and no metrics site or ConfigMaps when they are turned off.
func TestValuesChangeTheRelease(t *testing.T) {
	own := "{\n\tadmin off\n}\n:8080 {\n\trespond \"ok\"\n}\n"
	r := template(t, map[string]any{
		"gateway": map[string]any{"replicas": 12, "autoscaling": map[string]any{"enabled": false},
			"caddyfile": own, "metricsPort": 0, "existingSecret": "gw-secrets"},
		"metrics": map[string]any{"prometheusConfig": false, "grafanaDashboard": false},
	})
	gw := r.deployments["rel-seckill-gateway"]
	if gw.Spec.Replicas == nil || *gw.Spec.Replicas != 12 {
		t.Errorf("replicas %v, want 12", gw.Spec.Replicas)
	}
	if len(r.hpas) != 0 || len(r.configMaps) != 1 {
		t.Errorf("hpas %v, config maps %v", keys(r.hpas), keys(r.configMaps))
	}
	if cf := r.configMaps["rel-seckill-caddyfile"].Data["Caddyfile"]; strings.TrimSpace(cf) != strings.TrimSpace(own) {
		t.Errorf("Caddyfile %q, want the values' own", cf)
	}
	if v, _ := env(gw.Spec.Template.Spec.Containers[0], "SECKILL_TOKEN_KEY"); v.ValueFrom.SecretKeyRef.Name != "gw-secrets" {
		t.Errorf("token key from %q", v.ValueFrom.SecretKeyRef.Name)
	}
}

// The strict decoding is a check: a misspelled field fails it.
func TestAMisspelledFieldFailsTheDecoding(t *testing.T) {
	bad := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replcas: 3\n"
	if _, err := decode(bad); err == nil || !strings.Contains(err.Error(), "replcas") {
		t.Fatalf("a misspelled field decoded: %v", err)
	}
	if _, err := decode("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n"); err == nil {
		t.Fatal("a Secret in the chart's output went unnoticed")
	}
}

// The chart's copies of deploy/'s files are the files themselves.
func TestTheChartCarriesDeploysFilesAsTheyAre(t *testing.T) {
	for copy, orig := range map[string]string{
		"seckill/files/Caddyfile.production":   "../Caddyfile.production",
		"seckill/files/grafana-dashboard.json": "../grafana/dashboards/seckill.json",
		"seckill/files/alerts.yml":             "../prometheus/alerts.yml",
	} {
		a, errA := os.ReadFile(copy)
		b, errB := os.ReadFile(orig)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: copy it again (cp %s %s)", copy, orig, orig, copy)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
