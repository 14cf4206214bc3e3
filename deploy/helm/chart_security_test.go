package helm

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The gateways believe X-Forwarded-For only from the proxies the values list, and in strict
// mode (the right-most untrusted address, not the left-most one a client writes); by default
// no range is trusted, in particular not the pod range.
func TestTheChartTrustsOnlyTheListedProxiesAndStrictly(t *testing.T) {
	r := template(t, nil)
	c := r.deployments["rel-seckill-gateway"].Spec.Template.Spec.Containers[0]
	if v, ok := env(c, "SECKILL_TRUSTED_PROXIES"); ok {
		t.Errorf("by default SECKILL_TRUSTED_PROXIES is %q: no range is trusted until the balancer's addresses are given", v.Value)
	}
	// The gateways' Caddyfile is the chart's files/Caddyfile.production (plus the metrics site),
	// whose global servers block internal/conformance parses as Caddy does: trusted_proxies
	// with trusted_proxies_strict.
	cf := r.configMaps["rel-seckill-caddyfile"].Data["Caddyfile"]
	shipped, err := os.ReadFile(filepath.Join(chartDir, "files", "Caddyfile.production"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cf, strings.TrimRight(string(shipped), "\n")) || !strings.Contains(cf, "trusted_proxies_strict") {
		t.Errorf("the gateways' Caddyfile is not the chart's files/Caddyfile.production with trusted_proxies_strict:\n%s", cf[:min(len(cf), 300)])
	}

	r = template(t, map[string]any{"gateway": map[string]any{"trustedProxies": []any{"203.0.113.7/32", "203.0.113.8"}}})
	c = r.deployments["rel-seckill-gateway"].Spec.Template.Spec.Containers[0]
	if v, _ := env(c, "SECKILL_TRUSTED_PROXIES"); v.Value != "203.0.113.7/32 203.0.113.8" {
		t.Errorf("SECKILL_TRUSTED_PROXIES %q, want the listed balancers", v.Value)
	}
}

// Every pod runs as a non-root user with the runtime's seccomp profile; every container with
// a read-only root file system, no privilege escalation and no capability, on ports above
// 1024 (so it needs none).
func TestEveryPodRunsAsNonRootWithoutCapabilities(t *testing.T) {
	r := template(t, nil)
	if len(r.deployments) != 2 {
		t.Fatalf("deployments %v", keys(r.deployments))
	}
	for name, d := range r.deployments {
		ps := d.Spec.Template.Spec.SecurityContext
		if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 {
			t.Errorf("%s: pod securityContext %+v, want runAsNonRoot and a non-zero runAsUser", name, ps)
		}
		if ps == nil || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: seccomp profile not RuntimeDefault", name)
		}
		for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
			sc := c.SecurityContext
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
				!reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
				t.Errorf("%s/%s: securityContext %+v, want no escalation, a read-only root and every capability dropped", name, c.Name, sc)
			}
			for _, p := range c.Ports {
				if p.ContainerPort <= 1024 {
					t.Errorf("%s/%s: port %d needs CAP_NET_BIND_SERVICE", name, c.Name, p.ContainerPort)
				}
			}
		}
	}
	// Caddy writes its autosaved config and storage: those paths are volumes, not the image.
	gw := r.deployments["rel-seckill-gateway"].Spec.Template.Spec
	mounted := map[string]bool{}
	for _, m := range gw.Containers[0].VolumeMounts {
		mounted[m.MountPath] = true
	}
	for _, p := range []string{"/config", "/data", "/tmp"} {
		if !mounted[p] {
			t.Errorf("the gateway's %s is not a volume: Caddy cannot write it on a read-only root", p)
		}
	}
}

// The images' last stage runs as a numeric, non-root user.
func TestTheImagesRunAsNonRoot(t *testing.T) {
	for _, f := range []string{"gateway.Dockerfile", "backend.Dockerfile"} {
		fh, err := os.Open(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		user := ""
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) >= 2 && strings.EqualFold(fields[0], "FROM") {
				user = "" // a new stage starts as root
			}
			if len(fields) >= 2 && strings.EqualFold(fields[0], "USER") {
				user = fields[1]
			}
		}
		fh.Close()
		uid, err := strconv.Atoi(strings.SplitN(user, ":", 2)[0])
		if err != nil || uid == 0 {
			t.Errorf("%s: the final stage's USER is %q, want a numeric non-root uid", f, user)
		}
	}
}

// The order listener (which believes X-User-ID) admits the release's gateways only; the admin
// listener admits the values' admin clients and Prometheus, never everyone; the gateways'
// metrics port is Prometheus's only.
func TestOnlyTheGatewaysReachTheOrderListener(t *testing.T) {
	r := template(t, nil)
	be, gwp := r.netpols["rel-seckill-backend"], r.netpols["rel-seckill-gateway"]
	if be == nil || gwp == nil {
		t.Fatalf("network policies %v, want one for the backend and one for the gateways", keys(r.netpols))
	}
	gwSel := r.deployments["rel-seckill-gateway"].Spec.Template.Labels
	if !reflect.DeepEqual(be.Spec.PodSelector.MatchLabels, r.deployments["rel-seckill-backend"].Spec.Selector.MatchLabels) ||
		!reflect.DeepEqual(be.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Fatalf("backend policy selects %v, types %v", be.Spec.PodSelector.MatchLabels, be.Spec.PolicyTypes)
	}
	peersOf := func(np *networkingv1.NetworkPolicy, port string) [][]networkingv1.NetworkPolicyPeer {
		var out [][]networkingv1.NetworkPolicyPeer
		for _, rule := range np.Spec.Ingress {
			if len(rule.Ports) == 0 {
				out = append(out, rule.From) // every port
				continue
			}
			for _, p := range rule.Ports {
				if p.Port != nil && p.Port.String() == port {
					out = append(out, rule.From)
				}
			}
		}
		return out
	}
	orders := peersOf(be, "orders")
	if len(orders) != 1 || len(orders[0]) != 1 || orders[0][0].NamespaceSelector != nil || orders[0][0].IPBlock != nil ||
		orders[0][0].PodSelector == nil || !subset(orders[0][0].PodSelector.MatchLabels, gwSel) ||
		len(orders[0][0].PodSelector.MatchLabels) < 3 {
		t.Errorf("the order listener admits %+v, want the release's gateway pods only", orders)
	}
	for _, from := range peersOf(be, "admin") {
		if len(from) == 0 {
			t.Error("the admin listener admits every source")
		}
		for _, p := range from {
			if p.IPBlock != nil || (p.PodSelector == nil || len(p.PodSelector.MatchLabels)+len(p.PodSelector.MatchExpressions) == 0) {
				t.Errorf("the admin listener admits %+v: every pod of a namespace or an address range", p)
			}
		}
	}
	if len(peersOf(be, "admin")) == 0 {
		t.Error("no one reaches the admin listener, not even Prometheus")
	}
	metrics := peersOf(gwp, "metrics")
	if len(metrics) != 1 || len(metrics[0]) == 0 {
		t.Errorf("the gateways' metrics port admits %+v, want Prometheus only", metrics)
	}
	if http := peersOf(gwp, "http"); len(http) != 1 {
		t.Errorf("the buyers' port rules %+v", http)
	}

	r = template(t, map[string]any{"networkPolicy": map[string]any{"enabled": false}})
	if len(r.netpols) != 0 {
		t.Errorf("networkPolicy.enabled=false renders %v", keys(r.netpols))
	}
}

// The buyers' Service carries the buyers' port only; the metrics site has a headless Service
// of its own, which the scrape config targets.
func TestTheMetricsPortIsNotOnTheBuyersService(t *testing.T) {
	r := template(t, nil)
	for _, p := range r.services["rel-seckill-gateway"].Spec.Ports {
		if p.Name != "http" {
			t.Errorf("the buyers' Service has port %s (%d)", p.Name, p.Port)
		}
	}
	m := r.services["rel-seckill-gateway-metrics"]
	if m == nil || m.Spec.ClusterIP != corev1.ClusterIPNone || len(m.Spec.Ports) != 1 || m.Spec.Ports[0].Port != 2020 {
		t.Fatalf("metrics Service %+v", m)
	}
	if prom := r.configMaps["rel-seckill-prometheus"].Data["prometheus.yml"]; !strings.Contains(prom, "rel-seckill-gateway-metrics;metrics") {
		t.Errorf("the scrape config does not target the metrics Service:\n%s", prom)
	}
}

// Postgres's certificate is verified (host name and CA), and a CA from a Secret is mounted and
// named in the URL.
func TestPostgresIsVerified(t *testing.T) {
	r := template(t, map[string]any{"postgres": map[string]any{"ca": map[string]any{"secretName": "pg-ca"}}})
	be := r.deployments["rel-seckill-backend"].Spec.Template.Spec
	v, _ := env(be.Containers[0], "SECKILL_PG_URL")
	if !strings.Contains(v.Value, "sslmode=verify-full") || !strings.HasSuffix(v.Value, "&sslrootcert=/etc/seckill/postgres-ca/ca.crt") {
		t.Errorf("SECKILL_PG_URL %q", v.Value)
	}
	var vol *corev1.Volume
	for i := range be.Volumes {
		if be.Volumes[i].Secret != nil && be.Volumes[i].Secret.SecretName == "pg-ca" {
			vol = &be.Volumes[i]
		}
	}
	mounted := false
	for _, m := range be.Containers[0].VolumeMounts {
		mounted = mounted || (vol != nil && m.Name == vol.Name && m.MountPath == "/etc/seckill/postgres-ca" && m.ReadOnly)
	}
	if vol == nil || !mounted {
		t.Errorf("the CA Secret is not mounted: volumes %+v", be.Volumes)
	}
}

// subset reports whether every label of sel is in labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
